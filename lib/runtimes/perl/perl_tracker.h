/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Perl interpreters in processes: finds the file a process runs Perl
 * from (one named like perl that defines Perl_runops_standard: the
 * executable, as Debian links it, or libperl.so), checks its version and
 * struct interpreter size against a known layout (perl_layout.h), finds
 * where the thread's interpreter lives (the TLS variable
 * PL_current_context of threaded builds, 5.36+), tells the BPF walk
 * (perl_procs), and names the frames it reports (perl_reader.h).
 */
#ifndef OTELPROF_RUNTIMES_PERL_TRACKER_H
#define OTELPROF_RUNTIMES_PERL_TRACKER_H

#include <stdbool.h>
#include <stdint.h>

#include "runtimes/perl/perl_layout.h"
#include "runtimes/perl/perl_reader.h"
#include "runtimes/runtime.h"

struct perl_process {
	const struct perl_layout *layout; /* NULL: not (yet) usable */
	struct otelprof_perl_proc bpf;	  /* its perl_procs entry */
	bool in_kernel;
	bool unknown_reported; /* looked at once, not usable */
	uint32_t pid;	       /* read_ctx of the reader */
	struct perl_reader reader;
};

struct perl_counters {
	uint64_t found;		   /* processes with a known Perl */
	uint64_t unknown_versions; /* once per process */
	uint64_t map_errors;	   /* kernel map updates that failed */
	uint64_t waited;	   /* found while the walk program loaded */
	uint64_t read_errors;	   /* of processes gone (live ones: theirs) */
};

struct perl_tracker {
	struct process_table *procs;
	struct file_cache *files;
	struct runtime_programs *progs; /* NULL: userspace only (tests) */
	mem_read_fn read_mem;
	struct perl_counters counters;
};

/* The runtime protocol's entry (runtimes/runtime.h). */
extern const struct runtime_ops perl_runtime;

#endif
