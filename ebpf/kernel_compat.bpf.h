/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Reading the kernel the same way on every supported kernel (5.10 to the
 * newest) from one object built against this machine's vmlinux.h:
 *
 * - Integer fields of kernel structs are read with the size and offset they
 *   have on the running kernel (CO-RE field relocations: KREAD_INT), never
 *   with vmlinux.h's; renamed fields go through ___flavour structs and
 *   bpf_core_field_exists.
 * - The perf_event context's registers are read in their UAPI layout
 *   (struct otelprof_perf_regs), which never changes, not through the
 *   kernel's struct pt_regs, which did (FRED made cs a u16 in a union).
 * - Helpers newer than 5.10 are behind `const volatile` flags userspace
 *   sets from libbpf's probes before load: the verifier drops the branch
 *   not taken, helper call included, so an old kernel never sees it.
 *   (bpf_loop cannot be hidden that way: a callback is an instruction 5.10
 *   rejects even when dead, so loops have their own program variants, see
 *   OTELPROF_BOUNDED_LOOP.)
 */
#ifndef OTELPROF_KERNEL_COMPAT_BPF_H
#define OTELPROF_KERNEL_COMPAT_BPF_H

/* Set by userspace before load (lib/sample/bpf_sampler.c probes). */
const volatile u8 have_task_pt_regs = 1; /* bpf_task_pt_regs, 5.15 */

/* An integer field of a kernel struct, widened to u64, read with its size
 * on the running kernel. */
#define KREAD_INT(ptr, field) ((u64)BPF_CORE_READ_BITFIELD_PROBED(ptr, field))

/* task_struct.state became __state (and an unsigned int) in 5.14. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline u64 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return KREAD_INT(t, __state);
	return KREAD_INT((struct task_struct___pre514 *)t, state);
}

/* task_struct.real_start_time became start_boottime in 5.5. */
struct task_struct___pre55 {
	u64 real_start_time;
} __attribute__((preserve_access_index));

static __always_inline u64 task_start_boottime(struct task_struct *t)
{
	if (bpf_core_field_exists(t->start_boottime))
		return KREAD_INT(t, start_boottime);
	return KREAD_INT((struct task_struct___pre55 *)t, real_start_time);
}

#if defined(__TARGET_ARCH_x86)
/* x86_64 struct pt_regs as userspace (and the perf_event context) sees
 * it: arch/x86/include/uapi/asm/ptrace.h. */
struct otelprof_perf_regs {
	u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di,
		orig_ax, ip, cs, flags, sp, ss;
};

struct otelprof_perf_ctx {
	struct otelprof_perf_regs regs;
	u64 sample_period;
	u64 addr;
};

/* A register of the interrupted context, as a whole context field (the
 * verifier rewrites these loads into reads of the kernel's copy). */
#define PERF_CTX_REG(ctx, r)                                                   \
	(*(volatile u64 *)&((struct otelprof_perf_ctx *)(ctx))->regs.r)

/* The sample's registers under the names profiler.bpf.c uses on every
 * architecture: user mode is CPL 3; the frame pointer is rbp. */
#define PERF_CTX_USER_MODE(ctx) ((PERF_CTX_REG(ctx, cs) & 3) == 3)
#define PERF_CTX_IP(ctx)	PERF_CTX_REG(ctx, ip)
#define PERF_CTX_SP(ctx)	PERF_CTX_REG(ctx, sp)
#define PERF_CTX_FP(ctx)	PERF_CTX_REG(ctx, bp)
#define USER_REGS_IP(uregs)	KREAD_INT(uregs, ip)
#define USER_REGS_SP(uregs)	KREAD_INT(uregs, sp)
#define USER_REGS_FP(uregs)	KREAD_INT(uregs, bp)

/* Where a task's user registers are saved on kernel entry: the top of
 * its kernel stack (task_pt_regs, below). THREAD_SIZE is 16 KiB on x86_64
 * without KASAN; TOP_OF_KERNEL_STACK_PADDING is 0 on the kernels that
 * lack bpf_task_pt_regs (< 5.15; FRED, which pads, came in 6.9). */
#define OTELPROF_THREAD_SIZE (16 * 1024)
#elif defined(__TARGET_ARCH_arm64)
#include "arch/arm64.bpf.h"
#else
#error "no sample register layout for this __TARGET_ARCH"
#endif

/* The user registers saved on kernel entry: bpf_task_pt_regs (5.15), else
 * the last struct pt_regs below the top of the task's kernel stack, the
 * arch's OTELPROF_THREAD_SIZE up from its base. */
static __always_inline struct pt_regs *task_user_regs(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	u64 stack;

	if (have_task_pt_regs)
		return (struct pt_regs *)bpf_task_pt_regs(
			bpf_get_current_task_btf());
	stack = (u64)BPF_CORE_READ(task, stack);
	if (!stack)
		return NULL;
	return (struct pt_regs *)(stack + OTELPROF_THREAD_SIZE -
				  bpf_core_type_size(struct pt_regs));
}

/* The thread pointer of the current task (what %fs points at). */
static __always_inline u64 thread_pointer(void)
{
	/* Not bpf_get_current_task_btf (5.11): a CO-RE read works on 5.10. */
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(task, thread.fsbase);
#elif defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ(task, thread.uw.tp_value);
#else
	return 0;
#endif
}

/*
 * A loop of at most `max` calls of `step(i, ctx)` (an __always_inline
 * function returning non-zero to stop), in two shapes from one body:
 *
 *   OTELPROF_BOUNDED_LOOP(name, step) defines name_loop(max, ctx): bpf_loop
 *   (5.17), the body verified once whatever the count;
 *   OTELPROF_BOUNDED(step, max, ctx): a plain bounded loop (5.3), which the
 *   verifier walks iteration by iteration: keep `max` modest and the state
 *   in a map (values loaded from a map are unknown to the verifier, so the
 *   iterations stay cheap to verify).
 *
 * A program that calls name_loop cannot load before 5.17, even where the
 * call is never reached: such code gets a second program that uses
 * OTELPROF_BOUNDED, and userspace loads the one the kernel supports
 * (on_cpu_sample and on_cpu_sample_chained). OTELPROF_BOUNDED returns the
 * iterations run (max if none stopped).
 */
#define OTELPROF_BOUNDED_LOOP(name, step)                                      \
	static long name##_cb(u32 i, void *ctx)                                \
	{                                                                      \
		return step(i, ctx);                                           \
	}                                                                      \
	static __always_inline long name##_loop(u32 n, void *ctx)              \
	{                                                                      \
		return bpf_loop(n, name##_cb, ctx, 0);                         \
	}

#define OTELPROF_BOUNDED(step, max, ctx)                                       \
	({                                                                     \
		u32 __i;                                                       \
		for (__i = 0; __i < (max); __i++)                              \
			if (step(__i, ctx))                                    \
				break;                                         \
		__i;                                                           \
	})

#endif
