/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unwind table rows: the table row userspace builds from .eh_frame /
 * .debug_frame (struct unwind_row), and the packed row the walk reads
 * (struct unwind_packed_row), in the kernel's row chunks and in their
 * userspace twins alike. The builder's working row with its extent
 * (struct unwind_span) is private to lib/unwind. Rows of x86_64 files and
 * of aarch64 files share the layout; the register names below are x86_64's
 * (rsp, rbp), on aarch64 read sp and x29. aarch64 adds where the return
 * address is (enum unwind_ra_rule): x86_64 rows always have it at CFA - 8.
 */
#ifndef OTELPROF_UNWIND_TYPES_H
#define OTELPROF_UNWIND_TYPES_H

#ifndef __VMLINUX_H__
#include <stdbool.h>
#include <stdint.h>
#endif

/* Which architecture's frames the walk reads (unwind_step.h): the
 * target's unless the includer (a test) sets it. Rows of both are built
 * on any host. */
#ifndef UNWIND_AARCH64
#if defined(__TARGET_ARCH_arm64) || defined(__aarch64__)
#define UNWIND_AARCH64 1
#else
#define UNWIND_AARCH64 0
#endif
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
	/* aarch64 only: a Go function's frame once its prologue has run:
	 * CFA = sp + cfa_offset (the pcsp delta), the return address saved
	 * at sp and the caller's x29 just below it, at sp - 8 (Go's arm64
	 * layout). Its own base because both lie cfa_offset below the CFA,
	 * more than fp_offset can say for large frames. */
	UNWIND_CFA_GO_FRAME = 6,
	/* A function that moved sp to another stack and calls from there
	 * (Go's stack switches with a frame: asmcgocall, systemstack,
	 * nanotime1): CFA = rbp (x29) + cfa_offset as UNWIND_CFA_FP, and
	 * the caller's frame may lie below this one, on the stack it came
	 * from. */
	UNWIND_CFA_FP_SWITCH = 7,
};

/* How to restore the caller's rbp. */
enum unwind_fp_rule {
	UNWIND_FP_SAME = 0,	  /* rbp unchanged in this range */
	UNWIND_FP_CFA_OFFSET = 1, /* caller rbp saved at CFA + fp_offset */
	UNWIND_FP_UNDEFINED = 2,  /* caller rbp not recoverable */
};

/*
 * Where the return address is. Always UNWIND_RA_CFA_MINUS8 on x86_64 (the
 * `call` pushed it); aarch64's `bl` leaves it in x30, which a function
 * saves wherever its prologue likes, or not at all (leaf functions).
 */
enum unwind_ra_rule {
	UNWIND_RA_CFA_MINUS8 = 0, /* at CFA - 8 */
	UNWIND_RA_LR = 1,	  /* still in the link register (x30) */
	UNWIND_RA_AFTER_FP = 2,	  /* at CFA + fp_offset + 8: the {x29, x30}
				     pair of an aarch64 frame record */
	UNWIND_RA_CFA_OFFSET = 3, /* at CFA + fp_offset; the caller's x29 is
				     then not restored from memory (fp_rule
				     SAME or UNDEFINED) */
};

/*
 * How to find the caller's frame at a pc: the CFA, the caller's rbp and
 * the return address. Two 4-bit fields keep the rule 8 bytes, as before
 * aarch64 (the builder holds millions of these).
 */
struct unwind_rule {
	int32_t cfa_offset;
	int16_t fp_offset;
	uint8_t cfa_base;    /* enum unwind_cfa_base */
	uint8_t fp_rule : 4; /* enum unwind_fp_rule */
	uint8_t ra_rule : 4; /* enum unwind_ra_rule */
};

/*
 * One row applies from `pc` (file-relative ELF virtual address) up to the
 * next row's pc. Rows of one file are sorted by pc; a gap between FDEs is
 * covered by an UNWIND_CFA_INVALID row.
 */
struct unwind_row {
	uint64_t pc;
	struct unwind_rule rule;
};

