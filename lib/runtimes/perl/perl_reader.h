/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names the {CV, COP} pairs Perl's walk reports, from the process's
 * memory: the sub as Perl prints it (`Pkg::sub`, from the CV's GV and its
 * stash's name), file and line from the COP. Every read is bounded and
 * may fail (the frame is then left out, counted). Names are cached per CV
 * and file names per pointer, in fixed tables (no growth), each entry
 * checked again every second: subs are redefined and freed, and their
 * memory reused.
 */
#ifndef OTELPROF_RUNTIMES_PERL_READER_H
#define OTELPROF_RUNTIMES_PERL_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "process/process_memory.h"
#include "runtimes/perl/perl_layout.h"

#define PERL_NAME_MAX	192 /* "Pkg::sub", cut beyond */
#define PERL_FILE_MAX	256
#define PERL_NAME_SLOTS 256
#define PERL_FILE_SLOTS 64
#define PERL_RECHECK_NS (1000ull * 1000 * 1000)

struct perl_name_slot {
	uint64_t cv, gv; /* gv: what the name was read from (recheck) */
	uint64_t file;	 /* its CvFILE (a char *) */
	uint64_t checked_ns;
	bool ok;
	char name[PERL_NAME_MAX];
};

struct perl_file_slot {
	uint64_t ptr;
	bool gv; /* ptr is a GV (a non-threaded build's COP file) */
	uint64_t checked_ns;
	bool ok;
	char file[PERL_FILE_MAX];
};

struct perl_reader {
	const struct perl_layout *l;
	bool cop_file_gv; /* non-threaded: a COP's file is a GV "_<path" */
	mem_read_fn read;
	void *read_ctx;
	uint64_t read_errors; /* frames, names or files unreadable */
	struct perl_name_slot names[PERL_NAME_SLOTS];
	struct perl_file_slot files[PERL_FILE_SLOTS];
};

struct perl_frame_info {
	const char *name, *file; /* valid until the reader's next call */
	uint32_t line;
};

/* cop_file_gv: a non-threaded build (a COP holds its file's GV). */
void perl_reader_init(struct perl_reader *r, const struct perl_layout *l,
		      bool cop_file_gv, mem_read_fn read, void *read_ctx);

/* Frame {cv, cop} of the walk (cv OTELPROF_PERL_MAIN: the main program);
 * false if the sub cannot be read. A COP that cannot be read leaves file
 * and line empty; COP 0 (a sub entering or leaving) gives the sub's own
 * file and no line. */
bool perl_reader_frame(struct perl_reader *r, uint64_t cv, uint64_t cop,
		       uint64_t now_ns, struct perl_frame_info *out);

#endif
