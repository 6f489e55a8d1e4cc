// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Off-CPU time (opt-in: loaded and attached only when off_cpu_threshold
 * is above 0). One raw tracepoint, sched_switch, no kprobe:
 *
 *   prev, switched out: it is still `current`, so its kernel stack
 *     (bpf_get_stack) and user registers (task_user_regs) are at hand;
 *     with probability off_cpu_threshold its stack is walked by the same
 *     native walk as the CPU sampler's (native_walk.bpf.h, over the same
 *     tables), sent at once as OTELPROF_EVENT_OFFCPU_SAMPLE, and its
 *     switch-out time kept in offcpu_start by tid;
 *   next, switched in: if it has an entry there, the entry goes and an
 *     OTELPROF_EVENT_OFFCPU_END carries the switch-out time; userspace
 *     puts the duration on the stack it got first.
 *
 * Why walk at switch-out: the reference profiler walks when the task is
 * back (a kprobe on finish_task_switch, where it is current again). At
 * sched_switch the task coming in is not current: its user memory cannot
 * be read. So the stack is taken going out and the duration joined to it
 * in userspace; keeping ~2 KiB stacks in a kernel map until the task
 * returns would cost far more memory than the ring buffer does.
 *
 * Why a second object: tail calls need programs of one type, and the
 * sampler's walk programs are perf_event ones. This object compiles the
 * same walk into raw_tp programs and has its own scratch maps and
 * program array (bpf_loop kernels: one program; older ones: the walk
 * chained OTELPROF_WALK_CHUNK frames at a time, as the sampler does);
 * the unwind tables, ring buffer and counters are the sampler's, given
 * to it by name before load (lib/sample/offcpu_sampler.c). Runtime walks
 * (CPython, HotSpot) are perf_event programs and are not called from
 * here: off-CPU stacks are kernel and native frames (JIT code is stepped
 * by frame pointer).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "profiler_types.h"
#include "unwind_types.h"
#include "kernel_compat.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by userspace before load. */
const volatile u32 target_tgid = 0; /* 0: whole host */
const volatile u32 max_user_frames = OTELPROF_MAX_USER_FRAMES;
/* Probability that a switch-out is recorded, in 1/2^32; 0xffffffff:
 * every one. */
const volatile u32 offcpu_threshold = 0;

#include "sampler_shared.bpf.h"

static __always_inline u64 current_start_ns(void)
{
	return task_start_boottime(BPF_CORE_READ(
		(struct task_struct *)bpf_get_current_task(), group_leader));
}

#include "thread_context.bpf.h"
#include "native_walk.bpf.h"

/* Recorded switch-outs whose thread is not back yet: tid -> switch-out
 * time. Preallocated (raw tracepoint programs before 6.1 take no other
 * hash map); full: the switch-out is not recorded, counted. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OTELPROF_OFFCPU_PENDING);
	__type(key, u32);
	__type(value, u64);
} offcpu_start SEC(".maps");

/* Kernel frames above the scheduler's: this program, bpf_trace_run*. */
#define OFFCPU_KSTACK_SKIP 2

/* TASK_DEAD: the thread's last switch-out, it never comes back. */
#define OFFCPU_TASK_DEAD 0x80

/* next is switched in: close its record, if one is open. */
static __always_inline void offcpu_switch_in(struct task_struct *next, u64 now)
{
	u32 tid = BPF_CORE_READ(next, pid);
	struct otelprof_offcpu_end *r;
	u64 *start, s;

	start = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (!start)
		return;
	s = *start;
	bpf_map_delete_elem(&offcpu_start, &tid);
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count(OTELPROF_CNT_OFFCPU_LOST);
		return;
	}
	r->hdr.type = OTELPROF_EVENT_OFFCPU_END;
	r->hdr.pid = BPF_CORE_READ(next, tgid);
	r->hdr.tid = tid;
	r->hdr.cpu = bpf_get_smp_processor_id();
	r->hdr.ktime_boot_ns = now;
	r->hdr.proc_start_ns =
		task_start_boottime(BPF_CORE_READ(next, group_leader));
	r->start_ns = s;
	bpf_ringbuf_submit(r, ringbuf_wakeup_flag());
}

/* prev is switched out (and is current): is this switch-out recorded?
 * Then the sample's header and user registers (its kernel stack is taken
 * last, offcpu_end), and the pending entry. NULL: not recorded. */
static __always_inline struct otelprof_sample_event *
offcpu_begin(struct task_struct *prev, u64 now, u32 *map_count)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid = id >> 32, tid = (u32)id, zero = 0;
	struct otelprof_sample_event *e;
	struct mm_struct *mm;
	struct pt_regs *uregs;

	if (!tgid || (target_tgid && tgid != target_tgid))
		return NULL;
	if (offcpu_threshold != 0xffffffffu &&
	    bpf_get_prandom_u32() >= offcpu_threshold)
		return NULL;
	/* Kernel threads have no user stack and are not the application's
	 * waits; an exiting thread never comes back. */
	mm = BPF_CORE_READ(prev, mm);
	if (!mm || (task_state(prev) & OFFCPU_TASK_DEAD))
		return NULL;
	e = bpf_map_lookup_elem(&sample_scratch, &zero);
	if (!e)
		return NULL;
	if (bpf_map_update_elem(&offcpu_start, &tid, &now, BPF_ANY)) {
		count(OTELPROF_CNT_OFFCPU_PENDING_FULL);
		return NULL;
	}
	e->hdr.type = OTELPROF_EVENT_OFFCPU_SAMPLE;
	e->hdr.pid = tgid;
	e->hdr.tid = tid;
	e->hdr.cpu = bpf_get_smp_processor_id();
	e->hdr.ktime_boot_ns = now;
	e->hdr.proc_start_ns = current_start_ns();
	e->flags = 0;
	e->n_user = 0;
	e->n_interp = 0;
	e->interp_kind = OTELPROF_INTERP_NONE;
	e->n_noted = 0;
	e->noted_kind = 0;
	e->user_ip = e->user_sp = e->user_bp = 0;
