// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * CPU sampler: a perf_event program on PERF_COUNT_SW_CPU_CLOCK on every CPU
 * takes the kernel and user stack of whatever runs there and sends it to
 * userspace through a ring buffer. Raw tracepoints tell userspace about exec
 * and exit so its process table stays current (no kprobes on our kernels).
 * Nothing runs per syscall or per context switch: new code shows up in
 * the samples themselves (a pc in no known mapping, or mm->map_count moved
 * since userspace looked), reported at most once per process per gap.
 * Runtimes' frames (CPython, HotSpot, ...) are walked by programs of their
 * own, loaded only where that runtime runs: the walk hands over to them
 * by tail call (sampler_shared.bpf.h draws the flow).
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
const volatile u8 include_idle = 0;
const volatile u32 max_user_frames = OTELPROF_MAX_USER_FRAMES;

#include "sampler_shared.bpf.h"

/* The current process's identity beside its pid (see profiler_types.h). */
static __always_inline u64 current_start_ns(void)
{
	return task_start_boottime(BPF_CORE_READ(
		(struct task_struct *)bpf_get_current_task(), group_leader));
}

#include "thread_context.bpf.h"

/*
 * Code without CFI in a process whose runtime steps its own frames
 * (OTELPROF_RT_MODE_STEP): stop the native walk before the frame, for
 * that runtime's program (on_cpu_sample). Once per frame: a program that
 * finds the frame not its own declines it and the walk steps it itself.
 */
static __always_inline int runtime_handoff(void *ctx, u32 *runtime,
					   u32 *declined, bool file)
{
	const struct otelprof_sample_event *e = ctx;
	u32 tgid = e->hdr.pid;
	const struct otelprof_runtime_proc *rp;

	if (*declined) {
		*declined = 0;
		return 0;
	}
	rp = bpf_map_lookup_elem(&runtime_procs, &tgid);
	/* step runtimes, and after ones whose JIT code has no CFI (not for
	 * a file's code) */
	if (!rp ||
	    ((rp->mode & ~OTELPROF_RT_FLAGS) != OTELPROF_RT_MODE_STEP &&
	     (file || !(rp->mode & OTELPROF_RT_F_JIT_STEP))) ||
	    (file && !(rp->mode & OTELPROF_RT_F_FILE_CODE)) || !rp->runtime ||
	    rp->runtime >= OTELPROF_RT_MAX)
		return 0;
	*runtime = rp->runtime;
	return 1;
}
#define UNWIND_RUNTIME_HANDOFF(ctx, w)                                         \
	runtime_handoff((ctx), &(w)->runtime, &(w)->declined, false)
/* A frame of a file whose table is still being built: by its frame
 * pointer, in a process whose runtime asked. */
static __always_inline int runtime_pending_fp(void *ctx)
{
	const struct otelprof_sample_event *e = ctx;
	u32 tgid = e->hdr.pid;
	const struct otelprof_runtime_proc *rp =
		bpf_map_lookup_elem(&runtime_procs, &tgid);

	return rp && (rp->mode & OTELPROF_RT_F_PENDING_FP);
}
#define UNWIND_PENDING_FP(ctx, w) runtime_pending_fp(ctx)
/* A file's code without CFI rows: only to a runtime that asked. */
#define UNWIND_RUNTIME_HANDOFF_FILE(ctx, w)                                    \
	runtime_handoff((ctx), &(w)->runtime, &(w)->declined, true)
#include "native_walk.bpf.h"

/* The part of a sample before the user stack walk: header, comm, user
 * registers (the kernel stack is taken last, sample_emit). Returns the event
 * (NULL: drop the sample) and the process's mapping count in *map_count. */
