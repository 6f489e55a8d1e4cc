/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libdw as the oracle for lib/unwind's CFA interpreter (tests and the
 * bench only; the library no longer links its CFI to libdw). For every row
 * of a table built from .eh_frame, each libdw frame state over the row's
 * addresses (dwarf_cfi_addrframe, then the classification the libdw
 * engine used until it was replaced, docs/unwinding.md) must give the
 * row's rule. Addresses where libdw has no FDE (gaps, PLT stubs filled
 * without one, the entry point, Go functions) are not judged.
 *
 * x86_64 and aarch64 files alike (libdw's ABI rules for the file's
 * machine); the return-address rule of aarch64 rows is derived here from
 * libdw's x30 on its own, not by the library's code.
 *
 * Not for hostile files: libdw sizes its state by the register numbers a
 * program names (the reason the library stopped using it).
 */
#ifndef OTELPROF_LIBDW_CFI_ORACLE_H
#define OTELPROF_LIBDW_CFI_ORACLE_H

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "unwind/unwind_table.h"

struct oracle_result {
	uint64_t rows, judged, mismatched; /* rows of the table */
	uint64_t frames;		   /* libdw frame states compared */
	bool opened;			   /* libdw read the file's CFI */
};

static bool oracle_cfa_offset(const Dwarf_Op *o, size_t n, int64_t *off)
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

static bool oracle_plt(const Dwarf_Op *o, size_t n)
{
	return n == 9 && o[0].atom == DW_OP_breg7 && o[0].number == 8 &&
	       o[1].atom == DW_OP_breg16 && o[1].number == 0 &&
	       o[2].atom == DW_OP_lit15 && o[3].atom == DW_OP_and &&
	       o[4].atom == DW_OP_lit11 && o[5].atom == DW_OP_ge &&
	       o[6].atom == DW_OP_lit3 && o[7].atom == DW_OP_shl &&
	       o[8].atom == DW_OP_plus;
}

/* DWARF register numbers of the stack pointer, frame pointer and return
 * address column. */
struct oracle_regs {
	unsigned int sp, fp, ra;
};

/* libdw's frame state as one row rule (pc unused). */
static void oracle_classify(Dwarf_Frame *f, int ra, bool signal, bool a64,
			    struct unwind_row *r)
{
	const struct oracle_regs rg = a64 ? (struct oracle_regs){31, 29, 30}
					  : (struct oracle_regs){7, 6, 16};
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;
	int64_t off, ra_off = 0;
	bool ra_in_lr = false;

	*r = (struct unwind_row){0};
	if (signal) {
		r->rule.cfa_base = UNWIND_CFA_SIGNAL;
		return;
	}
	if (ra != (int)rg.ra)
		return;
	if (dwarf_frame_register(f, (int)rg.ra, mem, &ops, &nops) != 0)
		return;
	if (nops == 0 && ops == mem) {
		r->rule.cfa_base = UNWIND_CFA_STOP;
		return;
	}
	if (a64 && nops == 0) {
		ra_in_lr = true; /* same value: x30 still holds it */
	} else if (!oracle_cfa_offset(ops, nops, &ra_off) ||
		   (!a64 && ra_off != -8)) {
		return;
	}
	if (dwarf_frame_cfa(f, &ops, &nops) != 0)
		return;
	if (nops == 1 &&
	    (ops[0].atom == DW_OP_bregx || ops[0].atom == DW_OP_breg0 + rg.fp ||
	     ops[0].atom == DW_OP_breg0 + rg.sp)) {
		uint64_t reg = ops[0].atom == DW_OP_bregx
				       ? ops[0].number
				       : (uint64_t)(ops[0].atom - DW_OP_breg0);
		int64_t coff = ops[0].atom == DW_OP_bregx
				       ? (int64_t)ops[0].number2
				       : (int64_t)ops[0].number;

		if (coff < INT32_MIN || coff > INT32_MAX ||
		    (reg != rg.fp && reg != rg.sp))
			return;
		r->rule.cfa_base = reg == rg.sp ? UNWIND_CFA_SP : UNWIND_CFA_FP;
		r->rule.cfa_offset = (int32_t)coff;
	} else if (!a64 && oracle_plt(ops, nops)) {
		r->rule.cfa_base = UNWIND_CFA_PLT;
		return;
	} else {
		return;
	}
	if (dwarf_frame_register(f, (int)rg.fp, mem, &ops, &nops) != 0) {
		r->rule.fp_rule = UNWIND_FP_UNDEFINED;
	} else if (nops == 0) {
		r->rule.fp_rule =
			ops == mem ? UNWIND_FP_UNDEFINED : UNWIND_FP_SAME;
	} else if (oracle_cfa_offset(ops, nops, &off) && off >= INT16_MIN &&
		   off <= INT16_MAX) {
		r->rule.fp_rule = UNWIND_FP_CFA_OFFSET;
		r->rule.fp_offset = (int16_t)off;
	} else {
		r->rule.fp_rule = UNWIND_FP_UNDEFINED;
	}
	if (!a64)
		return;
	/* The row's return-address rules, in the order docs/unwinding.md
	 * gives them: the link register, CFA-8, after the saved x29, or its
	 * own offset in place of x29's. */
	if (ra_in_lr) {
		r->rule.ra_rule = UNWIND_RA_LR;
	} else if (ra_off == -8) {
		r->rule.ra_rule = UNWIND_RA_CFA_MINUS8;
	} else if (r->rule.fp_rule == UNWIND_FP_CFA_OFFSET &&
		   ra_off == r->rule.fp_offset + 8) {
		r->rule.ra_rule = UNWIND_RA_AFTER_FP;
	} else if (ra_off >= INT16_MIN && ra_off <= INT16_MAX) {
		r->rule.ra_rule = UNWIND_RA_CFA_OFFSET;
		if (r->rule.fp_rule == UNWIND_FP_CFA_OFFSET)
			r->rule.fp_rule = UNWIND_FP_UNDEFINED;
		r->rule.fp_offset = (int16_t)ra_off;
	} else {
		*r = (struct unwind_row){0};
	}
}

