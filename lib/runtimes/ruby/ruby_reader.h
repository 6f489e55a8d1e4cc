/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What is read from a Ruby process's memory, every read bounded and
 * failing soft (counted): where its VM keeps the running thread's state
 * (ruby_identify, from the library's exported symbols and code), and the
 * name, file and line of the {iseq, pc} frames the BPF walk reports
 * (ruby_frame), cached per iseq and checked again every second (iseqs are
 * collected and their memory reused). No kernel and no process table
 * here: the fuzz target drives it with fake memory.
 */
#ifndef OTELPROF_RUNTIMES_RUBY_READER_H
#define OTELPROF_RUNTIMES_RUBY_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "process/process_memory.h"
#include "runtimes/ruby/ruby_layout.h"
#include "runtimes/runtime.h"
#include "util/idxmap.h"
#include "util/mem_budget.h"

#define RUBY_CACHE_BUDGET (8u << 20) /* per process */
#define RUBY_RECHECK_NS	  (1000ull * 1000 * 1000)
#define RUBY_LINE_CACHE	  256 /* {iseq, pc} -> line, per process */
/* The exported functions C code calls Ruby methods through (rb_funcall
 * and its kin, ruby_call_names) */
#define RUBY_CALLS 9
extern const char *const ruby_call_names[RUBY_CALLS];

struct ruby_iseq {
	uint64_t addr;
	uint64_t body, label_ptr, path_ptr; /* to recheck identity */
	uint64_t encoded, insn_info, succ;
	uint32_t iseq_size, insn_info_size;
	uint32_t type;	     /* enum iseq_type */
	uint64_t local_iseq; /* a block's method (or top) */
	char *name, *file;
	uint32_t first_line;
	uint64_t checked_ns;
	uint32_t bytes; /* charged for it */
	bool ok;
	/* The method's name with its class (Foo::Bar#baz, Foo.baz; a
	 * block's: block in Foo::Bar#baz) for method entry qual_me; NULL:
	 * the label alone. */
	uint64_t qual_me;
	uint64_t qual_at; /* the method entry itself (qual_me may hold it) */
	char *qual;
	bool cfunc; /* a C function's entry: addr is its method entry | 1 */
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
	bool jit_step; /* YJIT's frames go to the walk's JIT step */
	/* rb_vm_exec's code (runtime addresses; 0: not found): each run of
	 * Ruby frames goes above the native frame there */
	uint64_t loop_lo, loop_hi;
	/* The code of ruby_call_names (runtime addresses; 0: not found): a
	 * C function called from C goes above the native frame there */
	uint64_t call_lo[RUBY_CALLS], call_hi[RUBY_CALLS];
	/* The symbol table's last serial and ids Array (runtime addresses;
	 * 0: not found, C functions are then left out) */
	uint64_t sym_last_id, sym_ids;
	/* 3.1: the IDs of __classpath__ and __attached__ (0: not seen yet),
	 * found by name in the classes' instance variable tables */
	uint64_t id_classpath, id_attached;
	struct mem_account account;
	struct idxmap index; /* iseq address -> iseqs[] */
	struct ruby_iseq *iseqs;
	uint32_t niseqs, cap;
	size_t bytes;
	struct ruby_line lines[RUBY_LINE_CACHE];
	/* The method entry reported before the iseq it is for (the walk's
	 * {me | OTELPROF_RUBY_ME_TAG, iseq} pair), until that frame. */
	uint64_t pending_me, pending_iseq;
};

struct ruby_counters {
	uint64_t found, unknown, read_errors, over_budget, map_errors, waited;
};

struct ruby_reader {
	mem_read_fn read_mem; /* process_memory_read, or a fake; its
				 context is a uint32_t pid */
	struct ruby_counters counters;
};

/* What the library (or executable) exports: ELF values, 0 if absent. */
struct ruby_symbols {
	uint64_t version, thread_current, current_ec;
	uint64_t vm_exec, iseq_eval, iseq_eval_main;
	uint64_t id2str;
	uint64_t yjit_init;	    /* built with YJIT (3.2+) */
	uint64_t calls[RUBY_CALLS]; /* ruby_call_names */
	/* ruby_current_ec's TLS relocation where the library exports it
	 * (3.1; kind 0: none): where rb_thread_current's code says nothing
	 * known (aarch64's TLS descriptor sequence) */
	struct otelprof_tls_loc ec_loc;
};

struct ruby_process *ruby_process_new(uint32_t pid, struct mem_budget *budget);
void ruby_process_free(struct ruby_process *rp);

/* The layout, TLS location and loop of the Ruby whose symbols are s,
 * loaded at bias in rp's process; false if it is not usable (the caller
 * reports it once). */
bool ruby_identify(struct ruby_reader *r, struct ruby_process *rp,
		   const struct ruby_symbols *s, uint64_t bias);

/* Function and line of frame {iseq, pc}; false if the iseq cannot be
 * read (the frame is then left out). A method entry pair ({me | tag,
 * iseq}) is kept for the frame that follows it and names nothing (false).
 * A C function's pair ({me | tag, 0}) is named from its method entry
 * (Integer#times; no file, line 0).
 * Strings live until the next call for the process. */
bool ruby_frame(struct ruby_reader *r, struct ruby_process *rp, uint64_t iseq,
		uint64_t pc, uint64_t now_ns, struct runtime_frame *out);

#endif
