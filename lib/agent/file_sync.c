// SPDX-License-Identifier: Apache-2.0
/*
 * What the stages keep of each file: the one step that resolves the files
 * a process maps, and the steps for files read later and files gone. The
 * file table, the file cache and the process table call no one; the agent
 * calls the stages here, in this order, because it matters:
 *
 *   resolved  a mapping's file, opened through the process and identified
 *             (lib/files/); if the file table did not know it:
 *            1. file store   its symbols, names, lines (lib/filestore/
 *                            file_cache.c), inline or, for a big file,
 *                            on the loader thread
 *            2. unwinder     its unwind table, built from the same fd and
 *                            loaded into the kernel (lib/unwind/): it
 *                            needs the symbols' load segments; a file read
 *                            on the loader stays pending until "read"
 *   read      3. unwinder     (loader thread done) the table, as in 2; the
 *                            processes mapping it are told afterwards
 *                            (process_sync.c, PROCESS_FILES_READY)
 *   gone      1. unwinder     its rows leave the kernel
 *             2. file store   what it kept goes
 *   before a  process table   the files its recently active processes
 *   load with                 map are stamped used (eviction order)
 *   the budget full
 *
 * A process's files are resolved before its stages sync
 * (agent_sync_processes), within the pass's slice; the stages only read
 * what is resolved. A frame in a file not resolved yet is resolved by the
 * sample pipeline, which then names the stack again.
 */
#include "agent/agent.h"
#include "agent/file_sync.h"

/* The agent's stages. */
static struct file_stages stages_of(struct otelprof *p)
{
	return (struct file_stages){&p->procs, &p->files, &p->symfiles,
				    &p->unwinder};
}

void agent_resolve_files(struct otelprof *p, struct process *proc)
{
	struct file_stages st = stages_of(p);

	file_stages_resolve_all(&st, proc);
}

struct file *agent_resolve_mapping(struct otelprof *p, struct process *proc,
				   struct proc_mapping *m)
{
	struct file_stages st = stages_of(p);

	return file_stages_resolve(&st, proc, m);
}

bool agent_reload_evicted(struct otelprof *p, struct process *proc,
			  const struct proc_mapping *m, struct elf_file *file)
{
	struct file_stages st = stages_of(p);

	return file_stages_reload(&st, proc, m, file);
}

bool agent_load_lines(struct otelprof *p, struct process *proc,
		      const struct proc_mapping *m, struct elf_file *file,
		      bool go)
{
	struct file_stages st = stages_of(p);

	return file_stages_lines(&st, proc, m, file, go);
}

void agent_forget_gone_files(struct otelprof *p)
{
	struct file_stages st = stages_of(p);

	file_stages_forget_gone(&st);
}

int agent_finish_files(struct otelprof *p)
{
	struct file_stages st = stages_of(p);

	process_unwind_take_wakeup(&p->unwinder);
	/* Files read on the loader thread: step 3 for each, then the
	 * processes that map them. */
	if (file_stages_take_loads(&st)) {
		process_table_files_changed(&p->procs);
		agent_sync_processes(p);
	}
	return process_unwind_finish_builds(&p->unwinder);
}

bool agent_files_busy(struct otelprof *p)
{
	return process_unwind_busy(&p->unwinder) ||
	       file_cache_loads_busy(&p->symfiles);
}
