/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interpreters in processes (CPython now): finds the interpreter a process
 * maps (a file named like python that defines _PyEval_EvalFrameDefault
 * and exports _PyRuntime), picks its version's layout (Py_Version, else
 * the file name), tells the BPF walker where its state is (interp_procs),
 * and turns the code objects BPF reports into Function and Line, read
 * from the process's memory: bounded reads that fail soft (counted),
 * cached per code object and checked again every second (code objects
 * die and their memory is reused).
 */
#ifndef OTELPROF_INTERP_INTERP_TRACKER_H
#define OTELPROF_INTERP_INTERP_TRACKER_H

#include <stdbool.h>
#include <stdint.h>

#include "process/process_memory.h"
#include "runtimes/cpython/cpython_layout.h"
#include "runtimes/runtime.h"
#include "process/process_table.h"
#include "util/idxmap.h"
#include "util/mem_budget.h"

struct file_cache;

#define CPY_NAME_MAX	  512
#define CPY_LINETABLE_MAX (64u << 10)
#define CPY_CACHE_BUDGET  (8u << 20) /* per process */
#define CPY_RECHECK_NS	  (1000ull * 1000 * 1000)

struct cpython_code {
	uint64_t addr;
	uint64_t name_ptr, file_ptr, table_ptr; /* to recheck identity */
	char *name, *file;
	uint8_t *table;
	uint32_t table_len;
	int32_t first_line;
	uint64_t checked_ns;
	uint32_t bytes; /* charged for it */
	bool ok;	/* a readable code object */
};

struct interp_process {
	const struct cpython_layout *layout; /* &lay once known */
	struct cpython_layout lay;	     /* the version's table, or what its
						_Py_DebugOffsets say (3.13+) */
	bool debug_offsets;	       /* lay came from _Py_DebugOffsets */
	uint64_t runtime, code_type;   /* runtime addresses (code_type 0:
					  not checked) */
	uint64_t loop_lo, loop_hi;     /* _PyEval_EvalFrameDefault in it */
	uint32_t thread_self_below_tp; /* tp - pthread_self() (arm64) */
	bool in_kernel;
	bool unknown_reported;
	/* code object cache, charged to the global budget for data read
	 * from other processes */
	struct mem_account account;
	struct idxmap index;
	struct cpython_code *codes;
	uint32_t ncodes, cap;
	size_t bytes;
};

struct interp_counters {
	uint64_t found;		   /* processes with a known interpreter */
	uint64_t debug_offsets;	   /* ... whose offsets it published */
	uint64_t unknown_versions; /* once per process */
	uint64_t read_errors;	   /* code objects or strings unreadable */
	uint64_t over_budget;	   /* code objects not kept: memory budget */
	uint64_t map_errors;	   /* kernel map updates that failed */
	uint64_t waited;	   /* found while the walk program loaded */
};

struct interp_tracker {
	struct process_table *procs;
	struct file_cache *files; /* the mapped files' symbols */
	/* Loads the walk program; NULL: userspace only (tests). */
	struct runtime_programs *progs;
	mem_read_fn read_mem;
	struct interp_counters counters;
};

/* The runtime protocol's entry (runtimes/runtime.h). */
extern const struct runtime_ops cpython_runtime;

void interp_tracker_init(struct interp_tracker *it, struct process_table *t,
			 struct file_cache *files,
			 struct runtime_programs *progs);
/* p is new, rescanned or has files read since: find its interpreter and
 * tell the kernel where it keeps its state (once: an interpreter does not
 * move). */
void interp_tracker_sync(struct interp_tracker *it, struct process *p,
			 const struct process_change *c);
/* p is about to be freed: drop its kernel entry and its state
 * (p->interp). */
void interp_tracker_forget(struct interp_tracker *it, struct process *p);
/* Also frees the state of the processes still in the table. */
void interp_tracker_free(struct interp_tracker *it);

/* Function and line of interpreter frame {code, instr} of process p;
 * false if the code object cannot be read (the frame is then left out).
 * Strings live until the next call for p. */
struct interp_frame_info {
	const char *name, *file;
	uint32_t start_line, line;
};
bool interp_frame(struct interp_tracker *it, struct process *p, uint64_t code,
		  uint64_t instr, uint64_t now_ns,
		  struct interp_frame_info *out);

#endif
