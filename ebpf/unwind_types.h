/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unwind table rows shared by userspace (which builds them from .eh_frame /
 * .debug_frame) and the BPF unwinder (which walks user stacks with them).
 * x86_64 only for now: the return address is always at CFA - 8.
 */
#ifndef OTELPROF_UNWIND_TYPES_H
#define OTELPROF_UNWIND_TYPES_H

#ifndef __VMLINUX_H__
#include <stdint.h>
#endif

/* How to compute the CFA (canonical frame address) in one address range. */
enum unwind_cfa_base {
	UNWIND_CFA_INVALID = 0, /* no usable rule: stop, count as failure */
	UNWIND_CFA_SP = 1,	/* CFA = rsp + cfa_offset */
	UNWIND_CFA_FP = 2,	/* CFA = rbp + cfa_offset */
	UNWIND_CFA_PLT =
		3, /* PLT stub: CFA = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0) */
	UNWIND_CFA_SIGNAL =
		4, /* signal trampoline: registers in ucontext at rsp */
	UNWIND_CFA_STOP = 5, /* outermost frame (_start, thread entry): done */
};

/* How to restore the caller's rbp. */
enum unwind_fp_rule {
	UNWIND_FP_SAME = 0,	  /* rbp unchanged in this range */
	UNWIND_FP_CFA_OFFSET = 1, /* caller rbp saved at CFA + fp_offset */
	UNWIND_FP_UNDEFINED = 2,  /* caller rbp not recoverable */
};

/*
 * One row applies from `pc` (file-relative ELF virtual address) up to the
 * next row's pc. Rows of one file are sorted by pc; a gap between FDEs is
 * covered by an UNWIND_CFA_INVALID row.
 */
struct unwind_row {
	uint64_t pc;
	int32_t cfa_offset;
	int16_t fp_offset;
	uint8_t cfa_base; /* enum unwind_cfa_base */
	uint8_t fp_rule;  /* enum unwind_fp_rule */
};

#endif /* OTELPROF_UNWIND_TYPES_H */