static __always_inline struct otelprof_sample_event *
sample_begin(struct bpf_perf_event_data *ctx, u32 *map_count)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid = id >> 32, tid = (u32)id, zero = 0;
	struct otelprof_sample_event *e;
	struct task_struct *task;
	struct mm_struct *mm;
	struct pt_regs *uregs;

	if (tgid == 0 && !include_idle) {
		count(OTELPROF_CNT_IDLE);
		return NULL;
	}
	if (target_tgid && tgid != target_tgid)
		return NULL;

	e = bpf_map_lookup_elem(&sample_scratch, &zero);
	if (!e)
		return NULL;

	e->hdr.type = OTELPROF_EVENT_SAMPLE;
	e->hdr.pid = tgid;
	e->hdr.tid = tid;
	e->hdr.cpu = bpf_get_smp_processor_id();
	e->hdr.ktime_boot_ns = bpf_ktime_get_boot_ns();
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

	e->n_kernel = 0; /* taken last (sample_emit) */

	task = (struct task_struct *)bpf_get_current_task();
	mm = BPF_CORE_READ(task, mm);
	if (!mm) {
		/* Kernel thread: nothing to unwind in user space. */
		e->flags |= OTELPROF_SAMPLE_F_KTHREAD;
		return e;
	}
	*map_count = (u32)KREAD_INT(mm, map_count);
	/* Interrupted in user mode: the perf regs are the user's; in the
	 * kernel: the registers saved at entry. */
	if (PERF_CTX_USER_MODE(ctx)) {
		e->user_ip = PERF_CTX_IP(ctx);
		e->user_sp = PERF_CTX_SP(ctx);
		e->user_bp = PERF_CTX_FP(ctx);
#ifdef __TARGET_ARCH_arm64
		e->user_lr = PERF_CTX_LR(ctx);
#endif
	} else {
		uregs = task_user_regs();
		if (uregs) {
			e->user_ip = USER_REGS_IP(uregs);
			e->user_sp = USER_REGS_SP(uregs);
			e->user_bp = USER_REGS_FP(uregs);
#ifdef __TARGET_ARCH_arm64
			e->user_lr = USER_REGS_LR(uregs);
#endif
		} else {
			/* No user registers: no user frames at all. (Zeroed
			 * ones are not counted: io_uring and vhost workers
			 * have an mm but never ran user code.) */
			count(OTELPROF_CNT_USTACK_ERR);
		}
	}
	return e;
}

/* The last stage of every sample: the runtime frames noted, the thread's
 * context, the kernel stack, out to the ring buffer. */
static __always_inline int sample_output(void *ctx,
					 struct otelprof_sample_event *e)
{
	/* The runtime frames first: the attributes go after all user words. */
	if (!(e->flags & OTELPROF_SAMPLE_F_KTHREAD)) {
		runtime_frames_append(e);
		read_thread_ctx(e, e->hdr.pid);
	}
	sample_emit(ctx, e);
	return 0;
}

/* After the walk: the frames (or a stack copy); a runtime that keeps its
 * own frame chain appends it in its program, which ends the sample. */
static __always_inline int sample_end(void *ctx,
				      struct otelprof_sample_event *e,
				      struct unwinder_state *st)
{
	if (!(e->flags & OTELPROF_SAMPLE_F_KTHREAD)) {
		u32 tgid = e->hdr.pid;
		const struct otelprof_runtime_proc *rp;

		unwind_finish(e, st);
		rp = bpf_map_lookup_elem(&runtime_procs, &tgid);
		if (rp &&
		    (rp->mode & ~OTELPROF_RT_FLAGS) == OTELPROF_RT_MODE_AFTER &&
		    rp->runtime < OTELPROF_RT_MAX && e->user_ip)
			walk_goto(ctx, OTELPROF_PROG_RUNTIME + rp->runtime);
	}
	return sample_output(ctx, e);
}

/* Hand the walk to the runtime that asked for the frame it stopped at.
 * Returns only if the tail call failed (the chain's 33 tail calls are
 * spent, counted): the walk ends there, cut. */
static __always_inline void walk_handoff(void *ctx, struct unwinder_state *st)
{
	u32 rt = st->w.runtime;

	st->w.runtime = 0;
	count(OTELPROF_CNT_RUNTIME_HANDOFFS);
	if (rt < OTELPROF_RT_MAX)
		walk_goto(ctx, OTELPROF_PROG_RUNTIME + rt);
	st->w.flags |= OTELPROF_SAMPLE_F_TRUNCATED;
}

/*
 * The sample, and the walk again after a runtime's frames (kernels with
 * bpf_loop, 5.17+: the whole walk in one loop, left only for a runtime's
 * frames): the runtime's program comes back here through
 * OTELPROF_PROG_RESUME with st->resume set. One program, and one path
 * into the walk, so that the verifier checks the walk once.
 */
SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	u32 map_count = 0, zero = 0;
	struct unwinder_state *st = bpf_map_lookup_elem(&unwind_scratch, &zero);
	struct otelprof_sample_event *e;

	if (st && st->resume) {
		st->resume = 0;
		e = bpf_map_lookup_elem(&sample_scratch, &zero);
		if (!e)
			return 0;
	} else {
		e = sample_begin(ctx, &map_count);
		if (!e)
			return 0;
		if (e->flags & OTELPROF_SAMPLE_F_KTHREAD)
			return sample_end(ctx, e, NULL);
		st = unwind_prepare(e, map_count);
		if (!st)
			return sample_end(ctx, e, NULL);
	}
	if (!unwind_walk_ended(&st->w)) {
		unwind_walk_loop(OTELPROF_MAX_USER_FRAMES + 1, NULL);
		if (st->w.runtime)
			walk_handoff(ctx, st);
	}
	return sample_end(ctx, e, st);
}

