// SPDX-License-Identifier: Apache-2.0
/*
 * Off-CPU events come in two halves (ebpf/offcpu.bpf.c): the stack of a
 * thread as it is switched out, then, when it runs again, its switch-in
 * with the switch-out time. The stack waits here, keyed by tid, until its
 * switch-in; the joined event then goes down the sample pipeline with its
 * duration (agent_handle_offcpu). A thread is off CPU at most once at a
 * time, so one entry per tid. Bounded like the kernel's pending map
 * (OTELPROF_OFFCPU_PENDING) and by PENDING_BYTES of events (a stack copy
 * is 9 KiB): beyond, a stack is not kept (counted).
 */
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"

#define PENDING_BUCKETS 4096
/* Events kept at most, in bytes: ~20,000 typical 1.5 KiB stacks. */
#define PENDING_BYTES (32u << 20)

struct pending {
	struct pending *next;
	uint32_t tid;
	uint64_t start_ns; /* the switch-out, as the sample's header says */
	size_t size;
	uint64_t data[]; /* the sample event, as the ring buffer gave it */
};

struct offcpu_pending {
	struct pending *bucket[PENDING_BUCKETS];
	uint32_t n;
	size_t bytes; /* of the events kept */
};

static struct pending **slot(struct offcpu_pending *t, uint32_t tid)
{
	struct pending **at = &t->bucket[(tid * 2654435761u) >> (32 - 12) &
					 (PENDING_BUCKETS - 1)];

	while (*at && (*at)->tid != tid)
		at = &(*at)->next;
	return at;
}

void agent_offcpu_stack(struct otelprof *p, const void *data, size_t size)
{
	const struct otelprof_sample_event *e = data;
	struct offcpu_pending *t = p->offcpu_pending;
	struct pending **at, *n;

	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t) {
			p->counters.offcpu_pending_dropped++;
			return;
		}
		p->offcpu_pending = t;
	}
	at = slot(t, e->hdr.tid);
	/* Its switch-in never came (lost): this one replaces it. */
	if (*at) {
		struct pending *old = *at;

		*at = old->next;
		t->bytes -= old->size;
		free(old);
		t->n--;
		p->counters.offcpu_unmatched++;
	}
	if (t->n >= OTELPROF_OFFCPU_PENDING ||
	    t->bytes + size > PENDING_BYTES ||
	    !(n = malloc(sizeof(*n) + size))) {
		p->counters.offcpu_pending_dropped++;
		return;
	}
	n->tid = e->hdr.tid;
	n->start_ns = e->hdr.ktime_boot_ns;
	n->size = size;
	memcpy(n->data, data, size);
	n->next = NULL;
	*at = n;
	t->n++;
	t->bytes += size;
}

void agent_offcpu_end(struct otelprof *p, const struct otelprof_offcpu_end *r)
{
	struct offcpu_pending *t = p->offcpu_pending;
	struct pending **at, *n;

	at = t ? slot(t, r->hdr.tid) : NULL;
	if (!at || !*at || (*at)->start_ns != r->start_ns ||
	    r->hdr.ktime_boot_ns < r->start_ns) {
		p->counters.offcpu_unmatched++;
		return;
	}
	n = *at;
	*at = n->next;
	t->n--;
	t->bytes -= n->size;
	agent_handle_offcpu(p, (const struct otelprof_sample_event *)n->data,
			    n->size,
			    (int64_t)(r->hdr.ktime_boot_ns - r->start_ns));
	free(n);
}

void agent_free_offcpu(struct otelprof *p)
{
	struct offcpu_pending *t = p->offcpu_pending;

	if (!t)
		return;
	for (size_t i = 0; i < PENDING_BUCKETS; i++)
		while (t->bucket[i]) {
			struct pending *n = t->bucket[i];

			t->bucket[i] = n->next;
			free(n);
		}
	free(t);
	p->offcpu_pending = NULL;
}