#ifdef __TARGET_ARCH_arm64
	e->user_lr = 0;
#endif
	e->ctx.format = OTELPROF_CTX_NONE;
	e->ctx.attrs_size = 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->n_kernel = 0; /* taken last (offcpu_end) */
	*map_count = (u32)KREAD_INT(mm, map_count);
	/* In the kernel (it is scheduling): the registers saved at entry. */
	uregs = task_user_regs();
	if (uregs) {
		e->user_ip = USER_REGS_IP(uregs);
		e->user_sp = USER_REGS_SP(uregs);
		e->user_bp = USER_REGS_FP(uregs);
#ifdef __TARGET_ARCH_arm64
		e->user_lr = USER_REGS_LR(uregs);
#endif
	} else {
		count(OTELPROF_CNT_USTACK_ERR);
	}
	return e;
}

/* After the walk: the frames (or a stack copy), the thread's context,
 * out to the ring buffer; a switch-out userspace never got is not left
 * pending. */
static __always_inline int offcpu_end(void *ctx,
				      struct otelprof_sample_event *e,
				      struct unwinder_state *st)
{
	u32 tid = e->hdr.tid;

	unwind_finish(e, st);
	read_thread_ctx(e, e->hdr.pid);
	/* From the tracepoint down: skip this program's frame and the
	 * tracepoint's call into it (bpf_trace_run*), so the stack starts
	 * in the scheduler, as the thread left. A tail call runs in the
	 * frame of the program it replaced: the same frames to skip. */
	sample_kernel_stack(ctx, e, OFFCPU_KSTACK_SKIP & BPF_F_SKIP_FIELD_MASK);
	if (bpf_ringbuf_output(&events, e, sample_bytes(e),
			       (e->flags & OTELPROF_SAMPLE_F_STACK_COPY)
				       ? BPF_RB_FORCE_WAKEUP
				       : ringbuf_wakeup_flag())) {
		bpf_map_delete_elem(&offcpu_start, &tid);
		count(OTELPROF_CNT_OFFCPU_LOST);
	} else {
		count(OTELPROF_CNT_OFFCPU_RECORDED);
	}
	return 0;
}

/* sched_switch(bool preempt, struct task_struct *prev, struct task_struct
 * *next[, unsigned int prev_state]): the first three are the same on
 * every kernel from 5.10. Kernels with bpf_loop: the whole walk here. */
SEC("raw_tp/sched_switch")
int BPF_PROG(off_cpu_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	u64 now = bpf_ktime_get_boot_ns();
	struct otelprof_sample_event *e;
	struct unwinder_state *st;
	u32 map_count = 0;

	offcpu_switch_in(next, now);
	e = offcpu_begin(prev, now, &map_count);
	if (!e)
		return 0;
	st = unwind_prepare(e, map_count);
	if (st && !unwind_walk_ended(&st->w))
		unwind_walk_loop(OTELPROF_MAX_USER_FRAMES + 1, NULL);
	return offcpu_end(ctx, e, st);
}

/* Kernels without bpf_loop: the walk goes on in off_cpu_walk, chained
 * through this object's own walk_progs (raw_tp programs). */
static __always_inline int offcpu_continue(void *ctx,
					   struct otelprof_sample_event *e,
					   struct unwinder_state *st)
{
	walk_goto(ctx, OTELPROF_PROG_WALK);
	st->w.flags |= OTELPROF_SAMPLE_F_TRUNCATED;
	return offcpu_end(ctx, e, st);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(off_cpu_switch_chained, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	u64 now = bpf_ktime_get_boot_ns();
	struct otelprof_sample_event *e;
	struct unwinder_state *st;
	u32 map_count = 0;

	offcpu_switch_in(next, now);
	e = offcpu_begin(prev, now, &map_count);
	if (!e)
		return 0;
	st = unwind_prepare(e, map_count);
	if (!st)
		return offcpu_end(ctx, e, NULL);
	return offcpu_continue(ctx, e, st);
}

SEC("raw_tp/sched_switch")
int off_cpu_walk(void *ctx)
{
	struct otelprof_sample_event *e;
	struct unwinder_state *st;

	if (!walk_scratch(&e, &st))
		return 0;
	count(OTELPROF_CNT_WALK_CHAINED);
	if (!unwind_walk_ended(&st->w) &&
	    OTELPROF_BOUNDED(unwind_frame, OTELPROF_WALK_CHUNK, NULL) ==
		    OTELPROF_WALK_CHUNK)
		return offcpu_continue(ctx, e, st);
	return offcpu_end(ctx, e, st);
}