/* The end of a sample whose runtime appended its frames
 * (OTELPROF_PROG_FINISH). */
SEC("perf_event")
int on_cpu_sample_finish(struct bpf_perf_event_data *ctx)
{
	u32 zero = 0;
	struct otelprof_sample_event *e =
		bpf_map_lookup_elem(&sample_scratch, &zero);

	if (!e)
		return 0;
	return sample_output(ctx, e);
}

/*
 * Kernels without bpf_loop: the walk runs OTELPROF_WALK_CHUNK frames per
 * program and continues by tail call into the same program (the state is
 * in unwind_scratch), which also resumes it after a runtime's frames; a
 * chain has at most OTELPROF_WALK_TAIL_CALLS, handoffs included.
 */
static __always_inline int walk_continue(void *ctx,
					 struct otelprof_sample_event *e,
					 struct unwinder_state *st)
{
	walk_goto(ctx, OTELPROF_PROG_WALK);
	/* Out of tail calls (or none installed): what we have is cut. */
	st->w.flags |= OTELPROF_SAMPLE_F_TRUNCATED;
	return sample_end(ctx, e, st);
}

SEC("perf_event")
int on_cpu_sample_chained(struct bpf_perf_event_data *ctx)
{
	u32 map_count = 0;
	struct otelprof_sample_event *e = sample_begin(ctx, &map_count);
	struct unwinder_state *st;

	if (!e)
		return 0;
	if (e->flags & OTELPROF_SAMPLE_F_KTHREAD)
		return sample_end(ctx, e, NULL);
	st = unwind_prepare(e, map_count);
	if (!st)
		return sample_end(ctx, e, NULL);
	return walk_continue(ctx, e, st);
}

SEC("perf_event")
int on_cpu_sample_walk(struct bpf_perf_event_data *ctx)
{
	struct otelprof_sample_event *e;
	struct unwinder_state *st;

	if (!walk_scratch(&e, &st))
		return 0;
	st->resume = 0; /* entered as OTELPROF_PROG_RESUME, maybe */
	count(OTELPROF_CNT_WALK_CHAINED);
	if (!unwind_walk_ended(&st->w) &&
	    OTELPROF_BOUNDED(unwind_frame, OTELPROF_WALK_CHUNK, NULL) ==
		    OTELPROF_WALK_CHUNK)
		return walk_continue(ctx, e, st);
	if (st->w.runtime)
		walk_handoff(ctx, st);
	return sample_end(ctx, e, st);
}

/* sched_process_exec(struct task_struct *p, pid_t old_pid, struct linux_binprm
 * *bprm) */
SEC("raw_tp/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	u32 tgid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);

	return emit_task_event(
		OTELPROF_EVENT_EXEC, tgid, tid,
		task_start_boottime(BPF_CORE_READ(p, group_leader)),
		BPF_CORE_READ(bprm, filename), 0, 0);
}

/*
 * sched_process_fork(struct task_struct *parent, struct task_struct
 * *child): a new process starts as a copy of its parent, so userspace can
 * know its mappings (and the kernel unwind them) from its first sample,
 * without reading /proc, even if it is gone before that sample is read.
 * New threads are skipped.
 */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	u32 tgid = BPF_CORE_READ(child, tgid), tid = BPF_CORE_READ(child, pid);

	if (tgid != tid)
		return 0;
	return emit_task_event(OTELPROF_EVENT_FORK, tgid, tid,
			       task_start_boottime(child), NULL,
			       BPF_CORE_READ(parent, tgid), 0);
}

/* sched_process_exit(struct task_struct *p): once per exiting thread. */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	u32 tgid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);

	if (tgid != tid)
		return 0; /* only the thread group leader ends the process */
	/* Its context locations die with it, now: a process that reuses the
	 * pid before userspace catches up must not be read with them. */
	bpf_map_delete_elem(&ctx_procs, &tgid);
	bpf_map_delete_elem(&runtime_procs, &tgid);
	return emit_task_event(OTELPROF_EVENT_EXIT, tgid, tid,
			       task_start_boottime(p), NULL, 0, 0);
}
