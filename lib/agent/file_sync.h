/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-file steps of lib/agent/file_sync.c over the stages a file
 * passes through, as the agent holds them (tests that run the unwinder
 * without the agent hold their own: test/unit/unwind_alone.c).
 */
#ifndef OTELPROF_AGENT_FILE_SYNC_H
#define OTELPROF_AGENT_FILE_SYNC_H

#include <stdbool.h>

#include "filestore/file_cache.h"
#include "process/process_table.h"
#include "unwind/process_unwind.h"

struct file_stages {
	struct process_table *procs;
	struct file_table *files;
	struct file_cache *symfiles;
	struct process_unwind *unwinder;
};

/* The file behind mapping m of proc, resolved once: opened through the
 * process and identified; a file new to the table is read by every
 * stage (symbols, then its unwind table). NULL: none (not a file, not
 * readable, refused; or the loader's queue is full: proc->loads_deferred,
 * tried again later). */
struct file *file_stages_resolve(const struct file_stages *st,
				 struct process *proc, struct proc_mapping *m);
/* Every mapping of proc not resolved yet, within the pass's slice (the
 * rest: proc->loads_deferred). */
void file_stages_resolve_all(const struct file_stages *st,
			     struct process *proc);
/* The symbols of evicted file (mapped by m of proc) read again if due.
 * True: read. */
bool file_stages_reload(const struct file_stages *st, struct process *proc,
			const struct proc_mapping *m, struct elf_file *file);
/* Source lines of file (mapped by m of proc) read. True: read. */
bool file_stages_lines(const struct file_stages *st, struct process *proc,
		       const struct proc_mapping *m, struct elf_file *file,
		       bool go);
/* The files the table let go: each stage forgets them, then they are
 * freed. */
void file_stages_forget_gone(const struct file_stages *st);
/* The loads the loader thread finished: each file's unwind table, the
 * file marked changed. Returns how many. */
int file_stages_take_loads(const struct file_stages *st);

#endif
