/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Growing an array by doubling, with every size checked for overflow and
 * the growth optionally charged to a memory budget before it is allocated.
 */
#ifndef OTELPROF_UTIL_GROW_H
#define OTELPROF_UTIL_GROW_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of growth taken from a budget before they are allocated (false
 * refuses them) and given back if the allocation then fails. */
struct grow_charge {
	bool (*charge)(void *ctx, size_t bytes);
	void (*uncharge)(void *ctx, size_t bytes);
	void *ctx;
};

/*
 * Room for `need` elements of elem bytes in the array whose pointer is at
 * pp (a T **) and whose capacity, in elements, is *cap. The capacity
 * doubles from `first` until it holds need, and never passes max. Returns
 * 0 (the array untouched when it already had room); -E2BIG when need is
 * above max or the bytes overflow; -EDQUOT when charge refused the
 * growth; -ENOMEM. On an error the array and *cap are unchanged.
 */
static inline int grow_array(void *pp, size_t *cap, size_t need, size_t elem,
			     size_t first, size_t max,
			     const struct grow_charge *c)
{
	size_t ncap, grow;
	void *p, *np;

	if (need <= *cap)
		return 0;
	if (!elem || need > max || max > SIZE_MAX / elem)
		return -E2BIG;
	ncap = *cap ? *cap : (first ? first : 1);
	while (ncap < need)
		ncap = ncap > max / 2 ? max : ncap * 2;
	if (ncap > max)
		ncap = max;
	grow = (ncap - *cap) * elem;
	if (c && c->charge && !c->charge(c->ctx, grow))
		return -EDQUOT;
	/* The pointer is copied, not cast: pp is a T **, not a void **. */
	memcpy(&p, pp, sizeof(p));
	np = realloc(p, ncap * elem);
	if (!np) {
		if (c && c->uncharge)
			c->uncharge(c->ctx, grow);
		return -ENOMEM;
	}
	memcpy(pp, &np, sizeof(np));
	*cap = ncap;
	return 0;
}

#endif
