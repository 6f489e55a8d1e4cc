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
 *   kernel_ready  that runtime's program finished loading: write the
 *                 processes that waited for it
 *   forget        a process is about to be freed: its kernel entries and
 *                 its state go
 *   free          at close
 *
 * Naming the frames a runtime's walk reports is the symbolizer's (it
 * knows where each runtime's frames go in a stack); its counters are the
 * tracker's own, copied into otelprof_stats by lib/agent/stats.c.
 */
#ifndef OTELPROF_RUNTIMES_RUNTIME_H
#define OTELPROF_RUNTIMES_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "sample/runtime_programs.h"

struct process;
struct process_change;
struct process_table;
struct file_cache;

struct runtime_ops {
	const char *name;
	uint32_t id;	 /* enum otelprof_runtime: its walk_progs slot */
	uint8_t mode;	 /* enum otelprof_runtime_mode */
	uint8_t copy_kb; /* stack copy of its processes, 0: the whole */
	struct runtime_program_def program; /* its BPF object */
	void (*init)(void *rt, struct process_table *procs,
		     struct file_cache *files, struct runtime_programs *progs);
	void (*sync)(void *rt, struct process *p,
		     const struct process_change *c);
	void (*kernel_ready)(void *rt);
	void (*forget)(void *rt, struct process *p);
	void (*free)(void *rt);
};

#endif
