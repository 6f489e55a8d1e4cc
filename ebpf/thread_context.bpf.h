/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Trace correlation at sample time: read the sampled thread's context
 * record (OTEP 4947 otel_thread_ctx_v1, or Elastic v1) through the TLS
 * location userspace resolved for its process. Included once, by
 * profiler.bpf.c, after its maps and count().
 */
#ifndef OTELPROF_THREAD_CONTEXT_BPF_H
#define OTELPROF_THREAD_CONTEXT_BPF_H

/* Per process: its context TLS locations. Allocated on use; what stays
 * is a 16-byte bucket per entry (kernels before 6.1 preallocate every
 * entry: 1 MiB). Only processes that publish context have an entry; a
 * full map is counted (otelprof_stats.ctx_process_errors). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, u32);
	__type(value, struct otelprof_bpf_ctx_proc);
} ctx_procs SEC(".maps");

#include "tls_var.bpf.h"

struct otel_ctx_header {
	u8 trace_id[16];
	u8 span_id[8];
	u8 valid;
	u8 trace_flags;
	u16 attrs_data_size;
};

/* Fills e->ctx; attributes go to words right after the n_user words. */
static __always_inline void read_thread_ctx(struct otelprof_sample_event *e,
					    u32 tgid)
{
	struct otelprof_bpf_ctx_proc *cp =
		bpf_map_lookup_elem(&ctx_procs, &tgid);
	u8 rec[OTELPROF_ELASTIC_RECORD_SIZE];
	u64 tp, addr, ptr, off;
	u32 n;

	e->ctx.format = OTELPROF_CTX_NONE;
	e->ctx.attrs_size = 0;
	if (!cp)
		return;
	tp = thread_pointer();
	if (!tp)
		return;
	for (int i = 0; i < OTELPROF_CTX_LOCS; i++) {
		const struct otelprof_tls_loc *loc = &cp->loc[i];

		addr = tls_var_addr(loc, tp);
		if (!addr)
			continue;
		if (bpf_probe_read_user(&ptr, 8, (void *)addr)) {
			count(OTELPROF_CNT_CTX_ERR);
			continue;
		}
		if (!ptr)
			continue; /* no context on this thread now */
		if (loc->format == OTELPROF_CTX_OTEL_V1) {
			struct otel_ctx_header h;

			if (bpf_probe_read_user(&h, sizeof(h), (void *)ptr)) {
				count(OTELPROF_CNT_CTX_ERR);
				continue;
			}
			if (h.valid != 1)
				continue;
			__builtin_memcpy(e->ctx.trace_id, h.trace_id, 16);
			__builtin_memcpy(e->ctx.span_id, h.span_id, 8);
			__builtin_memset(e->ctx.local_root_id, 0, 8);
			e->ctx.format = OTELPROF_CTX_OTEL_V1;
			n = h.attrs_data_size;
			if (n > OTELPROF_CTX_ATTRS_MAX)
				n = OTELPROF_CTX_ATTRS_MAX;
			off = otelprof_sample_attrs_off(e->n_user);
			if (off > OTELPROF_STACK_COPY_BYTES)
				off = OTELPROF_STACK_COPY_BYTES;
			if (n &&
			    !bpf_probe_read_user(
				    (u8 *)e->words + off, n,
				    (void *)(ptr + OTELPROF_CTX_HEADER_SIZE)))
				e->ctx.attrs_size = n;
		} else if (loc->format == OTELPROF_CTX_ELASTIC_V1) {
			if (bpf_probe_read_user(rec, sizeof(rec),
						(void *)ptr)) {
				count(OTELPROF_CNT_CTX_ERR);
				continue;
			}
			if (rec[2] != 1 || !rec[3])
				continue; /* not valid, or no trace */
			__builtin_memcpy(e->ctx.trace_id, rec + 5, 16);
			__builtin_memcpy(e->ctx.span_id, rec + 21, 8);
			__builtin_memcpy(e->ctx.local_root_id, rec + 29, 8);
			e->ctx.format = OTELPROF_CTX_ELASTIC_V1;
		} else {
			continue;
		}
		count(OTELPROF_CNT_CTX_READ);
		return;
	}
}

#endif
