// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * CPython's walk (OTELPROF_RT_MODE_AFTER): after the native frames, copy
 * the sampled thread's interpreter frames into the sample, so userspace
 * can put them where the evaluation loop ran, then end the sample
 * (OTELPROF_PROG_FINISH). Loaded when the first CPython process is found.
 * Every read is of process memory and may fail: the walk then stops,
 * keeping what it has (counted). Loops are bounded: bpf_loop where the
 * kernel has it (cpython_walk), a plain bounded loop for older kernels
 * (cpython_walk_bounded); userspace loads one of the two.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "profiler_types.h"
#include "kernel_compat.bpf.h"
#include "sampler_shared.bpf.h"
#include "runtime_after.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Per process: where its interpreter keeps its state (userspace fills). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, u32);
	__type(value, struct otelprof_interp_proc);
} interp_procs SEC(".maps");

/* Threads of one interpreter searched for the sampled one. */
#define INTERP_MAX_THREADS 32
/* Bytes of a frame read at once: every field the walk needs lies in
 * the first 112 (3.9's f_lasti is the farthest). */
#define INTERP_FRAME_READ 128

/* Walk state in a per-CPU map, not on the stack: the verifier then sees
 * the loop callback converge once (as for the native walker). */
struct interp_scratch {
	struct otelprof_interp_proc ip;
	u64 frame;
	u32 n, got;
	u8 buf[INTERP_FRAME_READ + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct interp_scratch);
} interp_scratch SEC(".maps");

static __always_inline u64 interp_field(struct interp_scratch *s, u16 off)
{
	u64 v = 0;

	/* the mask keeps the verifier's bounds; offsets are < 128 */
	__builtin_memcpy(&v, &s->buf[off & (INTERP_FRAME_READ - 1)], 8);
	return v;
}

static __always_inline u64 read_user_u64(u64 addr)
{
	u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/* The PyThreadState of the current thread, or 0. */
static __always_inline u64
cpython_thread_state(const struct otelprof_interp_proc *ip)
{
	u64 tp = thread_pointer(), interp, ts;

	if (!tp)
		return 0;
#if defined(__TARGET_ARCH_arm64)
	/* TLS variant I: glibc's struct pthread ends at the thread pointer */
	tp -= ip->thread_self_below_tp;
#endif
	interp = read_user_u64(ip->runtime + ip->runtime_interp_head);
	if (!interp)
		return 0;
	ts = read_user_u64(interp + ip->interp_threads_head);
	for (int k = 0; k < INTERP_MAX_THREADS && ts; k++) {
		if (read_user_u64(ts + ip->tstate_thread_id) == tp)
			return ts;
		ts = read_user_u64(ts + ip->tstate_next);
	}
	return 0;
}

/* One interpreter frame per call: copy {code, instruction}, step to the
 * previous frame. */
static __always_inline long interp_frame_step(u32 k, void *data)
{
	u32 zero = 0;
	struct otelprof_sample_event *e =
		bpf_map_lookup_elem(&sample_scratch, &zero);
	struct interp_scratch *s = bpf_map_lookup_elem(&interp_scratch, &zero);
	u64 code, instr, last = 0;
	u8 owner = 0;
	u32 n;

	if (!e || !s || !s->frame)
		return 1;
	if (bpf_probe_read_user(s->buf, INTERP_FRAME_READ,
				(const void *)s->frame)) {
		count(OTELPROF_CNT_INTERP_ERR);
		return 1;
	}
	code = interp_field(s, s->ip.frame_code);
	instr = interp_field(s, s->ip.frame_instr);
	if (s->ip.frame_owner != OTELPROF_OFF_NONE)
		owner = s->buf[s->ip.frame_owner & (INTERP_FRAME_READ - 1)];
	s->frame = interp_field(s, s->ip.frame_previous);
	n = s->n;
	if (n > OTELPROF_USTACK_WORDS - 2)
		return 1;
	if (s->ip.frames == OTELPROF_CPY_OWNER && owner == 3) {
		/* The evaluation loop's own shim frame: the frame before
		 * it was the first that call ran. */
		if (s->got)
			e->words[(n - 2) & (OTELPROF_USTACK_WORDS - 1)] |=
				OTELPROF_INTERP_F_LAST;
		return 0;
	}
	if (s->ip.frames == OTELPROF_CPY_FRAME_OBJECTS ||
	    (s->ip.frames == OTELPROF_CPY_IS_ENTRY && owner))
		last = OTELPROF_INTERP_F_LAST;
	if (s->ip.frames == OTELPROF_CPY_FRAME_OBJECTS)
		instr &= 0xffffffff; /* f_lasti is an int */
	e->words[n & (OTELPROF_USTACK_WORDS - 1)] =
		(code & ~OTELPROF_INTERP_F_LAST) | last;
	e->words[(n + 1) & (OTELPROF_USTACK_WORDS - 1)] = instr;
	s->n = n + 2;
	s->got++;
	return 0;
}

OTELPROF_BOUNDED_LOOP(interp_walk, interp_frame_step)

/* have_loop: the program may use bpf_loop (5.17). */
static __always_inline void walk_interp(struct otelprof_sample_event *e,
					u32 tgid, const bool have_loop)
{
	const struct otelprof_interp_proc *ip =
		bpf_map_lookup_elem(&interp_procs, &tgid);
	u32 zero = 0;
	struct interp_scratch *s;
	u64 ts, frame;

	if (!ip || ip->kind != OTELPROF_INTERP_CPYTHON ||
	    e->n_user > OTELPROF_USTACK_WORDS - 2)
		return; /* frames are added while they fit */
	s = bpf_map_lookup_elem(&interp_scratch, &zero);
	if (!s)
		return;
	s->ip = *ip;
	ts = cpython_thread_state(&s->ip);
	if (!ts)
		return;
	frame = read_user_u64(ts + s->ip.tstate_frame);
	if (frame && s->ip.cframe_current_frame != OTELPROF_OFF_NONE)
		frame = read_user_u64(frame + s->ip.cframe_current_frame);
	s->frame = frame;
	s->n = e->n_user;
	s->got = 0;
	if (have_loop)
		interp_walk_loop(OTELPROF_MAX_INTERP_FRAMES, NULL);
	else
		OTELPROF_BOUNDED(interp_frame_step, OTELPROF_MAX_INTERP_FRAMES,
				 NULL);
	after_frames_done(e, s->n, s->got, OTELPROF_INTERP_CPYTHON);
}

OTELPROF_AFTER_RUNTIME_PROGRAMS(cpython, walk_interp)