/*
 * One row as the walk reads it: 8 bytes, since BPF arrays round values up
 * to 8. x86_64 stack offsets are multiples of 8, so they are stored
 * divided by 8; a row that does not fit is stored as UNWIND_CFA_INVALID.
 * The pc keeps 32 bits: rows of code above 4 GiB of file vaddr are left
 * out of the chunk, and the walk takes the validated frame-pointer
 * fallback there (unwind_walk.h).
 */
struct unwind_packed_row {
	uint32_t pc;	  /* file vaddr */
	int16_t cfa_off8; /* cfa_offset / 8 */
	int8_t fp_off8;	  /* fp_offset / 8 */
	uint8_t rules;	  /* cfa_base | fp_rule << 4 | ra_rule << 6 */
};

#define UNWIND_PACKED_MAX_PC 0xffffffffull

/*
 * A file's page index, in the rows of its chunk just before its table
 * (index_rows of them; lib/unwind/row_index.c builds it): a header row,
 * whose pc is the vaddr of page 0 and whose rules byte the page shift,
 * then for each page p = 0 .. npages (npages = index_rows - 2) a row
 * whose pc is E[p], the index of the last table row at or before page
 * p's start (0 if none). A pc in page p is covered by a row in
 * [E[p], E[p + 1]]: a search of a page's rows, a cache line or two,
 * instead of halving the whole table from its middle, each step a line
 * of its own.
 */
#define UNWIND_INDEX_MIN_ROWS  64 /* smaller tables: no index */
#define UNWIND_INDEX_MIN_SHIFT 12

#define UNWIND_ROW_CFA_BASE(r) ((r)->rules & 15)
#if UNWIND_AARCH64
#define UNWIND_ROW_FP_RULE(r) (((r)->rules >> 4) & 3)
#else
/* x86_64 rows leave the return-address bits 0: one instruction less per
 * frame in the BPF walk. */
#define UNWIND_ROW_FP_RULE(r) ((r)->rules >> 4)
#endif
#define UNWIND_ROW_RA_RULE(r)	 ((r)->rules >> 6)
#define UNWIND_ROW_CFA_OFFSET(r) ((int32_t)(r)->cfa_off8 * 8)
#define UNWIND_ROW_FP_OFFSET(r)	 ((int16_t)((r)->fp_off8 * 8))

#ifndef __VMLINUX_H__
/* Pack in (pc <= UNWIND_PACKED_MAX_PC) into *out; false when its rule
 * does not fit (stored INVALID). */
static inline bool unwind_row_pack(const struct unwind_row *in,
				   struct unwind_packed_row *out)
{
	uint8_t base = in->rule.cfa_base, fp = in->rule.fp_rule;
	uint8_t ra = in->rule.ra_rule;
	bool uses_off = base == UNWIND_CFA_SP || base == UNWIND_CFA_FP ||
			base == UNWIND_CFA_GO_FRAME ||
			base == UNWIND_CFA_FP_SWITCH;
	bool uses_fp_off =
		fp == UNWIND_FP_CFA_OFFSET || ra == UNWIND_RA_CFA_OFFSET;

	*out = (struct unwind_packed_row){.pc = (uint32_t)in->pc};
	if (uses_off &&
	    (in->rule.cfa_offset % 8 || in->rule.cfa_offset / 8 > INT16_MAX ||
	     in->rule.cfa_offset / 8 < INT16_MIN))
		base = UNWIND_CFA_INVALID;
	if (uses_fp_off &&
	    (in->rule.fp_offset % 8 || in->rule.fp_offset / 8 > INT8_MAX ||
	     in->rule.fp_offset / 8 < INT8_MIN))
		base = UNWIND_CFA_INVALID;
	if (base == UNWIND_CFA_INVALID) {
		out->rules = UNWIND_CFA_INVALID;
		return in->rule.cfa_base == UNWIND_CFA_INVALID;
	}
	out->cfa_off8 = uses_off ? (int16_t)(in->rule.cfa_offset / 8) : 0;
	out->fp_off8 = uses_fp_off ? (int8_t)(in->rule.fp_offset / 8) : 0;
	out->rules = (uint8_t)(base | fp << 4 | ra << 6);
	return true;
}
#endif

#endif /* OTELPROF_UNWIND_TYPES_H */
