// SPDX-License-Identifier: Apache-2.0
/*
 * The runtimes walked in the kernel: one line each, the runtime and the
 * frame type its frames carry on the wire (runtimes/runtime.h says what
 * a runtime implements; docs/architecture.md how to add one). The agent
 * calls them in this order.
 */
#include "agent/agent.h"
#include "runtimes/cpython/interp_tracker.h"
#include "runtimes/hotspot/hotspot_tracker.h"
#include "runtimes/perl/perl_tracker.h"
#include "runtimes/php/php_tracker.h"
#include "runtimes/ruby/ruby_tracker.h"
#include "runtimes/v8/v8_tracker.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const struct runtime_ops *ops;
	uint8_t frame_kind; /* enum frame_kind */
} runtimes[] = {
	{&cpython_runtime, FRAME_CPYTHON}, {&hotspot_runtime, FRAME_JVM},
	{&perl_runtime, FRAME_PERL},	   {&php_runtime, FRAME_PHP},
	{&ruby_runtime, FRAME_RUBY},	   {&v8_runtime, FRAME_V8JS},
};

#define NRUNTIMES (sizeof(runtimes) / sizeof(runtimes[0]))
_Static_assert(NRUNTIMES <= AGENT_MAX_RUNTIMES, "too many runtimes");

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

int agent_runtimes_init(struct otelprof *p)
{
	/* OTELPROF_LOAD_RUNTIMES=all (or "cpython,hotspot"): load those
	 * programs at start, for the kernel matrix, which verifies every
	 * program on every kernel, and for the start-up benchmark's
	 * comparison with loading everything. */
	const char *load = getenv("OTELPROF_LOAD_RUNTIMES");

	for (size_t i = 0; i < NRUNTIMES; i++) {
		const struct runtime_ops *rt = runtimes[i].ops;

		p->runtimes[i] = calloc(1, rt->state_size);
		if (!p->runtimes[i])
			return -ENOMEM;
		rt->init(p->runtimes[i], &p->procs, &p->symfiles, &p->programs);
		/* Its frames are named by the symbolizer, placed by its
		 * mode. */
		stack_symbolizer_add_runtime(&p->symbolizer, rt, p->runtimes[i],
					     runtimes[i].frame_kind);
		if (load && listed(load, rt->name))
			runtime_programs_want(&p->programs, rt->id,
					      &rt->program);
	}
	return 0;
}

void agent_runtimes_sync(struct otelprof *p, struct process *proc,
			 const struct process_change *c)
{
	for (size_t i = 0; i < NRUNTIMES; i++)
		if (p->runtimes[i])
			runtimes[i].ops->sync(p->runtimes[i], proc, c);
}

void agent_runtimes_forget(struct otelprof *p, struct process *proc)
{
	for (size_t i = 0; i < NRUNTIMES; i++)
		if (p->runtimes[i])
			runtimes[i].ops->forget(p->runtimes[i], proc);
}

void agent_runtimes_loaded(struct otelprof *p)
{
	uint32_t done = runtime_programs_take_finished(&p->programs);

	for (size_t i = 0; done && i < NRUNTIMES; i++) {
		if (!p->runtimes[i] || !(done & (1u << runtimes[i].ops->id)))
			continue;
		/* The processes that waited for the program go in now. */
		for (uint32_t k = 0; k < p->procs.nslots; k++)
			if (p->procs.procs[k])
				runtimes[i].ops->kernel_ready(
					p->runtimes[i], p->procs.procs[k]);
	}
}

void agent_runtimes_counters(struct otelprof *p, struct runtime_counters *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (size_t i = 0; i < NRUNTIMES; i++) {
		struct runtime_counters c;

		if (!p->runtimes[i])
			continue;
		runtimes[i].ops->counters(p->runtimes[i], &c);
		sum->found += c.found;
		sum->debug_offsets += c.debug_offsets;
		sum->unknown += c.unknown;
		sum->map_errors += c.map_errors;
		sum->frame_errors += c.frame_errors;
		sum->waited += c.waited;
	}
}

void agent_runtimes_free(struct otelprof *p)
{
	for (size_t i = 0; i < NRUNTIMES; i++) {
		if (!p->runtimes[i])
			continue;
		runtimes[i].ops->free(p->runtimes[i]);
		free(p->runtimes[i]);
		p->runtimes[i] = NULL;
	}
}
