// SPDX-License-Identifier: Apache-2.0
#include "util/str_arena.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int str_arena_reserve(struct str_arena *a, size_t bytes,
		      const struct str_arena_growth *g)
{
	size_t ncap, grow;
	char *nb;

	if (a->len > UINT32_MAX || bytes > UINT32_MAX - a->len)
		return -E2BIG;
	if (a->len + bytes <= a->cap)
		return 0;
	/* Both below 2^33: the doubling cannot overflow. */
	ncap = a->cap ? a->cap * 2 : (g->first_cap ? g->first_cap : 64);
	while (ncap < a->len + bytes)
		ncap *= 2;
	grow = ncap - a->cap;
	if (g->charge && !g->charge(g->ctx, ncap, grow))
		return -E2BIG;
	nb = realloc(a->buf, ncap);
	if (!nb) {
		if (g->uncharge)
			g->uncharge(g->ctx, grow);
		return -ENOMEM;
	}
	a->buf = nb;
	a->cap = ncap;
	return 0;
}

uint32_t str_arena_append(struct str_arena *a, const char *s, size_t n)
{
	uint32_t off = (uint32_t)a->len;

	memcpy(a->buf + a->len, s, n);
	a->buf[a->len + n] = '\0';
	a->len += n + 1;
	return off;
}

int str_arena_push(struct str_arena *a, const char *s, size_t n,
		   const struct str_arena_growth *g, uint32_t *off)
{
	int err;

	if (n >= SIZE_MAX)
		return -E2BIG;
	err = str_arena_reserve(a, n + 1, g);
	if (err)
		return err;
	*off = str_arena_append(a, s, n);
	return 0;
}

void str_arena_free(struct str_arena *a)
{
	free(a->buf);
	a->buf = NULL;
	a->len = a->cap = 0;
}
