// SPDX-License-Identifier: Apache-2.0
/*
 * CFA program interpretation through elfutils libdw, then classification of
 * each libdw frame state into one unwind row.
 *
 * Why libdw: it is the maintained, fuzzed DWARF CFI interpreter on the
 * target distro and handles every DW_CFA_* opcode, remember/restore state and
 * the x86_64 ABI defaults. Its cost: dwarf_cfi_addrframe() re-runs the FDE
 * program from the start for each row, so an FDE costs O(rows * bytes).
 * Real FDEs are small (see docs/unwinding.md); cfi_fde.c prices each one
 * and a per-file work budget (unwind_spans.work_max) bounds hostile ones.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "unwind/unwind_internal.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RIP 16

/*
 * The x86_64 lazy-binding PLT expression emitted by GNU ld and lld:
 * rsp + 8 + ((rip & 15) >= 11 ? 8 : 0). Only this exact form maps to
 * UNWIND_CFA_PLT, whose BPF side hardcodes the 11.
 */
static bool is_plt_expr(const Dwarf_Op *o, size_t n)
{
	return n == 9 && o[0].atom == DW_OP_breg7 && o[0].number == 8 &&
	       o[1].atom == DW_OP_breg16 && o[1].number == 0 &&
	       o[2].atom == DW_OP_lit15 && o[3].atom == DW_OP_and &&
	       o[4].atom == DW_OP_lit11 && o[5].atom == DW_OP_ge &&
	       o[6].atom == DW_OP_lit3 && o[7].atom == DW_OP_shl &&
	       o[8].atom == DW_OP_plus;
}

/*
 * "Saved at CFA + off" as libdw spells it: DW_OP_call_frame_cfa, then
 * DW_OP_plus_uconst off unless off == 0. Returns false for anything else.
 */
static bool cfa_offset_rule(const Dwarf_Op *o, size_t n, int64_t *off)
{
	if (n == 1 && o[0].atom == DW_OP_call_frame_cfa) {
		*off = 0;
		return true;
	}
	if (n == 2 && o[0].atom == DW_OP_call_frame_cfa &&
	    o[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)o[1].number;
		return true;
	}
	return false;
}

static void classify(Dwarf_Frame *f, bool signal, struct unwind_span *sp)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;
	int64_t off;

	sp->cfa_base = UNWIND_CFA_INVALID;
	sp->cfa_offset = 0;
	sp->fp_rule = UNWIND_FP_SAME;
	sp->fp_offset = 0;

	/* Whole signal trampolines: the BPF side reads the ucontext. */
	if (signal) {
		sp->cfa_base = UNWIND_CFA_SIGNAL;
		return;
	}

	/* Return address: undefined marks the outermost frame; anything but
	 * "at CFA-8" cannot be expressed in a row. */
	if (dwarf_frame_register(f, REG_RIP, mem, &ops, &nops) != 0)
		return;
	if (nops == 0 && ops == mem) {
		sp->cfa_base = UNWIND_CFA_STOP;
		return;
	}
	if (!cfa_offset_rule(ops, nops, &off) || off != -8)
		return;

	if (dwarf_frame_cfa(f, &ops, &nops) != 0)
		return;
	if (nops == 1 &&
	    (ops[0].atom == DW_OP_bregx || ops[0].atom == DW_OP_breg6 ||
	     ops[0].atom == DW_OP_breg7)) {
		uint64_t reg = ops[0].atom == DW_OP_bregx
				       ? ops[0].number
				       : (uint64_t)(ops[0].atom - DW_OP_breg0);
		int64_t coff = ops[0].atom == DW_OP_bregx
				       ? (int64_t)ops[0].number2
				       : (int64_t)ops[0].number;

		if (coff < INT32_MIN || coff > INT32_MAX)
			return;
		if (reg == REG_RSP)
			sp->cfa_base = UNWIND_CFA_SP;
		else if (reg == REG_RBP)
			sp->cfa_base = UNWIND_CFA_FP;
		else
			return;
		sp->cfa_offset = (int32_t)coff;
	} else if (is_plt_expr(ops, nops)) {
		sp->cfa_base = UNWIND_CFA_PLT;
		return; /* PLT stubs never touch rbp */
	} else {
		return;
	}

	if (dwarf_frame_register(f, REG_RBP, mem, &ops, &nops) != 0) {
		sp->fp_rule = UNWIND_FP_UNDEFINED;
	} else if (nops == 0) {
		sp->fp_rule = ops == mem ? UNWIND_FP_UNDEFINED : UNWIND_FP_SAME;
	} else if (cfa_offset_rule(ops, nops, &off) && off >= INT16_MIN &&
		   off <= INT16_MAX) {
		sp->fp_rule = UNWIND_FP_CFA_OFFSET;
		sp->fp_offset = (int16_t)off;
	} else {
		/* In another register or an expression: not recoverable
		 * with a row, but the CFA still is, so keep unwinding. */
		sp->fp_rule = UNWIND_FP_UNDEFINED;
	}
}

int unwind_cfi_fde_rows(Dwarf_CFI *cfi, uint64_t lo, uint64_t hi,
			uint64_t upfront, uint64_t per_call,
			struct unwind_spans *out)
{
	size_t n0 = out->n;
	uint64_t pc = lo;

	if (out->full)
		return 0;
	if (upfront > out->work_max - out->work) {
		out->full = true;
		return 0;
	}
	out->work += upfront;
	while (pc < hi) {
		Dwarf_Frame *f = NULL;
		Dwarf_Addr s = 0, e = 0;
		bool sig = false;
		struct unwind_span sp;
		int ra;

		if (out->full)
			return 0;
		if (per_call > out->work_max - out->work) {
			out->full = true;
			return 0;
		}
		out->work += per_call;
		if (dwarf_cfi_addrframe(cfi, pc, &f) != 0 || !f)
			goto bad;
		ra = dwarf_frame_info(f, &s, &e, &sig);
		if (ra < 0 || s > pc || e <= pc) {
			free(f);
			goto bad;
		}
		classify(f, sig, &sp);
		free(f);
		if (ra != REG_RIP && sp.cfa_base != UNWIND_CFA_SIGNAL)
			sp.cfa_base = UNWIND_CFA_INVALID;
		if (sp.cfa_base == UNWIND_CFA_INVALID) {
			sp.cfa_offset = 0;
			sp.fp_offset = 0;
			sp.fp_rule = UNWIND_FP_SAME;
		}
		sp.lo = pc;
		sp.hi = e < hi ? e : hi;
		ra = unwind_spans_push(out, &sp);
		if (ra)
			return ra;
		pc = sp.hi;
	}
	return 0;
bad:
	/* A prefix of a broken program may be fine, but the FDE as a whole
	 * is suspect: drop it and let the gap read as INVALID. */
	out->n = n0;
	return 1;
}
