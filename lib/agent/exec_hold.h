/* SPDX-License-Identifier: Apache-2.0 */
/* Execs whose /proc reads wait a few milliseconds.
 *
 * On a host with an exec churn (health checks, cron, compilers) most
 * execs are commands that exit within milliseconds, never sampled; the
 * /proc reads at their exec (exe, stat, environ, cgroup, maps) were most
 * of the recorder's CPU there. An exec is held EXEC_HOLD_NS and dropped
 * if its process exits unsampled meanwhile; a sample of a held process
 * reads it at once, as before. Bounded: when full, an exec is read at
 * once. Touched under the agent's state lock only. */
#ifndef OTELPROF_AGENT_EXEC_HOLD_H
#define OTELPROF_AGENT_EXEC_HOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profiler_types.h"

#define EXEC_HOLD_NS  (5ull * 1000 * 1000)
#define EXEC_HOLD_MAX 256

struct held_exec {
	uint32_t pid;
	uint64_t start_ns; /* the process's start (pid reuse) */
	uint64_t due_ns;   /* CLOCK_BOOTTIME */
	char filename[OTELPROF_FILENAME_LEN];
};

struct exec_hold {
	uint32_t n;
	struct held_exec v[EXEC_HOLD_MAX];
};

/* Holds pid's exec (a later exec of the same pid replaces it). False when
 * the hold is full: read the exec at once. */
bool exec_hold_add(struct exec_hold *h, uint32_t pid, uint64_t start_ns,
		   uint64_t exec_ns, const char *filename, size_t len);
/* pid exited: true if its exec was held (and is dropped now). */
bool exec_hold_drop(struct exec_hold *h, uint32_t pid, uint64_t start_ns);
bool exec_hold_has(const struct exec_hold *h, uint32_t pid);
/* Moves one exec due at now_ns into *out; false when none is due. */
bool exec_hold_take_due(struct exec_hold *h, uint64_t now_ns,
			struct held_exec *out);
/* Milliseconds until the next exec is due (at least 1), or -1 if none. */
int exec_hold_next_ms(const struct exec_hold *h, uint64_t now_ns);

#endif
