/* SPDX-License-Identifier: Apache-2.0 */
/* Private to lib/unwind: pieces shared by the CFI reader and table builder. */
#ifndef OTELPROF_UNWIND_INTERNAL_H
#define OTELPROF_UNWIND_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind_table.h"

/*
 * Memory of one build, charged to the file's account before it is
 * allocated. What libelf allocates on its own is charged by what it will
 * hold: section copies by section size.
 */
struct unwind_mem {
	struct mem_account *acct; /* NULL: unlimited */
	uint64_t charged, peak;
	bool refused; /* a charge failed: the build ends with -EDQUOT */
};

bool unwind_mem_charge(struct unwind_mem *m, uint64_t n);
void unwind_mem_uncharge(struct unwind_mem *m, uint64_t n);

/* Address range of one FDE, as decoded by unwind_cfi_collect(). */
struct unwind_fde {
	uint64_t lo, hi;
	uint64_t off; /* entry offset in its section */
};

/* One rule with its extent [lo, hi); turned into unwind_row at the end. */
struct unwind_span {
	uint64_t lo, hi;
	struct unwind_rule rule;
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

/* Sort s->v by lo, stably (unwind_table.c says how). */
void unwind_spans_sort(struct unwind_spans *s);

/* Executable address window; FDEs outside it are skipped. */
struct unwind_window {
	uint64_t lo, hi;
};

int unwind_spans_push(struct unwind_spans *s, const struct unwind_span *sp);

/*
 * The CFA interpreter (cfi_entries.c, cfi_interp.c): the CIE/FDE parser
 * and a single pass over each FDE's program, for the x86_64 and aarch64 subset
 * compilers and glibc emit. Linear per FDE, no library state; the rows
 * libdw gives for the same bytes (test_cfi_oracle.c, docs/unwinding.md).
 */

/* A CFI section as read in place. */
struct cfi_sec {
	const uint8_t *buf;
	size_t size;
	uint64_t addr; /* vaddr of buf[0]; 0 for .debug_frame */
	bool eh;       /* .eh_frame (else .debug_frame) */
	bool aarch64;  /* an aarch64 file's (else x86_64's) */
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
 * its entry offset; corrupt entries are counted in `st`. The list is charged to
 * `mem`. Returns 0, -E2BIG (over UNWIND_MAX_FDES), -EDQUOT or -ENOMEM.
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
