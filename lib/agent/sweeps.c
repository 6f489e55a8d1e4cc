// SPDX-License-Identifier: Apache-2.0
/* The drain thread's periodic work besides events: dropping what exited,
 * and following CPUs that come and go. */
#include "agent/agent.h"
#include "util/clock.h"

#define SWEEP_INTERVAL_NS (10ull * 1000 * 1000 * 1000)
#define FILE_LINGER_NS	  (60ull * 1000 * 1000 * 1000)
/* Source lines of a file no sample needed for this long are freed. */
#define LINES_IDLE_NS (30ull * 1000 * 1000 * 1000)
/* CPUs coming online are sampled within this (plus the drain tick). */
#define CPU_CHECK_NS (500ull * 1000 * 1000)

/* Drop exited processes and files no process maps any more. Run by the
 * drain thread, not only at polls: a caller that polls rarely (the CLI
 * polls once, at the end) must not keep every process it ever saw. Safe
 * mid-window: the builder holds copies, the stack cache is keyed by the
 * never-reused process serial. */
void agent_sweep_if_due(struct otelprof *p)
{
	uint64_t now = boot_ns();

	if (now - p->last_sweep_ns <= SWEEP_INTERVAL_NS)
		return;
	p->last_sweep_ns = now;
	process_table_sweep(&p->procs, now - SWEEP_INTERVAL_NS);
	/* Freed before the file sweep: their mappings hold their files. */
	agent_sync_processes(p);
	/* Files of exited processes linger a minute for the next exec of
	 * the same binary. */
	file_table_sweep(&p->files, FILE_LINGER_NS);
	agent_forget_gone_files(p);
	/* Files of processes still running count as used (their stacks may
	 * all be in the stack cache). */
	process_table_stamp_files(&p->procs);
	file_cache_drop_idle_lines(&p->symfiles, now, LINES_IDLE_NS);
	p->trim_due = true;
}

/* CPU hotplug: a uevent says at once; the online mask is looked at every
 * CPU_CHECK_NS as well (no uevents in another network namespace). Under
 * state_lock because stop detaches under it. */
void agent_watch_cpus(struct otelprof *p)
{
	uint64_t now = mono_ns();

	if (p->uevents_ready) {
		p->uevents_ready = false;
		bpf_sampler_handle_uevents(p->sampler);
	}
	if (now - p->last_cpu_check_ns < CPU_CHECK_NS)
		return;
	p->last_cpu_check_ns = now;
	bpf_sampler_sync_cpus(p->sampler, NULL);
}
