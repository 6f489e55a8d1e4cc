// SPDX-License-Identifier: Apache-2.0
/* Hand-written: an interner with stable pointers is a few lines on top of
 * grow.h and idxmap's hash, and no library on every host offers one. */
#include "util/str_intern.h"
#include "util/idxmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t str_hash(const char *s, size_t len)
{
	return hash_bytes(s, len, 0x5bd1e995u);
}

static bool charge(const struct grow_charge *c, size_t bytes)
{
	return !c || !c->charge || c->charge(c->ctx, bytes);
}

static void uncharge(const struct grow_charge *c, size_t bytes)
{
	if (c && c->uncharge)
		c->uncharge(c->ctx, bytes);
}

/* The slot holding s, or the empty slot where it would go. */
static size_t slot_of(const struct str_intern *t, const char *s, size_t len,
		      uint64_t h)
{
	size_t mask = t->nslots - 1, i = (size_t)h & mask;

	for (;;) {
		uint32_t v = t->slots[i];

		if (!v)
			return i;
		if (!strncmp(t->strs[v - 1], s, len) &&
		    t->strs[v - 1][len] == '\0')
			return i;
		i = (i + 1) & mask;
	}
}

/* Twice the slots (load kept under a half), charged first. */
static int rehash(struct str_intern *t, const struct grow_charge *c)
{
	size_t n = t->nslots ? t->nslots * 2 : 64;
	uint32_t *old = t->slots;
	size_t nold = t->nslots;

	if (!charge(c, n * sizeof(*t->slots)))
		return -EDQUOT;
	t->slots = calloc(n, sizeof(*t->slots));
	if (!t->slots) {
		t->slots = old;
		uncharge(c, n * sizeof(*t->slots));
		return -ENOMEM;
	}
	t->nslots = n;
	for (size_t i = 0; i < nold; i++) {
		const char *s;
		size_t len;

		if (!old[i])
			continue;
		s = t->strs[old[i] - 1];
		len = strlen(s);
		t->slots[slot_of(t, s, len, str_hash(s, len))] = old[i];
	}
	free(old);
	uncharge(c, nold * sizeof(*t->slots));
	t->bytes += (n - nold) * sizeof(*t->slots);
	return 0;
}

/* Room for len + 1 bytes in the last chunk, or a new chunk. */
static char *room(struct str_intern *t, size_t len, const struct grow_charge *c)
{
	char *chunk;
	size_t cap;
	int err;

	if (t->nchunks && t->chunk_cap - t->chunk_used > len)
		return t->chunks[t->nchunks - 1] + t->chunk_used;
	err = grow_array(&t->chunks, &t->chunks_cap, t->nchunks + 1,
			 sizeof(*t->chunks), 16, SIZE_MAX / sizeof(char *), c);
	if (err)
		return NULL;
	cap = len + 1 > STR_INTERN_CHUNK ? len + 1 : STR_INTERN_CHUNK;
	if (!charge(c, cap))
		return NULL;
	chunk = malloc(cap);
	if (!chunk) {
		uncharge(c, cap);
		return NULL;
	}
	t->bytes += cap;
	t->chunks[t->nchunks++] = chunk;
	t->chunk_used = 0;
	t->chunk_cap = cap;
	return chunk;
}

int str_intern_add(struct str_intern *t, const char *s, size_t len,
		   const struct grow_charge *c, uint32_t *id)
{
	uint64_t h = str_hash(s, len);
	size_t i, old_cap = t->strs_cap;
	char *p;
	int err;

	if (len > STR_INTERN_MAX_LEN || memchr(s, '\0', len))
		return -E2BIG;
	if (t->nslots) {
		i = slot_of(t, s, len, h);
		if (t->slots[i]) {
			*id = t->slots[i] - 1;
			return 0;
		}
	}
	if (t->n >= STR_INTERN_MAX)
		return -E2BIG;
	if ((t->n + 1) * 2 > t->nslots && (err = rehash(t, c)))
		return err;
	err = grow_array(&t->strs, &t->strs_cap, t->n + 1, sizeof(*t->strs), 64,
			 STR_INTERN_MAX, c);
	if (err)
		return err;
	t->bytes += (t->strs_cap - old_cap) * sizeof(*t->strs);
	p = room(t, len, c);
	if (!p)
		return -EDQUOT;
	memcpy(p, s, len);
	p[len] = '\0';
	t->chunk_used += len + 1;
	t->strs[t->n] = p;
	t->slots[slot_of(t, s, len, h)] = (uint32_t)(t->n + 1);
	*id = (uint32_t)t->n++;
	return 0;
}

void str_intern_free(struct str_intern *t, const struct grow_charge *c)
{
	for (size_t i = 0; i < t->nchunks; i++)
		free(t->chunks[i]);
	free(t->chunks);
	free(t->strs);
	free(t->slots);
	uncharge(c, t->bytes + t->chunks_cap * sizeof(*t->chunks));
	memset(t, 0, sizeof(*t));
}
