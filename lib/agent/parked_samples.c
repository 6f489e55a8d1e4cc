// SPDX-License-Identifier: Apache-2.0
/*
 * Stack-copy samples held, in order, while a table they need is built on
 * the unwinder's worker: resolved once it is installed, or as they are
 * after MAX_PARK_NS.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "util/clock.h"

struct parked_sample {
	struct parked_sample *next;
	uint64_t since_ns;
	size_t size;
	unsigned char data[];
};

#define MAX_PARKED  1024			/* 8 MiB of copies */
#define MAX_PARK_NS (5ull * 1000 * 1000 * 1000) /* then unwind as is */

bool agent_park(struct otelprof *p, const void *data, size_t size)
{
	struct parked_sample *ps;

	if (p->nparked >= MAX_PARKED || atomic_load(&p->stopping))
		return false;
	ps = malloc(sizeof(*ps) + size);
	if (!ps)
		return false;
	ps->next = NULL;
	ps->since_ns = mono_ns();
	ps->size = size;
	memcpy(ps->data, data, size);
	if (p->parked_tail)
		p->parked_tail->next = ps;
	else
		p->parked = ps;
	p->parked_tail = ps;
	p->nparked++;
	return true;
}

/* All of them once a table was installed (those still waiting park
 * again), or those held too long, as far as the drain pass's slice goes
 * (1024 stack copies to unwind and symbolize: 50 ms); the rest, still
 * first in line, in the next pass. force: everything, as is. */
void agent_replay_parked(struct otelprof *p, bool installed, bool force)
{
	struct parked_sample *ps = p->parked;
	uint64_t now = mono_ns();
	uint32_t done = 0;

	if (!ps || (!installed && !force && !p->replay_pending &&
		    now - ps->since_ns < MAX_PARK_NS))
		return;
	p->replay_pending = false;
	p->parked = p->parked_tail = NULL;
	p->nparked = 0;
	while (ps) {
		struct parked_sample *next = ps->next;
		bool may_park = !force && now - ps->since_ns < MAX_PARK_NS;

		/* One at least, so that a pass whose slice the ring buffer
		 * took still moves them on. */
		if (!force && done++ && process_table_slice_over(&p->procs)) {
			struct parked_sample *last = ps;
			uint32_t n = 1;

			while (last->next) {
				last = last->next;
				n++;
			}
			last->next = p->parked;
			if (!p->parked)
				p->parked_tail = last;
			p->parked = ps;
			p->nparked += n;
			p->replay_pending = true;
			return;
		}
		if (!may_park || !agent_park(p, ps->data, ps->size))
			agent_handle_sample(p, (const void *)ps->data, ps->size,
					    false);
		free(ps);
		ps = next;
	}
}

void agent_free_parked(struct otelprof *p)
{
	while (p->parked) {
		struct parked_sample *next = p->parked->next;

		free(p->parked);
		p->parked = next;
	}
	p->parked_tail = NULL;
	p->nparked = 0;
}
