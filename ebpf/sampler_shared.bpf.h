/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * What the sampler (profiler.bpf.c) and each runtime's program
 * (ebpf/runtimes/NAME/NAME.bpf.c) share: the sample being built, the walk
 * in progress, the counters, the program array they tail-call through and
 * the per-process runtime entries. Each object declares these maps; a
 * runtime's object, loaded later, is given the sampler's maps of the same
 * names before it loads (lib/sample/bpf_sampler.c), so one sample flows
 * through programs of several objects:
 *
 *   on_cpu_sample: header, kernel stack, native walk
 *     -> a frame in a runtime's code (OTELPROF_RT_MODE_STEP):
 *        tail call walk_progs[OTELPROF_PROG_RUNTIME + id], which writes and
 *        steps that runtime's frames, then walk_progs[OTELPROF_PROG_RESUME]
 *        (the native walk again)
 *     -> walk ended: the frames, or a stack copy (unwind_finish)
 *     -> a process whose runtime keeps its own chain (OTELPROF_RT_MODE_AFTER):
 *        tail call its program, which appends its frames, then
 *        walk_progs[OTELPROF_PROG_FINISH]
 *     -> runtime frames noted, thread context, kernel frames, ring buffer
 *        (sample_output)
 *
 * The walk's own state is in walk_state.bpf.h. A runtime's program reads
 * none of the native walk's tables.
 */
#ifndef OTELPROF_SAMPLER_SHARED_BPF_H
#define OTELPROF_SAMPLER_SHARED_BPF_H

#include "profiler_types.h"
#include "unwind_types.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* resized by userspace before load */
} events SEC(".maps");

/* A sample is ~2 KiB: too big for the 512-byte BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct otelprof_sample_event);
} sample_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OTELPROF_CNT_MAX);
	__type(key, u32);
	__type(value, u64);
} counters SEC(".maps");

/* Per process of a runtime walked in the kernel: which, and how. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, u32);
	__type(value, struct otelprof_runtime_proc);
} runtime_procs SEC(".maps");

/* The programs a sample's walk goes on in (enum otelprof_prog_slot). */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, OTELPROF_PROG_SLOTS);
	__type(key, u32);
	__type(value, u32);
} walk_progs SEC(".maps");

static __always_inline void count(u32 which)
{
	u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += 1;
}

/*
 * Frames a runtime's step notes during the walk ({pointer, pc or bci}
 * pairs, innermost first), for userspace to name. They wait in the
 * sample's last user words (OTELPROF_NOTED_WORDS, counted in n_noted,
 * which each sample's start zeroes) and follow the native frames once the
 * walk has ended (runtime_frames_append). word0 carries the frame's index
 * in the walk (OTELPROF_JVM_INDEX_SHIFT) and the runtime's pointer.
 */
static __always_inline void runtime_note(struct otelprof_sample_event *e,
					 u32 kind, u64 word0, u64 word1)
{
	u32 n = e->n_noted, at;

	if (n >= OTELPROF_MAX_INTERP_FRAMES)
		return;
	at = OTELPROF_NOTED_WORDS +
	     ((2 * n) & (2 * OTELPROF_MAX_INTERP_FRAMES - 1));
	e->noted_kind = kind;
	e->words[at] = word0;
	e->words[at + 1] = word1;
	e->n_noted = n + 1;
}

/* Did the walk of sample e note runtime frames? */
static __always_inline bool runtime_noted(const struct otelprof_sample_event *e)
{
	return e->n_noted;
}

/* Go on in the program at slot; returns only if the tail call failed
 * (counted: the caller ends the sample with what it has). */
static __always_inline void walk_goto(void *ctx, u32 slot)
{
	bpf_tail_call(ctx, &walk_progs, slot);
	count(OTELPROF_CNT_TAIL_CALL_ERR);
}

/*
 * Waking the reader costs an irq_work per record, more than the rest of a
 * sample: wake it only once a batch is waiting. The drain thread also
 * polls on a short timeout, so a quiet host's samples still flow.
 */
#define WAKEUP_BYTES (64 * 1024)

static __always_inline u64 ringbuf_wakeup_flag(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= WAKEUP_BYTES
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

/* After the walk: the runtime frames it noted go after the native ones
 * (no overlap: the native frames end before OTELPROF_NOTED_WORDS). */
static __always_inline void
runtime_frames_append(struct otelprof_sample_event *e)
{
	u32 n = e->n_noted, at = e->n_user;

	e->n_noted = 0;
	if (!n || (e->flags & OTELPROF_SAMPLE_F_STACK_COPY) || e->n_interp)
		return;
	if (n > OTELPROF_MAX_INTERP_FRAMES || at > OTELPROF_MAX_USER_FRAMES)
		return;
	if (bpf_probe_read_kernel(&e->words[at], (u64)n * 16,
				  &e->words[OTELPROF_NOTED_WORDS]))
		return;
	e->n_user = at + 2 * n;
	e->n_interp = n;
	e->interp_kind = e->noted_kind;
	count(OTELPROF_CNT_INTERP_SAMPLES);
}

/*
 * The kernel frames, last: after the user words and the attributes, so
 * that the record carries only the ones there are. Read from the sampled
 * registers (perf_event) or the tracepoint's own frame (flags: frames to
 * skip), which do not change during the sample's programs.
 */
static __always_inline void
sample_kernel_stack(void *ctx, struct otelprof_sample_event *e, u64 flags)
{
	u64 off = otelprof_sample_kstack_off(e->n_user, e->ctx.attrs_size);
	long n;

	if (off > OTELPROF_KSTACK_OFF_MAX)
		off = OTELPROF_KSTACK_OFF_MAX;
	n = bpf_get_stack(ctx, (u8 *)e->words + off,
			  OTELPROF_MAX_KERNEL_FRAMES * sizeof(u64), flags);
	if (n < 0) {
		count(OTELPROF_CNT_KSTACK_ERR);
		n = 0;
	}
	e->n_kernel = n / sizeof(u64);
}

/* The record's bytes as sent: its used prefix. */
static __always_inline u64 sample_bytes(const struct otelprof_sample_event *e)
{
	u64 size =
		otelprof_sample_size(e->n_user, e->ctx.attrs_size, e->n_kernel);

	return size > sizeof(*e) ? sizeof(*e) : size;
}

/* Out to the ring buffer, with its kernel frames. The runtime frames the
 * walk noted and the thread context are already in it. */
static __always_inline void sample_emit(void *ctx,
					struct otelprof_sample_event *e)
{
	/* Taken in user mode: no kernel frames. The kernel's callchain code
	 * would find none either (user_mode(regs)), after setting up its
	 * per-CPU buffer for nothing: 2.5 of a 20 us sample on a slow host
	 * (docs/performance.md, "Rows searched by page"). Only perf_event
	 * programs come here (the off-CPU one takes its stack itself). */
	if (PERF_CTX_USER_MODE(ctx))
		e->n_kernel = 0;
	else
		sample_kernel_stack(ctx, e, 0);
	/* A stack copy means a process userspace must load now: wake it. */
	if (bpf_ringbuf_output(&events, e, sample_bytes(e),
			       (e->flags & OTELPROF_SAMPLE_F_STACK_COPY)
				       ? BPF_RB_FORCE_WAKEUP
				       : ringbuf_wakeup_flag()))
		count(OTELPROF_CNT_LOST);
	else
		count(OTELPROF_CNT_SAMPLES);
}

#endif
