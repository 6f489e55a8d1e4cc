/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An append-only buffer of NUL-terminated strings, each referred to by its
 * uint32 byte offset (so the arena never holds more than UINT32_MAX bytes).
 * Growth doubles from a first capacity the owner picks, and may be charged
 * to the owner's memory budget before it is allocated.
 */
#ifndef OTELPROF_UTIL_STR_ARENA_H
#define OTELPROF_UTIL_STR_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct str_arena {
	char *buf;
	size_t len; /* bytes used: every string and its NUL */
	size_t cap; /* bytes allocated */
};

/* How an arena grows. charge (optional) takes the growth to new_cap
 * (grow = new_cap - the old cap) before it is allocated, false refusing
 * it; uncharge gives it back when the allocation then fails. */
struct str_arena_growth {
	size_t first_cap;
	bool (*charge)(void *ctx, size_t new_cap, size_t grow);
	void (*uncharge)(void *ctx, size_t grow);
	void *ctx;
};

/* Room for `bytes` more bytes (a string and its NUL). 0; -E2BIG past
 * UINT32_MAX bytes or refused by charge; -ENOMEM. */
int str_arena_reserve(struct str_arena *a, size_t bytes,
		      const struct str_arena_growth *g);
/* The n bytes at s and a NUL, in room str_arena_reserve made; returns
 * their offset. */
uint32_t str_arena_append(struct str_arena *a, const char *s, size_t n);
/* Both: 0 and the offset in *off, or str_arena_reserve's error. */
int str_arena_push(struct str_arena *a, const char *s, size_t n,
		   const struct str_arena_growth *g, uint32_t *off);
/* Frees the buffer (what was charged is the owner's to give back). */
void str_arena_free(struct str_arena *a);

#endif
