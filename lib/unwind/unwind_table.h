/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Build compact unwind tables (ebpf/unwind_types.h rows) from the call-frame
 * information (.eh_frame, .debug_frame) of one x86_64 or aarch64 ELF file.
 *
 * Input is untrusted: files mapped by other processes. Every size is bounded,
 * a corrupt FDE is skipped and counted, a corrupt file yields a negative
 * errno; neither crashes nor hangs.
 */
#ifndef OTELPROF_UNWIND_TABLE_H
#define OTELPROF_UNWIND_TABLE_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "unwind_types.h"
#include "util/mem_budget.h"

/* Hard caps; inputs beyond them are rejected or truncated (see stats). */
#define UNWIND_MAX_FILE_SIZE   (4ULL << 30) /* whole ELF file */
#define UNWIND_MAX_CFI_SECTION (64u << 20)  /* one .eh_frame/.debug_frame */
#define UNWIND_MAX_ROWS	       (4u << 20)   /* rows per file */
#define UNWIND_MAX_FDES	       (1u << 20)   /* FDEs per CFI section */
#define UNWIND_MAX_FDE_INSNS   (64u << 10)  /* CFA program bytes per FDE */
#define UNWIND_MAX_FDE_RANGE   (64u << 20)  /* code bytes per FDE */
#define UNWIND_MAX_ENTRY_STOP  4096u	    /* entry-point STOP range */
#define UNWIND_MAX_REGNO       127	    /* DWARF register numbers */
#define UNWIND_MAX_STATE_DEPTH 64	    /* DW_CFA_remember_state nesting */

/* unwind_table_stats.flags */
enum unwind_stats_flags {
	UNWIND_ST_EH_FRAME = 1u << 0,	  /* .eh_frame present and used */
	UNWIND_ST_EH_FRAME_HDR = 1u << 1, /* .eh_frame_hdr present */
	UNWIND_ST_DEBUG_FRAME = 1u << 2,  /* .debug_frame present and used */
	UNWIND_ST_CFI_CORRUPT = 1u << 3,  /* a walk stopped early, or an FDE
					   * could not be read or run */
	UNWIND_ST_TRUNCATED = 1u << 4,	  /* a cap (rows/work) was hit */
	UNWIND_ST_ENTRY_STOP = 1u << 5,	  /* STOP row added at e_entry */
	UNWIND_ST_PLT_FILLED = 1u << 6,	  /* PLT rows added without FDE */
	UNWIND_ST_HOSTILE = 1u << 7,	  /* a CFI section was rejected whole */
	UNWIND_ST_OVER_BUDGET = 1u << 8,  /* refused: the memory budget */
};

struct unwind_table_stats {
	uint64_t fdes_total;	   /* FDEs seen in .eh_frame + .debug_frame */
	uint64_t fdes_skipped;	   /* corrupt, out of range or over a cap */
	uint64_t fdes_overlapping; /* fully hidden by an earlier FDE */
	uint64_t fdes_debug_frame; /* .debug_frame FDEs that filled a gap */
	uint64_t bytes_of_cfi;	   /* .eh_frame + .debug_frame bytes */
	uint64_t rows;		   /* rows in the final table */
	uint64_t rows_invalid;	   /* of which UNWIND_CFA_INVALID */
	uint64_t rows_plt;	   /* of which UNWIND_CFA_PLT */
	uint64_t rows_signal;	   /* of which UNWIND_CFA_SIGNAL */
	uint64_t rows_stop;	   /* of which UNWIND_CFA_STOP */
	uint32_t flags;		   /* enum unwind_stats_flags */
	uint32_t max_fde_insns;	   /* largest CFA program seen (bytes) */
	/* In: if set, the build checks it between FDEs and returns
	 * -ECANCELED once it is true (a profiler being closed). */
	const atomic_bool *cancel;
	/* In: the file's memory account (NULL: unlimited). What the build
	 * reads and allocates (section copies, FDE lists, spans, rows) is
	 * charged to it before it is allocated; a refused charge ends the build
	 * with -EDQUOT and UNWIND_ST_OVER_BUDGET. The table's rows stay charged
	 * until unwind_table_free(). */
	struct mem_account *acct;
	uint64_t mem_peak; /* out: most bytes the build had charged */
};

struct unwind_table {
	struct unwind_row *rows; /* sorted by pc, strictly increasing */
	size_t nrows;
	uint64_t entry;		  /* ELF e_entry (file vaddr), 0 if none */
	struct mem_account *acct; /* rows charged here (given back by */
	uint64_t charged;	  /* unwind_table_free) */
};

/*
 * Build the table for the ELF file open at `fd` (read with pread; the fd's
 * offset is not used). Returns 0 or a negative errno: -ENOEXEC (not a
 * 64-bit little-endian x86_64 or aarch64 ET_EXEC/ET_DYN ELF with an executable
 * PT_LOAD, or unreadable), -EFBIG (file over UNWIND_MAX_FILE_SIZE),
 * -ENOENT (no .eh_frame/.debug_frame section: use frame pointers),
 * -EDQUOT (over st->acct's budget), -ENOMEM, or fstat's errno. Corrupt or
 * hostile CFI is not an error: it is skipped and counted in `st` (may be NULL;
 * else zeroed or with its "in" fields set: cancel, acct). On success free `out`
 * with unwind_table_free(); on failure `out` is empty.
 */
int unwind_table_build_fd(int fd, struct unwind_table *out,
			  struct unwind_table_stats *st);

/* Same, from an ELF image in memory (e.g. the vDSO); not modified.
 * -EINVAL for a NULL buffer. */
int unwind_table_build_mem(const void *buf, size_t len,
			   struct unwind_table *out,
			   struct unwind_table_stats *st);

/* Row covering `pc` (file vaddr), or NULL if pc is below the first row. */
const struct unwind_row *unwind_table_lookup(const struct unwind_table *t,
					     uint64_t pc);

void unwind_table_free(struct unwind_table *t);

#endif /* OTELPROF_UNWIND_TABLE_H */
