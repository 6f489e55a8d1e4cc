/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PHP processes (CLI, FPM, the embed SAPI): finds the Zend engine a
 * process maps (a file named like php that defines execute_ex and exports
 * executor_globals), picks its version's layout (the binary's version
 * string), tells the BPF walk where the executor's current frame is
 * (php_procs), and names the functions the walk reports, read from the
 * process's memory: bounded reads that fail soft (counted), cached per
 * function and checked again every second (functions die with their
 * request, and their memory is reused).
 */
#ifndef OTELPROF_RUNTIMES_PHP_TRACKER_H
#define OTELPROF_RUNTIMES_PHP_TRACKER_H

#include <stdbool.h>
#include <stdint.h>

#include "process/process_memory.h"
#include "process/process_table.h"
#include "runtimes/php/php_layout.h"
#include "runtimes/runtime.h"
#include "util/idxmap.h"
#include "util/mem_budget.h"

struct file_cache;

#define PHP_CACHE_BUDGET (4u << 20) /* per process */
#define PHP_RECHECK_NS	 (1000ull * 1000 * 1000)

struct php_cached_function {
	uint64_t addr;
	uint64_t name_ptr, scope_ptr, file_ptr; /* to recheck identity */
	uint8_t type;
	uint32_t line_start, line_end;
	char *name, *file; /* file NULL: internal */
	uint64_t checked_ns;
	uint32_t bytes; /* charged for it */
	bool ok;	/* a readable function */
};

struct php_process {
	const struct php_layout *layout; /* NULL: not found (yet) */
	unsigned major, minor, release;
	uint64_t current_execute_data; /* runtime address */
	/* a return address inside execute_ex's body (its middle), for the
	 * JIT step; 0: unknown */
	uint64_t vm_body_pc;
	uint64_t jit_start, jit_end; /* opcache's JIT buffer, 0: none seen */
	bool in_kernel;
	bool unknown_reported;
	struct mem_account account;
	struct idxmap index;
	struct php_cached_function *funcs;
	uint32_t nfuncs, cap;
	size_t bytes;
	char name[2 * PHP_NAME_MAX + 16]; /* the last frame's name */
};

struct php_counters {
	uint64_t found;		   /* processes with a known version */
	uint64_t unknown_versions; /* once per process */
	uint64_t read_errors;	   /* functions or strings unreadable */
	uint64_t over_budget;	   /* functions not kept: memory budget */
	uint64_t map_errors;	   /* kernel map updates that failed */
	uint64_t waited;	   /* found while the walk program loaded */
};

struct php_tracker {
	struct process_table *procs;
	struct file_cache *files;
	struct runtime_programs *progs; /* NULL: userspace only (tests) */
	mem_read_fn read_mem;
	struct php_counters counters;
};

/* The runtime protocol's entry (runtimes/runtime.h). */
extern const struct runtime_ops php_runtime;

/* Name of PHP frame {word0, word1} of process p (the walk's pair);
 * false: not named. Strings live until the next call for p. */
bool php_frame(struct php_tracker *t, struct process *p, uint64_t word0,
	       uint64_t word1, uint64_t now_ns, struct runtime_frame *out);

#endif
