// SPDX-License-Identifier: Apache-2.0
/*
 * What the stages mirror of each process into the kernel, when the process
 * table has read its mappings (first sight, exec, a rescan, file loads
 * resumed in a later slice or finished on the loader thread) or has taken
 * it out. The table calls no one: it notes what changed, and every agent
 * call that can change it is followed by agent_sync_processes, which runs
 * the steps here, in this order, because it matters:
 *
 *   removed   each stage forgets it (a reused pid's new process is synced
 *             after, not before: the kernel entry by pid stays the new
 *             one's), then the table frees it
 *   changed   0. files      the files of its mappings not resolved yet,
 *                           within the pass's slice (file_sync.c); the
 *                           stages below only read what is resolved
 *             1. unwinder   its mappings and unwind tables (lib/unwind/)
 *             2. context    context TLS locations, the published process
 *                           context (lib/context/)
 *             3. runtimes   each runtime of runtimes.c's table (CPython,
 *                           HotSpot, ...: lib/runtimes/), in its order
 *
 * The table tells what changed (struct process_change: a new process, a
 * rescan with the mappings it added and removed, files read since); the
 * context step skips its TLS walk when a rescan added and removed no
 * mapping; the runtimes look at the added mappings only.
 *
 * Rescans come from the events (maps changed: agent.c), the samples (a pc
 * the unwinder or the symbolizer found in no known mapping:
 * sample_pipeline.c) and the context tracker's search for contexts
 * published since (agent_sync_rescans, from the drain pass). No stage asks
 * the table for one itself.
 */
#include "agent/agent.h"

void agent_sync_processes(struct otelprof *p)
{
	struct process_change c;
	struct process *proc;

	while ((proc = process_table_take_removed(&p->procs))) {
		process_unwind_forget(&p->unwinder, proc);
		context_tracker_forget(&p->context, proc);
		agent_runtimes_forget(p, proc);
		stack_symbolizer_forget(&p->symbolizer, proc);
		process_table_release(&p->procs, proc);
	}
	while ((proc = process_table_take_changed(&p->procs, &c))) {
		agent_resolve_files(p, proc);
		process_unwind_sync(&p->unwinder, proc);
		context_tracker_sync(&p->context, proc, &c);
		agent_runtimes_sync(p, proc, &c);
	}
	/* Files the loads above evicted, and those of the processes freed. */
	agent_forget_gone_files(p);
}

void agent_sync_rescans(struct otelprof *p, uint64_t now_ns)
{
	struct process *proc;

	while ((proc = context_tracker_take_rescan(&p->context))) {
		process_table_rescan(&p->procs, proc, now_ns);
		agent_sync_processes(p);
	}
}
