/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * arm64 registers of a sample, for kernel_compat.bpf.h (included from its
 * __TARGET_ARCH_arm64 branch; same names as its x86_64 branch).
 *
 * The event's user_ip / user_sp / user_bp / user_lr carry pc / sp / x29
 * (the frame pointer) / x30 (the link register: a leaf's return address
 * is there, not on the stack).
 */
#ifndef OTELPROF_ARCH_ARM64_BPF_H
#define OTELPROF_ARCH_ARM64_BPF_H

/* arm64 struct user_pt_regs (arch/arm64/include/uapi/asm/ptrace.h): the
 * perf_event context's bpf_user_pt_regs_t, a UAPI layout that never
 * changes, so it is not read through CO-RE. */
struct otelprof_perf_regs {
	u64 regs[31];
	u64 sp, pc, pstate;
};

struct otelprof_perf_ctx {
	struct otelprof_perf_regs regs;
	u64 sample_period;
	u64 addr;
};

/* A whole u64 field of the context (the verifier rewrites these loads
 * into reads of the kernel's pt_regs). */
#define PERF_CTX_REG(ctx, r)                                                   \
	(*(volatile u64 *)&((struct otelprof_perf_ctx *)(ctx))->regs.r)

/* The kernel's user_mode(): PSTATE.M[3:0] == EL0t. AArch32 tasks
 * (M[4] set) are EL0 too. */
#define OTELPROF_PSR_MODE_MASK 0xfull
#define OTELPROF_PSR_MODE_EL0t 0x0ull
#define PERF_CTX_USER_MODE(ctx)                                                \
	((PERF_CTX_REG(ctx, pstate) & OTELPROF_PSR_MODE_MASK) ==               \
	 OTELPROF_PSR_MODE_EL0t)
#define PERF_CTX_IP(ctx) PERF_CTX_REG(ctx, pc)
#define PERF_CTX_SP(ctx) PERF_CTX_REG(ctx, sp)
#define PERF_CTX_FP(ctx) PERF_CTX_REG(ctx, regs[29])
#define PERF_CTX_LR(ctx) PERF_CTX_REG(ctx, regs[30])

/* The kernel's struct pt_regs saved at entry (user_pt_regs in a union at
 * its start), read through CO-RE. Array elements by BPF_CORE_READ: libbpf
 * applies only byte-offset relocations to them, not KREAD_INT's size and
 * shift ones (the load would fail); every register is a u64 anyway. */
#define USER_REGS_IP(uregs) KREAD_INT(uregs, pc)
#define USER_REGS_SP(uregs) KREAD_INT(uregs, sp)
#define USER_REGS_FP(uregs) ((u64)BPF_CORE_READ(uregs, regs[29]))
#define USER_REGS_LR(uregs) ((u64)BPF_CORE_READ(uregs, regs[30]))

/* task_pt_regs on arm64: the last struct pt_regs below the top of the
 * task's kernel stack, no padding. THREAD_SIZE is 16 KiB with 4 KiB and
 * 16 KiB pages and without KASAN (Debian's arm64 kernels); 64 KiB-page
 * kernels (THREAD_SIZE 64 KiB) lacking bpf_task_pt_regs (< 5.15) would
 * read registers from the wrong place. */
#define OTELPROF_THREAD_SIZE (16 * 1024)

#endif
