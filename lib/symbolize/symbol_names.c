// SPDX-License-Identifier: Apache-2.0
#include "symbolize/symbol_names.h"
#include "util/mem_budget.h"

#include <stdlib.h>
#include <string.h>

void symbol_names_init(struct symbol_names *c)
{
	memset(c, 0, sizeof(*c));
	idxmap_init(&c->index);
}

void symbol_names_free(struct symbol_names *c)
{
	mem_account_uncharge(c->acct, c->charged);
	idxmap_free(&c->index);
	free(c->entries);
	str_arena_free(&c->arena);
	memset(c, 0, sizeof(*c));
}

struct find_ctx {
	const struct symbol_names *c;
	uint32_t id;
};

static bool entry_eq(const void *ctx, uint32_t idx)
{
	const struct find_ctx *k = ctx;

	return k->c->entries[idx].id == k->id;
}

static const char *entry_name(const struct symbol_names *c, uint32_t idx,
			      const char *raw)
{
	uint32_t off = c->entries[idx].off;

	return off == UINT32_MAX ? raw : c->arena.buf + off;
}

/* Remember id -> name (NULL: not mangled). False when over the bound or
 * out of memory: the caller still has the name. */
static bool remember_charged(struct symbol_names *c, uint64_t h, uint32_t id,
			     const char *name, size_t len);

/* Charged first for the most this insert can grow by (entries and arena
 * doubling, the index doubling), then the difference is given back. */
static bool remember(struct symbol_names *c, uint64_t h, uint32_t id,
		     const char *name, size_t len)
{
	size_t before = symbol_names_memory(c), after;
	uint64_t most =
		(uint64_t)(c->cap ? c->cap : 64) * sizeof(*c->entries) +
		(c->arena.cap > len + 1 ? c->arena.cap : 2 * (len + 1) + 4096) +
		idxmap_memory(&c->index) + 4096;
	bool ok;

	if (before + len + 64 > SYMBOL_NAMES_MAX_BYTES ||
	    !mem_account_charge(c->acct, most))
		return false;
	ok = remember_charged(c, h, id, name, len);
	after = symbol_names_memory(c);
	if (after - before > most) /* cannot happen; stay honest anyway */
		most = after - before;
	mem_account_uncharge(c->acct, most - (after - before));
	c->charged += after - before;
	return ok;
}

static bool remember_charged(struct symbol_names *c, uint64_t h, uint32_t id,
			     const char *name, size_t len)
{
	/* Charged as a whole by remember. */
	static const struct str_arena_growth growth = {4096, NULL, NULL, NULL};

	if (c->n == c->cap) {
		uint32_t ncap = c->cap ? 2 * c->cap : 64;
		void *nv = realloc(c->entries, ncap * sizeof(*c->entries));

		if (!nv)
			return false;
		c->entries = nv;
		c->cap = ncap;
	}
	if (name && str_arena_reserve(&c->arena, len + 1, &growth))
		return false;
	if (idxmap_insert(&c->index, h, c->n))
		return false;
	c->entries[c->n].id = id;
	c->entries[c->n].off =
		name ? str_arena_append(&c->arena, name, len) : UINT32_MAX;
	c->n++;
	return true;
}

const char *symbol_names_get(struct symbol_names *c, uint32_t id,
			     const char *raw, char scratch[DEMANGLE_MAX_OUTPUT])
{
	struct find_ctx k = {c, id};
	uint64_t h = hash_u64(id); /* idxmap keeps 0 apart itself */
	uint32_t idx;
	size_t len;

	if (idxmap_find(&c->index, h, entry_eq, &k, &idx))
		return entry_name(c, idx, raw);
	len = symbol_demangle(raw, scratch);
	/* Past the cache's bound the name is demangled again next time. */
	remember(c, h, id, len ? scratch : NULL, len);
	return len ? scratch : raw;
}

size_t symbol_names_memory(const struct symbol_names *c)
{
	return idxmap_memory(&c->index) + (size_t)c->cap * sizeof(*c->entries) +
	       c->arena.cap;
}
