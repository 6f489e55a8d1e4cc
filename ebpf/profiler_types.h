/* SPDX-License-Identifier: Apache-2.0 */
/* Types shared by the BPF sampler (profiler.bpf.c) and userspace. */
#ifndef OTELPROF_PROFILER_TYPES_H
#define OTELPROF_PROFILER_TYPES_H

#ifndef __VMLINUX_H__
#include <stdint.h>
typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;
#endif

#define OTELPROF_COMM_LEN 16
/* Kernel frames per sample: the kernel's own perf_event_max_stack default. */
#define OTELPROF_MAX_KERNEL_FRAMES 127
/* User frames per sample with frame-pointer unwinding (bpf_get_stack). */
#define OTELPROF_MAX_USER_FRAMES 127

enum otelprof_event_type {
	OTELPROF_EVENT_SAMPLE = 1,
	OTELPROF_EVENT_EXEC = 2, /* a process replaced its image */
	OTELPROF_EVENT_EXIT = 3, /* a whole process (thread group) exited */
};

/* Indices into the per-CPU `counters` map. */
enum otelprof_counter {
	OTELPROF_CNT_SAMPLES = 0,   /* perf_event program runs that emitted */
	OTELPROF_CNT_LOST,          /* ring buffer full */
	OTELPROF_CNT_IDLE,          /* idle CPU samples skipped */
	OTELPROF_CNT_KSTACK_ERR,    /* bpf_get_stack(kernel) failed */
	OTELPROF_CNT_USTACK_ERR,    /* bpf_get_stack(user) failed (not kthreads) */
	OTELPROF_CNT_TASK_EVENTS_LOST, /* exec/exit notifications dropped */
	OTELPROF_CNT_MAX,
};

struct otelprof_event_header {
	u32 type; /* enum otelprof_event_type */
	u32 pid;  /* thread group id */
	u32 tid;
	u32 cpu;
	u64 ktime_boot_ns; /* bpf_ktime_get_boot_ns() */
};

/*
 * A sample as emitted to the ring buffer. Only the used prefix of ustack is
 * sent: the record size is offsetof(ustack) + n_user * 8.
 */
struct otelprof_sample_event {
	struct otelprof_event_header hdr;
	char comm[OTELPROF_COMM_LEN];
	u32 n_kernel; /* valid entries in kstack */
	u32 n_user;   /* valid entries in ustack */
	u32 flags;    /* OTELPROF_SAMPLE_F_* */
	u32 pad;
	u64 kstack[OTELPROF_MAX_KERNEL_FRAMES];
	u64 ustack[OTELPROF_MAX_USER_FRAMES];
};

#define OTELPROF_SAMPLE_F_KTHREAD (1u << 0) /* no user address space */

struct otelprof_task_event {
	struct otelprof_event_header hdr;
};

#endif /* OTELPROF_PROFILER_TYPES_H */
