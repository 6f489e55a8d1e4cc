/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CRuby in processes: finds libruby (or a ruby executable) a process maps,
 * picks its version's layout (ruby_version), finds where the running
 * thread's execution context lives (ruby_current_ec, from the code of
 * rb_thread_current), tells the BPF walk (ruby_procs), and turns the
 * {iseq, pc} pairs it reports into Function and Line, read from the
 * process's memory: bounded reads that fail soft (counted), cached per
 * iseq and checked again every second (iseqs are collected and their
 * memory reused).
 */
#ifndef OTELPROF_RUNTIMES_RUBY_TRACKER_H
#define OTELPROF_RUNTIMES_RUBY_TRACKER_H

#include <stdbool.h>
#include <stdint.h>

#include "process/process_memory.h"
#include "process/process_table.h"
#include "runtimes/ruby/ruby_layout.h"
#include "runtimes/runtime.h"
#include "util/idxmap.h"
#include "util/mem_budget.h"

#define RUBY_CACHE_BUDGET (8u << 20) /* per process */
#define RUBY_RECHECK_NS	  (1000ull * 1000 * 1000)
#define RUBY_LINE_CACHE	  256 /* {iseq, pc} -> line, per process */

struct ruby_iseq {
	uint64_t addr;
	uint64_t body, label_ptr, path_ptr; /* to recheck identity */
	uint64_t encoded, insn_info, succ;
	uint32_t iseq_size, insn_info_size;
	char *name, *file;
	uint32_t first_line;
	uint64_t checked_ns;
	uint32_t bytes; /* charged for it */
	bool ok;
};

struct ruby_line {
	uint64_t iseq, pc;
	uint32_t line;
};

struct ruby_process {
	uint32_t pid;
	const struct ruby_layout *layout; /* NULL: not usable */
	struct otelprof_ruby_proc walk;	  /* what the kernel gets */
	bool in_kernel;
	bool unknown_reported;
	/* rb_vm_exec's code (runtime addresses; 0: not found): each run of
	 * Ruby frames goes above the native frame there */
	uint64_t loop_lo, loop_hi;
	struct mem_account account;
	struct idxmap index; /* iseq address -> iseqs[] */
	struct ruby_iseq *iseqs;
	uint32_t niseqs, cap;
	size_t bytes;
	struct ruby_line lines[RUBY_LINE_CACHE];
};

struct ruby_counters {
	uint64_t found, unknown, read_errors, over_budget, map_errors, waited;
};

struct ruby_tracker {
	struct process_table *procs;
	struct file_cache *files;
	struct runtime_programs *progs; /* NULL: userspace only (tests) */
	mem_read_fn read_mem;		/* process_memory_read, or a fake */
	struct ruby_counters counters;
	/* per-process state, by pid */
	struct idxmap by_pid;
	struct ruby_process **rp;
	uint32_t nrp, caprp;
};

/* The runtime protocol's entry (runtimes/runtime.h). */
extern const struct runtime_ops ruby_runtime;

void ruby_tracker_init(struct ruby_tracker *t, struct process_table *procs,
		       struct file_cache *files,
		       struct runtime_programs *progs);
void ruby_tracker_free(struct ruby_tracker *t);

/* The state of a Ruby process found with layout l (for tests and the
 * fuzz target: sync does this from the binary). */
struct ruby_process *ruby_process_add(struct ruby_tracker *t, uint32_t pid,
				      const struct ruby_layout *l);

/* Function and line of frame {iseq, pc} of process pid; false if the
 * iseq cannot be read (the frame is then left out). Strings live until
 * the next call for the process. */
bool ruby_frame(struct ruby_tracker *t, uint32_t pid, uint64_t iseq,
		uint64_t pc, uint64_t now_ns, struct runtime_frame *out);

#endif
