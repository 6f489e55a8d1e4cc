/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One step of stack unwinding from an unwind row: given the registers of a
 * frame, compute the caller's pc, sp and fp. x86_64 or aarch64 (fp = x29,
 * and the link register x30 at the first frame), as UNWIND_AARCH64 says:
 * the target's architecture unless the includer (a test) sets it. The same code
 * runs in the BPF program (reading user memory with bpf_probe_read_user)
 * and in userspace (reading a copied stack snapshot, and in unit tests):
 * the includer defines UNWIND_READ_U64(ctx, addr, out) returning 0 on
 * success before including this header.
 */
#ifndef OTELPROF_UNWIND_STEP_H
#define OTELPROF_UNWIND_STEP_H

#include "unwind_types.h"

#ifndef UNWIND_READ_U64
#error "define UNWIND_READ_U64(ctx, addr, out) before including unwind_step.h"
#endif

#ifndef UNWIND_INLINE
#define UNWIND_INLINE static inline
#endif

struct unwind_regs {
	uint64_t pc, sp, fp;
#if UNWIND_AARCH64
	/* x30: known at the sampled frame and at a frame a signal
	 * interrupted (from its sigcontext); 0 elsewhere, since a callee's
	 * `bl` overwrote the caller's. */
	uint64_t lr;
#endif
};

enum unwind_step_result {
	UNWIND_STEP_OK = 0,	   /* regs now describe the caller */
	UNWIND_STEP_DONE = 1,	   /* outermost frame reached: stack complete */
	UNWIND_STEP_ERR_RULE = -1, /* no usable rule for pc */
	UNWIND_STEP_ERR_READ = -2, /* stack memory unreadable */
	UNWIND_STEP_ERR_LOOP = -3, /* sp did not move up: corrupt stack */
	UNWIND_STEP_NOT_MINE = 2,  /* a runtime's step (unwind_walk.h): not
				      that runtime's code, the walk goes on */
};

#if UNWIND_AARCH64
/* At __kernel_rt_sigreturn sp points at struct rt_sigframe: siginfo (128
 * bytes), then the ucontext, whose uc_mcontext (struct sigcontext, 16-byte
 * aligned after uc_flags, uc_link, uc_stack, uc_sigmask and 120 bytes of
 * padding: 176 bytes in) holds fault_address, then regs[31], sp, pc. */
#define UNWIND_SIGCTX_REGS (128 + 176 + 8)
#define UNWIND_SIGCTX_RBP  (UNWIND_SIGCTX_REGS + 29 * 8) /* x29 */
#define UNWIND_SIGCTX_LR   (UNWIND_SIGCTX_REGS + 30 * 8) /* x30 */
#define UNWIND_SIGCTX_RSP  (UNWIND_SIGCTX_REGS + 31 * 8)
#define UNWIND_SIGCTX_RIP  (UNWIND_SIGCTX_REGS + 32 * 8)
/*
 * Return addresses are stripped to the user VA bits: with pointer
 * authentication a signed x30 carries its PAC above them (bits 48-54 and
 * 56-63 with the 48-bit VA Linux gives arm64 user space, TBI being off
 * for instruction addresses). Kernels with fewer VA bits (39) would leave
 * PAC bits 39-47: not handled (docs/arm64.md).
 */
#define UNWIND_AARCH64_RA_MASK ((1ull << 48) - 1)
#else
/* struct rt_sigframe starts with the return address; at __restore_rt the
 * handler's `ret` already popped it, so sp points at the ucontext, whose
 * uc_mcontext (struct sigcontext) starts 40 bytes in. */
#define UNWIND_SIGCTX_RBP (40 + 80)
#define UNWIND_SIGCTX_RSP (40 + 120)
#define UNWIND_SIGCTX_RIP (40 + 128)
#endif

/*
 * Apply `cfa_base`/`cfa_offset`/`fp_rule`/`fp_offset`/`ra_rule` of the row
 * covering r->pc. A NULL-row equivalent is UNWIND_CFA_INVALID. ra_rule is
 * always UNWIND_RA_CFA_MINUS8 on x86_64 (and not looked at there).
 */
