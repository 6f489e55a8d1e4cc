/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The environment variables a user asked for (include_env_vars), read once
 * per process from /proc/PID/environ: bounded, and whatever a process put
 * there is treated as hostile (a huge or unterminated environ is refused,
 * a value too long or not printable UTF-8 is dropped; both counted).
 */
#ifndef OTELPROF_PROCESS_PROC_ENVIRON_H
#define OTELPROF_PROCESS_PROC_ENVIRON_H

#include <stddef.h>
#include <stdint.h>

#define ENV_MAX_NAMES	  16
#define ENV_MAX_NAME_LEN  127
#define ENV_MAX_VALUE_LEN 256
/* A larger environ is refused whole (Linux allows far more, but nothing a
 * resource attribute needs is there). */
#define ENV_MAX_BYTES	(64 * 1024)
#define ENV_ATTR_PREFIX "process.environment_variable."

/* The names asked for, with their resource attribute keys. */
struct env_names {
	uint32_t n;
	char name[ENV_MAX_NAMES][ENV_MAX_NAME_LEN + 1];
	char key[ENV_MAX_NAMES][sizeof(ENV_ATTR_PREFIX) + ENV_MAX_NAME_LEN];
};

/* The values one process has of them. */
struct proc_env {
	uint32_t n;
	struct {
		uint8_t name; /* index into env_names */
		char value[ENV_MAX_VALUE_LEN + 1];
	} v[ENV_MAX_NAMES];
};

/* Comma-separated names (NULL or "" = none). 0, or -EINVAL with *why. */
int env_names_parse(const char *list, struct env_names *out, const char **why);

/* What a read found wrong, for the counters. */
struct env_outcome {
	uint64_t refused; /* environ over ENV_MAX_BYTES, or not NUL-ended */
	uint64_t dropped; /* values too long, or not printable UTF-8 */
};

/* Pick the names' values out of an environ image (NUL-separated
 * NAME=VALUE entries; the first of a name counts, as for getenv). 0, or
 * -EINVAL for an image that does not end with a NUL (refused whole). */
int env_pick(const char *buf, size_t len, const struct env_names *names,
	     struct proc_env *out, struct env_outcome *o);

/* Read path (a /proc/PID/environ) and pick: NULL when the process has
 * none of the names, the file is unreadable or refused (counted in o);
 * else a malloc'ed proc_env. */
struct proc_env *proc_env_read(const char *path, const struct env_names *names,
			       struct env_outcome *o);

#endif
