// SPDX-License-Identifier: Apache-2.0
#include "frames/frame_memo.h"
#include "util/grow.h"

#include <stdlib.h>
#include <string.h>

void frame_memo_init(struct frame_memo *m)
{
	memset(m, 0, sizeof(*m));
	idxmap_init(&m->index);
}

void frame_memo_free(struct frame_memo *m)
{
	idxmap_free(&m->index);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

void frame_memo_clear(struct frame_memo *m)
{
	idxmap_clear(&m->index);
	m->n = 0;
}

void frame_memo_begin(struct frame_memo *m)
{
	if (m->n >= FRAME_MEMO_MAX)
		frame_memo_clear(m);
}

static uint64_t key_hash(const struct frame_memo_key *k)
{
	uint64_t h = hash_u64(k->pc ^ (uint64_t)k->return_address << 62);

	h = hash_combine(h, k->serial);
	h = hash_combine(h, k->map_start);
	return h;
}

struct key_ctx {
	const struct frame_memo *m;
	const struct frame_memo_key *k;
};

static bool key_eq(const void *ctx, uint32_t idx)
{
	const struct key_ctx *c = ctx;
	const struct frame_memo_key *a = &c->m->v[idx].key, *b = c->k;

	/* field by field: the key has padding-free layout, but a compare
	 * of named fields says what identity is */
	return a->pc == b->pc && a->serial == b->serial &&
	       a->map_start == b->map_start && a->map_end == b->map_end &&
	       a->map_offset == b->map_offset && a->inode == b->inode &&
	       a->dev == b->dev && a->return_address == b->return_address;
}

static bool lookup(const struct frame_memo *m, const struct frame_memo_key *k,
		   uint64_t h, uint32_t *idx)
{
	struct key_ctx c = {m, k};

	return idxmap_find(&m->index, h, key_eq, &c, idx);
}

const struct frame_memo_entry *frame_memo_find(struct frame_memo *m,
					       const struct frame_memo_key *k)
{
	uint32_t idx;

	if (lookup(m, k, key_hash(k), &idx) && m->v[idx].value > 0) {
		m->hits++;
		return &m->v[idx];
	}
	m->misses++;
	return NULL;
}

uint32_t frame_memo_reserve(struct frame_memo *m,
			    const struct frame_memo_key *k, uint32_t loop_mask)
{
	uint64_t h = key_hash(k);
	uint32_t idx;

	if (lookup(m, k, h, &idx))
		return idx + 1;
	if (m->n >= FRAME_MEMO_MAX ||
	    grow_array(&m->v, &m->cap, m->n + 1, sizeof(*m->v), 256,
		       FRAME_MEMO_MAX, NULL) ||
	    idxmap_insert(&m->index, h, (uint32_t)m->n))
		return 0;
	m->v[m->n].key = *k;
	m->v[m->n].value = 0;
	m->v[m->n].loop_mask = loop_mask;
	return (uint32_t)++m->n;
}

void frame_memo_set(struct frame_memo *m, uint32_t id, int32_t value)
{
	if (id && id <= m->n && value > 0)
		m->v[id - 1].value = value;
}
