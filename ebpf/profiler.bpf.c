// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * CPU sampler: a perf_event program on PERF_COUNT_SW_CPU_CLOCK on every CPU
 * takes the kernel and user stack of whatever runs there and sends it to
 * userspace through a ring buffer. Raw tracepoints tell userspace about exec
 * and exit so its process table stays current (no kprobes on our kernels).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "profiler_types.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by userspace before load. */
const volatile u32 target_tgid = 0; /* 0: whole host */
const volatile u8 include_idle = 0;
const volatile u32 max_user_frames = OTELPROF_MAX_USER_FRAMES;

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

static __always_inline void count(u32 which)
{
	u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += 1;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid = id >> 32, tid = (u32)id, zero = 0;
	struct otelprof_sample_event *e;
	struct task_struct *task;
	long n;
	u64 size;

	if (tgid == 0 && !include_idle) {
		count(OTELPROF_CNT_IDLE);
		return 0;
	}
	if (target_tgid && tgid != target_tgid)
		return 0;

	e = bpf_map_lookup_elem(&sample_scratch, &zero);
	if (!e)
		return 0;

	e->hdr.type = OTELPROF_EVENT_SAMPLE;
	e->hdr.pid = tgid;
	e->hdr.tid = tid;
	e->hdr.cpu = bpf_get_smp_processor_id();
	e->hdr.ktime_boot_ns = bpf_ktime_get_boot_ns();
	e->flags = 0;
	e->pad = 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));

	n = bpf_get_stack(ctx, e->kstack, sizeof(e->kstack), 0);
	if (n < 0) {
		count(OTELPROF_CNT_KSTACK_ERR);
		n = 0;
	}
	e->n_kernel = n / sizeof(u64);

	task = (struct task_struct *)bpf_get_current_task();
	if (!BPF_CORE_READ(task, mm)) {
		/* Kernel thread: nothing to unwind in user space. */
		e->flags |= OTELPROF_SAMPLE_F_KTHREAD;
		n = 0;
	} else {
		n = bpf_get_stack(ctx, e->ustack, sizeof(e->ustack),
				  BPF_F_USER_STACK);
		if (n < 0) {
			count(OTELPROF_CNT_USTACK_ERR);
			n = 0;
		}
	}
	e->n_user = n / sizeof(u64);
	if (e->n_user > max_user_frames)
		e->n_user = max_user_frames;
	if (e->n_user > OTELPROF_MAX_USER_FRAMES)
		e->n_user = OTELPROF_MAX_USER_FRAMES;

	size = offsetof(struct otelprof_sample_event, ustack) +
	       (u64)e->n_user * sizeof(u64);
	if (size > sizeof(*e))
		size = sizeof(*e);
	if (bpf_ringbuf_output(&events, e, size, 0))
		count(OTELPROF_CNT_LOST);
	else
		count(OTELPROF_CNT_SAMPLES);
	return 0;
}

static __always_inline int emit_task_event(u32 type, u32 tgid, u32 tid)
{
	struct otelprof_task_event *e;

	if (target_tgid && tgid != target_tgid)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(OTELPROF_CNT_TASK_EVENTS_LOST);
		return 0;
	}
	e->hdr.type = type;
	e->hdr.pid = tgid;
	e->hdr.tid = tid;
	e->hdr.cpu = bpf_get_smp_processor_id();
	e->hdr.ktime_boot_ns = bpf_ktime_get_boot_ns();
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* sched_process_exec(struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm) */
SEC("raw_tp/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p)
{
	u32 tgid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);

	return emit_task_event(OTELPROF_EVENT_EXEC, tgid, tid);
}

/* sched_process_exit(struct task_struct *p): once per exiting thread. */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	u32 tgid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);

	if (tgid != tid)
		return 0; /* only the thread group leader ends the process */
	return emit_task_event(OTELPROF_EVENT_EXIT, tgid, tid);
}
