// SPDX-License-Identifier: Apache-2.0
/*
 * What the stages mirror of each process into the kernel, when the process
 * table has read its mappings (first sight, exec, a rescan, file loads
 * resumed in a later slice) or is about to free it. The order matters:
 *
 *   1. unwinder        its mappings and unwind tables (lib/unwind/); it
 *                      resolves the mapped files. Its step is registered
 *                      by process_unwind_init, which runs before
 *                      agent_sync_start (start_stages in agent.c).
 *   2. context         context TLS locations, the published process
 *                      context (lib/context/): uses the files of step 1
 *   3. interpreter     where a CPython keeps its state (lib/interp/)
 *   4. JVM             the HotSpot tracker's step, registered by
 *                      hotspot_tracker_init after this one
 *
 * Rescans come from the events (maps changed), the samples (a pc in no
 * known mapping) and the context tracker's search for contexts published
 * since (agent_sync_rescans, from the drain pass).
 */
#include "agent/agent.h"

static void on_maps(void *ctx, struct process *proc)
{
	struct otelprof *p = ctx;

	context_tracker_sync(&p->context, proc);
	interp_tracker_sync(&p->interp, proc);
}

static void on_remove(void *ctx, struct process *proc)
{
	struct otelprof *p = ctx;

	context_tracker_forget(&p->context, proc);
	interp_tracker_forget(&p->interp, proc);
}

int agent_sync_start(struct otelprof *p)
{
	struct process_table_hooks h = {p, on_maps, on_remove};

	return process_table_add_hooks(&p->procs, &h);
}

void agent_sync_rescans(struct otelprof *p, uint64_t now_ns)
{
	struct process *proc;

	while ((proc = context_tracker_take_rescan(&p->context)))
		process_table_rescan(&p->procs, proc, now_ns, 0);
}
