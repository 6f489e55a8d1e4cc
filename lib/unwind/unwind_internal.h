/* SPDX-License-Identifier: Apache-2.0 */
/* Private to lib/unwind: pieces shared by the CFI reader and table builder. */
#ifndef OTELPROF_UNWIND_INTERNAL_H
#define OTELPROF_UNWIND_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <libelf.h>

#include "unwind/unwind_table.h"

/*
 * Memory of one build, charged to the file's account before it is
 * allocated. Sizes libdw and libelf allocate on their own are charged by
 * what they will hold: section copies by section size, libdw's caches per
 * CIE and FDE (measured below).
 */
struct unwind_mem {
	struct mem_account *acct; /* NULL: unlimited */
	uint64_t charged, peak;
	uint64_t libdw; /* of charged: libdw's caches of the open CFI */
	bool refused;	/* a charge failed: the build ends with -EDQUOT */
};

/* Give back what libdw's caches were charged (after dwarf_cfi_end). */
void unwind_mem_libdw_done(struct unwind_mem *m);

/* libdw 0.188 caches every FDE it looks up (80 bytes each with malloc's
 * overhead, measured on 700k FDEs) and every CIE with its initial rule
 * set (up to 128 registers of 16 bytes after our vetting). */
#define UNWIND_LIBDW_FDE_BYTES 96u
#define UNWIND_LIBDW_CIE_BYTES 2304u

bool unwind_mem_charge(struct unwind_mem *m, uint64_t n);
void unwind_mem_uncharge(struct unwind_mem *m, uint64_t n);

/* Address range of one FDE, as decoded by unwind_fde_collect(). */
struct unwind_fde {
	uint64_t lo, hi;
	uint64_t cost; /* libdw work for all its rows (cfi_fde.c) */
	uint64_t off;  /* entry offset in its section (cfi_entries.c) */
};

/* One row with its extent [lo, hi); turned into unwind_row at the end. */
struct unwind_span {
	uint64_t lo, hi;
	int32_t cfa_offset;
	int16_t fp_offset;
	uint8_t cfa_base;
	uint8_t fp_rule;
};

struct unwind_spans {
	struct unwind_span *v;
	size_t n, cap;
	uint64_t work;		/* CFA program bytes executed so far */
	uint64_t work_max;	/* budget: bounds time on hostile input */
	size_t max;		/* row cap */
	bool full;		/* a cap was hit */
	struct unwind_mem *mem; /* v is charged here */
};

/* Executable address window; FDEs outside it are skipped. */
struct unwind_window {
	uint64_t lo, hi;
};

int unwind_spans_push(struct unwind_spans *s, const struct unwind_span *sp);

/*
 * Decode every FDE's [lo, hi) from a raw .eh_frame (eh = true) or
 * .debug_frame section whose first byte is at vaddr `sec_addr`. Result sorted
 * by lo; corrupt entries are counted in `st`.
 *
 * Also vets the section for libdw, which will interpret it later: every CIE
 * and FDE program (not only the FDEs returned) must use known opcodes,
 * registers <= UNWIND_MAX_REGNO and bounded remember_state nesting, and every
 * entry of the .eh_frame_hdr search table (`hdr`, may be NULL) must point at
 * an FDE of the section. Otherwise returns -EBADMSG: libdw would allocate
 * per register number or state (gigabytes on hostile input) or run programs
 * never vetted. Returns 0, -EBADMSG, -E2BIG (over UNWIND_MAX_FDES: not
 * vetted whole, so not usable either) or -ENOMEM.
 *
 * Each FDE's `cost` is the libdw work to compute all its rows. `*max_call`
 * is 0 if no two FDEs of the section overlap (then libdw runs exactly the
 * FDE we priced), else the dearest single call, to charge every call.
 */
int unwind_fde_collect(const unsigned char *e_ident, Elf_Data *d,
		       uint64_t sec_addr, bool eh, Elf_Data *hdr,
		       uint64_t hdr_addr, const struct unwind_window *win,
		       struct unwind_fde **out, size_t *nout,
		       uint64_t *max_call, struct unwind_table_stats *st,
		       struct unwind_mem *mem);

/*
 * Append the rows libdw computes for [lo, hi) of one FDE, charging
 * out->work `upfront` once, then `per_call` per libdw call (see
 * unwind_fde_collect); stops with out->full when the budget would be
 * exceeded. Returns 0, 1 if the FDE was unusable (nothing appended),
 * -EDQUOT (out->mem refused) or -ENOMEM.
 */
int unwind_cfi_fde_rows(Dwarf_CFI *cfi, uint64_t lo, uint64_t hi,
			uint64_t upfront, uint64_t per_call,
			struct unwind_spans *out);

/*
 * The direct interpreter (cfi_entries.c, cfi_interp.c): the CIE/FDE
 * parser and a single pass over each FDE's program, for the x86_64 subset
 * compilers and glibc emit. Same rows as the libdw path above on real
 * files (docs/unwinding.md), linear per FDE, no library state.
 */

/* A CFI section as read in place. */
struct cfi_sec {
	const uint8_t *buf;
	size_t size;
	uint64_t addr; /* vaddr of buf[0]; 0 for .debug_frame */
	bool eh;       /* .eh_frame (else .debug_frame) */
};

/* One decoded CIE. */
struct cfi_cie {
	uint64_t caf;			/* code alignment factor */
	int64_t daf;			/* data alignment factor */
	uint64_t ra;			/* return address register */
	const uint8_t *init, *init_end; /* initial instructions */
	uint8_t enc;			/* FDE pointer encoding ('R') */
	bool z, signal;			/* 'z' and 'S' augmentations */
};

/* One decoded FDE: its CIE, range and program. */
struct cfi_fde {
	struct cfi_cie cie;
	uint64_t lo, range;
	const uint8_t *prog, *prog_end;
};

/* Decode the FDE whose entry starts at `off`: 0, or -1 if it is not an
 * FDE we can read (itself or its CIE). */
int cfi_fde_at(const struct cfi_sec *s, uint64_t off, struct cfi_fde *f);

/*
 * Every FDE's [lo, hi) inside `win`, sorted by lo (longest first), with
 * its entry offset; corrupt entries counted in `st` as in
 * unwind_fde_collect(). The list is charged to `mem`. Returns 0, -E2BIG
 * (over UNWIND_MAX_FDES), -EDQUOT or -ENOMEM.
 */
int unwind_cfi_collect(const struct cfi_sec *s, const struct unwind_window *win,
		       struct unwind_fde **out, size_t *nout,
		       struct unwind_table_stats *st, struct unwind_mem *mem);

/*
 * Append the rows of FDE `f` for [lo, hi) in one pass over its program,
 * charging out->work its length. Returns 0, 1 if the FDE was unusable
 * (nothing appended), -EDQUOT or -ENOMEM.
 */
int unwind_cfi_interp_rows(const struct cfi_sec *s, const struct unwind_fde *f,
			   uint64_t lo, uint64_t hi, struct unwind_spans *out);

#endif /* OTELPROF_UNWIND_INTERNAL_H */
