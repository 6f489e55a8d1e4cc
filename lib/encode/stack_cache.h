/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Raw stacks already in this window's profile: (process serial, kernel
 * and user words as the sampler or the copy unwinder produced them) ->
 * the builder's stack index. A hot stack is symbolized once per window,
 * not once per sample. Cleared with the builder it indexes.
 */
#ifndef OTELPROF_ENCODE_STACK_CACHE_H
#define OTELPROF_ENCODE_STACK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/idxmap.h"

struct raw_stack {
	uint64_t serial; /* the process (process table serial) */
	const uint64_t *k, *u;
	uint32_t nk, nu;
};

struct stack_cache {
	struct idxmap index;
	uint64_t *keys; /* per entry: serial, nk, nu, then the words */
	size_t keys_len, keys_cap;
	uint32_t *entry_off; /* offset of entry i in keys */
	int32_t *entry_stack;
	uint32_t nentries, entries_cap;
};

void stack_cache_init(struct stack_cache *c);
void stack_cache_free(struct stack_cache *c);
/* The builder was reset: its stack indices are gone. */
void stack_cache_clear(struct stack_cache *c);
bool stack_cache_find(const struct stack_cache *c, const struct raw_stack *r,
		      int32_t *stack);
/* 0, -ENOMEM or -E2BIG (not cached then; the stack is still right). */
int stack_cache_put(struct stack_cache *c, const struct raw_stack *r,
		    int32_t stack);

#endif