UNWIND_INLINE int unwind_step(void *ctx, uint8_t cfa_base, int32_t cfa_offset,
			      uint8_t fp_rule, int16_t fp_offset,
			      uint8_t ra_rule, struct unwind_regs *r)
{
	uint64_t cfa, ra = 0, fp = r->fp, sp;
	/* Where the caller's rbp is, from the CFA (64-bit: a Go frame's may
	 * be further away than fp_offset holds). */
	int64_t fp_off = fp_offset;
	int switched = 0;

	switch (cfa_base) {
	case UNWIND_CFA_STOP:
		return UNWIND_STEP_DONE;
	case UNWIND_CFA_SP:
		cfa = r->sp + (int64_t)cfa_offset;
		break;
	case UNWIND_CFA_FP:
		cfa = r->fp + (int64_t)cfa_offset;
		break;
	case UNWIND_CFA_FP_SWITCH:
		/* The caller's stack is another one: sp may go down, once
		 * (the walk's frame limit bounds a table that lies). */
		if (!r->fp)
			return UNWIND_STEP_ERR_READ;
		cfa = r->fp + (int64_t)cfa_offset;
		switched = 1;
		break;
	case UNWIND_CFA_PLT:
		/* Lazy-binding PLT entries push once at offset 11. */
		cfa = r->sp + 8 + (((r->pc & 15) >= 11) ? 8 : 0);
		break;
	case UNWIND_CFA_SIGNAL:
		if (UNWIND_READ_U64(ctx, r->sp + UNWIND_SIGCTX_RIP, &ra) ||
		    UNWIND_READ_U64(ctx, r->sp + UNWIND_SIGCTX_RSP, &sp) ||
		    UNWIND_READ_U64(ctx, r->sp + UNWIND_SIGCTX_RBP, &fp))
			return UNWIND_STEP_ERR_READ;
#if UNWIND_AARCH64
		/* The interrupted frame may be a leaf: its x30 counts. */
		if (UNWIND_READ_U64(ctx, r->sp + UNWIND_SIGCTX_LR, &r->lr))
			return UNWIND_STEP_ERR_READ;
		r->lr &= UNWIND_AARCH64_RA_MASK;
#endif
		if (!ra)
			return UNWIND_STEP_DONE;
		r->pc = ra;
		r->sp = sp;
		r->fp = fp;
		return UNWIND_STEP_OK;
#if UNWIND_AARCH64
	case UNWIND_CFA_GO_FRAME:
		/* The frame record {x29, x30} at sp - 8 (Go's prologue stores
		 * it there as it moves sp down by the frame's size). x29 lies
		 * below the sampled sp, outside a stack copy: unknown there
		 * (0), as Go's own frames do not need it. */
		cfa = r->sp + (int64_t)cfa_offset;
		if (UNWIND_READ_U64(ctx, r->sp - 8, &fp))
			fp = 0;
		fp_rule = UNWIND_FP_SAME;
		fp_off = -(int64_t)cfa_offset;
		ra_rule = UNWIND_RA_CFA_OFFSET;
		break;
#endif
	default:
		return UNWIND_STEP_ERR_RULE;
	}
#if UNWIND_AARCH64
	if (ra_rule == UNWIND_RA_LR) {
		/* Only where x30 is known (see struct unwind_regs). */
		if (!r->lr)
			return UNWIND_STEP_ERR_RULE;
		ra = r->lr;
	} else if (UNWIND_READ_U64(
			   ctx,
			   ra_rule == UNWIND_RA_AFTER_FP     ? cfa + fp_off + 8
			   : ra_rule == UNWIND_RA_CFA_OFFSET ? cfa + fp_off
							     : cfa - 8,
			   &ra)) {
		return UNWIND_STEP_ERR_READ;
	}
	ra &= UNWIND_AARCH64_RA_MASK;
#else
	(void)ra_rule;
	if (UNWIND_READ_U64(ctx, cfa - 8, &ra))
		return UNWIND_STEP_ERR_READ;
#endif
	if (fp_rule == UNWIND_FP_CFA_OFFSET) {
		if (UNWIND_READ_U64(ctx, cfa + fp_off, &fp))
			return UNWIND_STEP_ERR_READ;
	} else if (fp_rule == UNWIND_FP_UNDEFINED) {
		fp = 0;
	}
#if UNWIND_AARCH64
	/* A frame whose return address is still in x30 may have no stack
	 * (a leaf: CFA = sp); x30 is taken once, so this cannot loop. */
	if (!switched &&
	    (cfa < r->sp || (cfa == r->sp && ra_rule != UNWIND_RA_LR)))
		return UNWIND_STEP_ERR_LOOP;
	r->lr = 0;
#else
	if (!switched && cfa <= r->sp)
		return UNWIND_STEP_ERR_LOOP;
#endif
	if (!ra)
		return UNWIND_STEP_DONE; /* end of the frame chain */
	r->pc = ra;
	r->sp = cfa;
	r->fp = fp;
	return UNWIND_STEP_OK;
}

/* Frame-pointer step: CFA = rbp + 16, ra at rbp + 8, caller rbp at rbp
 * (aarch64's frame record {x29, x30} at x29 has the same shape). */
UNWIND_INLINE int unwind_step_fp(void *ctx, struct unwind_regs *r)
{
	if (!r->fp || r->fp < r->sp)
		return UNWIND_STEP_ERR_RULE;
	return unwind_step(ctx, UNWIND_CFA_FP, 16, UNWIND_FP_CFA_OFFSET, -16,
			   UNWIND_RA_CFA_MINUS8, r);
}

/* The largest frame the frame-pointer fallback believes in. */
#define UNWIND_FP_MAX_FRAME (1u << 20)

/*
 * Frame-pointer step for a pc its file has no CFI row for (V8 builtins,
 * JIT stubs, hand-written assembly), taken only where the frame looks
 * real: rbp 8-aligned, on the stack above sp and at most
 * UNWIND_FP_MAX_FRAME above it; unwind_step makes sure sp moves up. The
 * includer must also find the return address in executable code before
 * it takes the frame.
 */
UNWIND_INLINE int unwind_step_fp_fallback(void *ctx, struct unwind_regs *r)
{
	if ((r->fp & 7) || r->fp < r->sp || r->fp - r->sp > UNWIND_FP_MAX_FRAME)
		return UNWIND_STEP_ERR_RULE;
	return unwind_step_fp(ctx, r);
}

#endif /* OTELPROF_UNWIND_STEP_H */
