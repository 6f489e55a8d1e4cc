/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process's published identity: OTEP 4719 process context (the OTEL_CTX
 * mapping: header, then a ProcessContext protobuf in the publisher's
 * memory) or Elastic v1 process storage. Both are read from another
 * process's memory and decoded with hard bounds.
 */
#ifndef OTELPROF_CONTEXT_PROCESS_CONTEXT_H
#define OTELPROF_CONTEXT_PROCESS_CONTEXT_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "process/process_memory.h"

#define PCTX_HEADER_SIZE      32
#define PCTX_VERSION	      2
#define PCTX_MAX_PAYLOAD      (64u * 1024)
#define PCTX_MAX_ATTRS	      64   /* resource attributes kept */
#define PCTX_MAX_KEYS	      256  /* attribute_key_map entries (u8 index) */
#define PCTX_MAX_STRING	      1024 /* bytes of one key or value */
#define PCTX_READ_ATTEMPTS    3
#define ELASTIC_STORAGE_BYTES 4096

struct pctx_attr {
	char *key;
	char *str; /* NULL: int value */
	int64_t i;
};

struct process_context {
	uint64_t published_at_ns; /* 0: nothing read */
	struct pctx_attr *attrs;  /* resource attributes */
	size_t nattrs;
	char **keys; /* threadlocal.attribute_key_map; NULL entries: unusable */
	size_t nkeys;
	unsigned skipped; /* malformed or oversized entries dropped */
	unsigned denied;  /* resource attributes in a namespace the
			     profiler owns (pctx_key_observer_owned) */
	/* Elastic v1: the agent's datagram socket as the process sees it
	 * (absolute, checked by apm_socket_path_ok), or NULL. */
	char *socket_path;
};

/*
 * Read the context at the OTEL_CTX mapping [start, end) of a process:
 * check signature and version, copy the payload, re-read the timestamp
 * and retry while a publisher is mid-update. If *published_at_ns equals
 * what the header says, nothing is decoded and -EALREADY is returned.
 * Returns 0 (out replaced), -EAGAIN (update in progress, try later),
 * -EINVAL (malformed), or a read error.
 */
int process_context_read(uint64_t start, uint64_t end, mem_read_fn rd,
			 void *rd_ctx, struct process_context *out);
/* Decode a ProcessContext payload (exposed for tests and fuzzing). */
int process_context_decode(const uint8_t *buf, size_t len,
			   struct process_context *out);
/* Elastic v1 process storage: the pointer variable at storage_addr ->
 * {u16 minor, then u32-length-prefixed service-name, service-environment,
 * socket-path}. Fills service.name / deployment.environment.name and
 * socket_path (a path that fails apm_socket_path_ok is skipped). */
int elastic_storage_read(uint64_t storage_addr, mem_read_fn rd, void *rd_ctx,
			 struct process_context *out);
int elastic_storage_decode(const uint8_t *buf, size_t len,
			   struct process_context *out);
void process_context_free(struct process_context *c);
/* container.*, process.*, host.*, thread.*, k8s.*, cloud.*, os.*,
 * device.*: what the profiler or the host side derives itself. A process's
 * published value for such a key is dropped (docs/context-publishing.md,
 * "Trust boundary"). */
bool pctx_key_observer_owned(const char *key);

#endif
