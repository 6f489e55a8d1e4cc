/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Trace correlation per process: finds the context TLS variables in the
 * files a process maps, resolves where each thread's copy lives and tells
 * the BPF program (ctx_procs map); reads the process context (OTEP 4719
 * OTEL_CTX, or Elastic v1 storage) for the process's resource and for the
 * names of thread-context attributes, re-checking it for updates.
 */
#ifndef OTELPROF_CONTEXT_CONTEXT_TRACKER_H
#define OTELPROF_CONTEXT_CONTEXT_TRACKER_H

#include <stdbool.h>
#include <stdint.h>

#include "context/apm_channel.h"
#include "context/process_context.h"
#include "process/process_table.h"
#include "profiler_types.h"

struct file_cache;

/* Re-read a known OTEL_CTX header (cheap) this often for updates, and look
 * for a new OTEL_CTX mapping in an active process this often. */
#define CTX_PCTX_CHECK_NS (1000ull * 1000 * 1000)
/* Looking for an unannounced OTEL_CTX mapping (a memfd publication whose
 * memfd_create we did not see, e.g. from before we started): every 3 s,
 * then less often while nothing turns up, down to once a minute. */
#define CTX_PCTX_DISCOVER_NS	 (3000ull * 1000 * 1000)
#define CTX_PCTX_DISCOVER_MAX_NS (60000ull * 1000 * 1000)
/* New small anonymous mappings (a context on a kernel that cannot name
 * mappings) are read at most this many per scan, and one not yet signed
 * again this many times, 100 ms apart and doubling. */
#define CTX_PROBES_PER_SCAN 8
/* A tick walks every process at least this often (new processes are
 * scheduled for discovery then); sooner when something is due. */
#define CTX_SCAN_MAX_NS	  (1000ull * 1000 * 1000)
#define CTX_PROBE_RETRIES 5

struct process_ctx_state {
	struct otelprof_bpf_ctx_proc bpf; /* what the kernel has */
	bool in_kernel;
	struct process_context pctx;   /* OTEP 4719, or Elastic storage */
	uint64_t pctx_start, pctx_end; /* OTEL_CTX mapping read from */
	uint64_t hint_start, hint_end; /* context found by reading memory */
	uint64_t elastic_storage;      /* runtime address, 0 if none */
	uint64_t next_pctx_ns;
	uint64_t next_discover_ns;
	uint64_t discover_interval_ns; /* backs off while nothing is found */
	/* A new small anonymous mapping that may become a context (its
	 * header not written yet when first read): read again a few times. */
	uint64_t probe_start, probe_end, next_probe_ns;
	uint8_t probes_left;
	bool rescan_wanted; /* its maps show OTEL_CTX: rescan it */
	/* Elastic v1 with a socket-path: the agent's return channel. */
	struct apm_channel *apm;
};

struct context_counters {
	uint64_t tls_resolved; /* TLS locations handed to the kernel */
	uint64_t pctx_read, pctx_errors; /* process contexts read, refused */
	uint64_t pctx_probed; /* contexts found by reading anonymous memory */
	uint64_t pctx_denied; /* published attributes in owned namespaces */
	uint64_t map_errors;  /* kernel map updates that failed */
};

struct context_tracker {
	struct process_table *procs;
	struct file_cache *files; /* the mapped files' symbols */
	int ctx_procs_fd;	  /* BPF map; -1: userspace only (tests) */
	mem_read_fn read_mem;
	uint64_t last_tick_ns;
	/* The next tick that walks the processes: the earliest probe,
	 * refresh or discovery due, CTX_SCAN_MAX_NS at most (boot clock) */
	uint64_t next_scan_ns;
	uint32_t rescans_wanted; /* processes with rescan_wanted set */
	struct context_counters counters;
	uint32_t napm; /* processes with an apm channel */
	bool apm_off;  /* OTELPROF_F_NO_APM_AGENTS: never open one */
	struct apm_counters apm;
	char host_id[APM_HOST_ID_MAX + 1]; /* /etc/machine-id, or "" */
};

/* ctx_procs_fd < 0: no kernel map. */
void context_tracker_init(struct context_tracker *ct, struct process_table *t,
			  struct file_cache *files, int ctx_procs_fd);
/* p's mappings are new or changed (c: what changed, as the process table
 * reported it; NULL: treat everything as new): resolve its context TLS
 * location into the kernel, look for a published process context. Needs
 * the files the unwinder's sync resolved. */
void context_tracker_sync(struct context_tracker *ct, struct process *p,
			  const struct process_change *c);
/* p is about to be freed: drop its kernel entry and state. */
void context_tracker_forget(struct context_tracker *ct, struct process *p);
/* Free every process's context state (the kernel maps go with the
 * sampler). Before the process table is freed. */
void context_tracker_free(struct context_tracker *ct);
/* Retries and refreshes due at now_ns (boot clock); call often, it
 * does work at most every 100 ms. Caller holds the state lock. A process
 * whose maps show a context published since (a memfd publication
 * changes no executable mapping) is queued for a rescan. */
void context_tracker_tick(struct context_tracker *ct, uint64_t now_ns);
/* Send what the Elastic APM channels have queued (apm_channel.h); each
 * drain pass, after the samples. Caller holds the state lock. True: some
 * is still queued (the agent's socket queue, 10 datagrams by default, was
 * full): the drain thread comes back sooner. */
bool context_tracker_flush_apm(struct context_tracker *ct, uint64_t now_ns);
/* The next process the tick queued for a rescan, or NULL. */
struct process *context_tracker_take_rescan(struct context_tracker *ct);
/* The process's context (resource attributes, attribute key map), or
 * NULL. */
static inline const struct process_context *context_of(const struct process *p)
{
	return p->ctx && p->ctx->pctx.published_at_ns ? &p->ctx->pctx : NULL;
}

#endif
