/* SPDX-License-Identifier: Apache-2.0 */
/*
 * V8 isolates in processes (Node.js): finds the binary exporting V8's
 * postmortem metadata (v8dbg_*) in a process's mappings, reads V8's
 * layout from it (v8_layout.h), tells the BPF walker where V8's code is
 * and how its frames are laid out (v8_procs), and names the JavaScript
 * frames BPF reports: JSFunction -> SharedFunctionInfo -> name, script,
 * line (v8_heap.h); cached per SharedFunctionInfo and checked again
 * (functions are moved and collected, their memory reused).
 */
#ifndef OTELPROF_RUNTIMES_V8_TRACKER_H
#define OTELPROF_RUNTIMES_V8_TRACKER_H

#include <stdbool.h>
#include <stdint.h>

#include "process/process_table.h"
#include "runtimes/runtime.h"
#include "runtimes/v8/v8_heap.h"
#include "runtimes/v8/v8_layout.h"
#include "util/mem_budget.h"

struct file_cache;

#define V8_FN_CACHE	1024 /* functions named, per process */
#define V8_POS_CACHE	2048 /* frames' positions, per process */
#define V8_SCRIPT_CACHE 64   /* scripts' line starts, per process */
#define V8_INLINE_CACHE 128  /* frames' inlined functions, per process */
#define V8_RECHECK_NS	(1000ull * 1000 * 1000)
#define V8_OPEN_TRIES	20
#define V8_MAX_CODE	4 /* OTELPROF_V8_RANGES */

struct v8_fn_entry {
	uint64_t sfi, name_or_scope_info, script, source;
	uint64_t checked_ns;
	uint32_t start_line; /* 0: unknown */
	int32_t start, end;  /* its source positions, -1: unknown */
	bool ok;
	char name[V8_NAME_MAX], file[V8_NAME_MAX];
};

/* The source position of a frame at pc of a JSFunction's code. */
struct v8_pos_entry {
	uint64_t fn, pc, checked_ns;
	uint32_t line; /* 0: unknown */
	bool inlined;  /* in functions the code inlined: v8_inline_entry */
};

/* The functions a frame's code inlined at its pc, innermost first, and
 * the line each is at (0: unknown). */
struct v8_inline_entry {
	uint64_t fn, pc, checked_ns;
	uint32_t n;
	uint64_t sfi[V8_INLINE_MAX];
	uint32_t line[V8_INLINE_MAX];
};

struct v8_script_entry {
	uint64_t script, source;
	uint64_t used_ns; /* last looked up: the older of two ways goes */
	uint32_t *starts, n;
	bool ok;
};

struct v8_process {
	struct v8_layout l;
	uint32_t pid; /* read context */
	bool ready, reported, in_kernel;
	uint32_t tries;
	uint64_t builtins[2][2]; /* [low, high) of the embedded blob's
				    copies (the binary's, V8's remap) */
	uint32_t nbuiltins;
	uint64_t blob_vaddr, blob_size; /* in the binary's ELF */
	uint64_t code[V8_MAX_CODE][2];
	uint32_t ncode, nbuiltin;
	struct mem_account account;
	struct v8_fn_entry fns[V8_FN_CACHE];
	struct v8_script_entry scripts[V8_SCRIPT_CACHE];
	struct v8_pos_entry pos[V8_POS_CACHE];
	struct v8_inline_entry inl[V8_INLINE_CACHE];
	struct v8_dispatch dispatch;
	struct v8_code_memo memo; /* 33 KiB */
};

struct v8_counters {
	uint64_t found, unknown, read_errors, stale_frames, map_errors, waited;
	uint64_t lines, lines_unknown; /* frames given a line at the pc, not */
	uint64_t inlined; /* functions named inside optimized code */
};

struct v8_tracker {
	struct process_table *procs;
	struct file_cache *files;
	struct runtime_programs *progs;
	mem_read_fn read_mem;
	struct v8_counters counters;
	char name[V8_NAME_MAX + 16];
	/* the frame named last: what its code inlined (copied, as naming
	 * one function may evict another from the cache) */
	struct runtime_inline named_inl[V8_INLINE_MAX];
	char inl_name[V8_INLINE_MAX][V8_NAME_MAX];
	char inl_file[V8_INLINE_MAX][V8_NAME_MAX];
};

extern const struct runtime_ops v8_runtime;

/* The frame of pair {word0, word1} (OTELPROF_V8_* encoding) of p, named
 * from its memory; false if it cannot be (the native frame stays). */
bool v8_frame(struct v8_tracker *t, struct process *p, uint64_t word0,
	      uint64_t word1, uint64_t now_ns, struct runtime_frame *out);

#endif
