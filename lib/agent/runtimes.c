// SPDX-License-Identifier: Apache-2.0
/*
 * The runtimes walked in the kernel: one line each (runtimes/runtime.h
 * says what a runtime implements; docs/architecture.md how to add one).
 * The agent calls them in this order.
 */
#include "agent/agent.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const struct runtime_ops *ops;
	size_t state; /* where its tracker lives in struct otelprof */
} runtimes[] = {
	{&cpython_runtime, offsetof(struct otelprof, interp)},
	{&hotspot_runtime, offsetof(struct otelprof, jvm)},
};

#define NRUNTIMES (sizeof(runtimes) / sizeof(runtimes[0]))

static void *state_of(struct otelprof *p, size_t i)
{
	return (char *)p + runtimes[i].state;
}

/* Is name in the comma list (or the list "all")? */
static bool listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	if (!strcmp(list, "all"))
		return true;
	for (const char *c = list; (c = strstr(c, name)); c += n)
		if ((c == list || c[-1] == ',') &&
		    (c[n] == '\0' || c[n] == ','))
			return true;
	return false;
}

void agent_runtimes_init(struct otelprof *p)
{
	/* OTELPROF_LOAD_RUNTIMES=all (or "cpython,hotspot"): load those
	 * programs at start, for the kernel matrix, which verifies every
	 * program on every kernel, and for the start-up benchmark's
	 * comparison with loading everything. */
	const char *load = getenv("OTELPROF_LOAD_RUNTIMES");

	for (size_t i = 0; i < NRUNTIMES; i++) {
		const struct runtime_ops *rt = runtimes[i].ops;

		rt->init(state_of(p, i), &p->procs, &p->symfiles, &p->programs);
		if (load && listed(load, rt->name))
			runtime_programs_want(&p->programs, rt->id,
					      &rt->program);
	}
}

void agent_runtimes_sync(struct otelprof *p, struct process *proc,
			 const struct process_change *c)
{
	for (size_t i = 0; i < NRUNTIMES; i++)
		runtimes[i].ops->sync(state_of(p, i), proc, c);
}

void agent_runtimes_forget(struct otelprof *p, struct process *proc)
{
	for (size_t i = 0; i < NRUNTIMES; i++)
		runtimes[i].ops->forget(state_of(p, i), proc);
}

void agent_runtimes_loaded(struct otelprof *p)
{
	uint32_t done = runtime_programs_take_finished(&p->programs);

	for (size_t i = 0; done && i < NRUNTIMES; i++)
		if (done & (1u << runtimes[i].ops->id))
			runtimes[i].ops->kernel_ready(state_of(p, i));
}

void agent_runtimes_free(struct otelprof *p)
{
	for (size_t i = 0; i < NRUNTIMES; i++)
		runtimes[i].ops->free(state_of(p, i));
}
