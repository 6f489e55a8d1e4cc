/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The protocol every runtime walked in the kernel follows (CPython,
 * HotSpot, ...; docs/architecture.md "Adding a runtime"). A runtime is a
 * folder lib/runtimes/NAME/ with its tracker, and its BPF walk in
 * ebpf/runtimes/NAME/NAME.bpf.c; it is one line of the agent's table
 * (lib/agent/runtimes.c). The agent calls, for each runtime of the table:
 *
 *   init          once, with the process table, the file cache and the
 *                 runtime programs' loader
 *   sync          a process was found, rescanned or had files read: find
 *                 the runtime in its mapped files, read its layout, and
 *                 put it in the kernel (its own map, then runtime_procs);
 *                 the first process of a runtime asks for its program
 *                 (runtime_programs_want), which loads on another thread
 *   kernel_ready  that runtime's program finished loading: write
 *                 process p if it waited for it (called for every
 *                 process of the table)
 *   forget        a process is about to be freed: its kernel entries and
 *                 its state go
 *   name_frame    one frame its walk reported (a pair of words in the
 *                 sample, after the native frames; the sample's
 *                 interp_kind is the runtime's id), named from the
 *                 process's memory; where the frame goes in the stack
 *                 the symbolizer decides from the runtime's mode
 *   counters      what it counted, in the shape every runtime shares
 *   free          at close
 *
 * Its state is the agent's to allocate (state_size bytes, zeroed), one per
 * runtime, and handed to every call as `rt`.
 */
#ifndef OTELPROF_RUNTIMES_RUNTIME_H
#define OTELPROF_RUNTIMES_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample/runtime_programs.h"

struct process;
struct process_change;
struct process_table;
struct file_cache;

/* A function a compiled frame inlined, innermost first. */
struct runtime_inline {
	const char *name, *system, *file;
	uint32_t line;
	uint32_t start_line; /* 0: unknown */
};

/* One named frame; its strings are valid until the runtime's next call. */
struct runtime_frame {
	const char *name;   /* Function.name */
	const char *system; /* Function.system_name; NULL: as name */
	const char *file;   /* Function.filename */
	uint32_t start_line, line;
	const struct runtime_inline *inl; /* what compiled code inlined */
	uint32_t ninlined;
};

/* What a runtime counted (otelprof_stats sums every runtime's). */
struct runtime_counters {
	uint64_t found;		/* processes walked in the kernel */
	uint64_t debug_offsets; /* ... whose layout the runtime published */
	uint64_t unknown;	/* processes whose version or layout is not
				   usable: native stacks only */
	uint64_t map_errors;	/* kernel map updates that failed */
	uint64_t frame_errors;	/* frames or code objects unreadable, or
				   over the memory budget */
	uint64_t waited;	/* found while its walk program loaded */
};

struct runtime_ops {
	const char *name;
	uint32_t id;	 /* enum otelprof_runtime: its walk_progs slot, and
			    the interp_kind of the samples it walked */
	uint8_t mode;	 /* enum otelprof_runtime_mode */
	uint8_t copy_kb; /* stack copy of its processes, 0: the whole */
	/* MODE_AFTER: the native function (its interpreter loop) that its
	 * frames go above, each run of them ended by OTELPROF_INTERP_F_LAST
	 * in word 0. MODE_STEP: word 0 holds the native frame's index that
	 * the frame replaces (<< OTELPROF_JVM_INDEX_SHIFT). */
	const char *loop_function;
	size_t state_size;
	struct runtime_program_def program; /* its BPF object */
	void (*init)(void *rt, struct process_table *procs,
		     struct file_cache *files, struct runtime_programs *progs);
	void (*sync)(void *rt, struct process *p,
		     const struct process_change *c);
	void (*kernel_ready)(void *rt, struct process *p);
	void (*forget)(void *rt, struct process *p);
	/* false: not named (the native frame stays, or none is added) */
	bool (*name_frame)(void *rt, struct process *p, uint64_t word0,
			   uint64_t word1, uint64_t now_ns,
			   struct runtime_frame *out);
	void (*counters)(const void *rt, struct runtime_counters *out);
	void (*free)(void *rt);
	/* MODE_AFTER, optional: whether the native frame at pc of p is its
	 * loop, for a loop the symbols do not name (a static function of a
	 * stripped library, found otherwise); NULL: by loop_function only. */
	bool (*is_loop)(void *rt, struct process *p, uint64_t pc);
	/* MODE_AFTER, optional: a run of frames the runtime's native code
	 * called on its own (CRuby's rb_funcall: its walk ends such a run
	 * at a pair call_run says so of) goes above the native frame at pc
	 * that made the call, where is_call says pc is one; not found
	 * there, it goes with the next run, above its loop. */
	bool (*call_run)(uint64_t w0, uint64_t w1);
	bool (*is_call)(void *rt, struct process *p, uint64_t pc);
};

#endif
