// SPDX-License-Identifier: Apache-2.0
#include "encode/stack_cache.h"
#include "util/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void stack_cache_init(struct stack_cache *c)
{
	memset(c, 0, sizeof(*c));
	idxmap_init(&c->index);
}

void stack_cache_free(struct stack_cache *c)
{
	idxmap_free(&c->index);
	free(c->keys);
	free(c->entry_off);
	free(c->entry_stack);
	memset(c, 0, sizeof(*c));
}

void stack_cache_clear(struct stack_cache *c)
{
	idxmap_clear(&c->index);
	c->keys_len = 0;
	c->nentries = 0;
}

struct raw_key {
	const struct stack_cache *c;
	const struct raw_stack *r;
};

static bool raw_eq(const void *ctx, uint32_t idx)
{
	const struct raw_key *k = ctx;
	const uint64_t *v = k->c->keys + k->c->entry_off[idx];
	const struct raw_stack *r = k->r;

	return v[0] == r->serial && v[1] == r->nk && v[2] == r->nu &&
	       (!r->nk || !memcmp(v + 3, r->k, r->nk * 8)) &&
	       (!r->nu || !memcmp(v + 3 + r->nk, r->u, r->nu * 8));
}

static uint64_t raw_hash(const struct raw_stack *r)
{
	uint64_t h = hash_combine(hash_u64(r->serial),
				  ((uint64_t)r->nk << 32) | r->nu);

	h = hash_combine(h, hash_bytes(r->k, r->nk * 8, 1));
	return hash_combine(h, hash_bytes(r->u, r->nu * 8, 2));
}

bool stack_cache_find(const struct stack_cache *c, const struct raw_stack *r,
		      int32_t *stack)
{
	struct raw_key k = {c, r};
	uint32_t idx;

	if (!idxmap_find(&c->index, raw_hash(r), raw_eq, &k, &idx))
		return false;
	*stack = c->entry_stack[idx];
	return true;
}

int stack_cache_put(struct stack_cache *c, const struct raw_stack *r,
		    int32_t stack)
{
	size_t need = 3 + (size_t)r->nk + r->nu;

	if (c->keys_len > UINT32_MAX - need)
		return -E2BIG;
	if (grow_array(&c->keys, &c->keys_cap, c->keys_len + need,
		       sizeof(*c->keys), 4096, SIZE_MAX / sizeof(*c->keys),
		       NULL))
		return -ENOMEM;
	if (c->nentries == c->entries_cap) {
		uint32_t ncap = c->entries_cap ? c->entries_cap * 2 : 256;
		uint32_t *no = realloc(c->entry_off, ncap * sizeof(*no));
		int32_t *ns;

		if (!no)
			return -ENOMEM;
		c->entry_off = no;
		ns = realloc(c->entry_stack, ncap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		c->entry_stack = ns;
		c->entries_cap = ncap;
	}
	c->entry_off[c->nentries] = (uint32_t)c->keys_len;
	c->entry_stack[c->nentries] = stack;
	c->keys[c->keys_len++] = r->serial;
	c->keys[c->keys_len++] = r->nk;
	c->keys[c->keys_len++] = r->nu;
	if (r->nk)
		memcpy(c->keys + c->keys_len, r->k, r->nk * 8);
	c->keys_len += r->nk;
	if (r->nu)
		memcpy(c->keys + c->keys_len, r->u, r->nu * 8);
	c->keys_len += r->nu;
	if (idxmap_insert(&c->index, raw_hash(r), c->nentries))
		return -ENOMEM;
	c->nentries++;
	return 0;
}
