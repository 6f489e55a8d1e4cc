/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JIT symbol files of one process: its perf map (/tmp/perf-PID.map
 * inside the process's root, PID as the process sees itself in its own
 * pid namespace) and a jitdump file it maps (jit-PID.dump). Both are
 * written by the process, so they are opened without following a final
 * symlink, without blocking (O_NONBLOCK: a FIFO in their place must not
 * stall us) and only if regular; read incrementally as they grow, at most
 * JIT_READ_CHUNK bytes per refresh and JIT_FILE_MAX in all, into a
 * per-process byte budget.
 */
#ifndef OTELPROF_SYMBOLIZE_JIT_PROCESS_H
#define OTELPROF_SYMBOLIZE_JIT_PROCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "process/proc_maps.h"
#include "symbolize/jit_symbols.h"

#define JIT_READ_CHUNK	   (4u << 20)
#define JIT_FILE_MAX	   (256ull << 20)
#define JIT_PROCESS_BUDGET (32u << 20)
/* A lookup that finds no name looks at the files again at most this often. */
#define JIT_REFRESH_NS (200ull * 1000 * 1000)

struct jit_source {
	struct jit_symbols syms;
	uint64_t dev, ino; /* of the file read so far (0: none) */
	uint64_t off;	   /* bytes consumed */
	bool present;
};

struct jit_process {
	struct mem_account account; /* both files' entries, charged to the
				       global budget for file-derived data */
	uint32_t nspid;		    /* 0 until known */
	uint64_t next_refresh_ns;
	struct jit_source map, dump;
};

struct jit_stats {
	uint64_t bad_entries; /* malformed lines/records skipped */
	uint64_t over_budget; /* entries dropped for the memory budget */
	uint64_t refused;     /* files refused (not regular, unreadable) */
};

void jit_process_free(struct jit_process *j);
/* The name of pc in process pid, whose executable mappings are maps, or
 * NULL. What is kept is charged to budget (NULL: only the per-process
 * limit). Reads the files (once per JIT_REFRESH_NS) when pc has no name
 * yet. proc_root is "/proc" (tests point it elsewhere). *jp is created on
 * first use. The string lives until the next call for this process. */
const char *jit_process_lookup(struct jit_process **jp, const char *proc_root,
			       uint32_t pid, const struct proc_maps *maps,
			       uint64_t pc, uint64_t now_ns,
			       struct mem_budget *budget, struct jit_stats *st);
/* The pid a process has in its own (innermost) pid namespace, from the
 * text of /proc/PID/status ("NSpid:" line, last field); 0 if absent. */
uint32_t proc_status_parse_nspid(const char *text, size_t len);
size_t jit_process_memory(const struct jit_process *j);

#endif