static bool oracle_same_rule(const struct unwind_row *a,
			     const struct unwind_row *b)
{
	return a->rule.cfa_base == b->rule.cfa_base &&
	       a->rule.cfa_offset == b->rule.cfa_offset &&
	       a->rule.fp_rule == b->rule.fp_rule &&
	       a->rule.fp_offset == b->rule.fp_offset &&
	       a->rule.ra_rule == b->rule.ra_rule;
}

/* Judge table `t` of `path` against libdw; prints the first mismatches. */
static int oracle_check(const char *path, const struct unwind_table *t,
			struct oracle_result *res)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	unsigned int shown = 0;
	Dwarf_CFI *cfi;
	Elf *e;
	bool a64;

	*res = (struct oracle_result){.rows = t->nrows};
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	cfi = e ? dwarf_getcfi_elf(e) : NULL;
	res->opened = cfi != NULL;
	a64 = e && elf64_getehdr(e) &&
	      elf64_getehdr(e)->e_machine == EM_AARCH64;
	for (size_t i = 0; cfi && i + 1 < t->nrows; i++) {
		uint64_t pc = t->rows[i].pc, end = t->rows[i + 1].pc;
		bool judged = false, bad = false;

		while (pc < end) {
			Dwarf_Frame *f = NULL;
			Dwarf_Addr s = 0, fe = 0;
			bool sig = false;
			struct unwind_row want;
			int ra;

			if (dwarf_cfi_addrframe(cfi, pc, &f) != 0 || !f)
				break; /* no FDE: not judged */
			ra = dwarf_frame_info(f, &s, &fe, &sig);
			if (ra < 0 || fe <= pc) {
				free(f);
				break;
			}
			oracle_classify(f, ra, sig, a64, &want);
			free(f);
			res->frames++;
			judged = true;
			if (!oracle_same_rule(&want, &t->rows[i])) {
				if (shown++ < 8)
					printf("  %s: pc %#lx: libdw "
					       "%u%+d/%u%+d/%u,"
					       " table %u%+d/%u%+d/%u\n",
					       path, (unsigned long)pc,
					       want.rule.cfa_base,
					       want.rule.cfa_offset,
					       want.rule.fp_rule,
					       want.rule.fp_offset,
					       want.rule.ra_rule,
					       t->rows[i].rule.cfa_base,
					       t->rows[i].rule.cfa_offset,
					       t->rows[i].rule.fp_rule,
					       t->rows[i].rule.fp_offset,
					       t->rows[i].rule.ra_rule);
				bad = true;
				break;
			}
			pc = fe;
		}
		res->judged += judged;
		res->mismatched += bad;
	}
	if (cfi)
		dwarf_cfi_end(cfi);
	if (e)
		elf_end(e);
	close(fd);
	return 0;
}

#endif /* OTELPROF_LIBDW_CFI_ORACLE_H */
