/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Binary search for "the last element whose key is <= x" over an array
 * sorted by a uint64_t key. Both forms return how many leading elements
 * have a key <= x, i.e. one past that last element: 0 when the array is
 * empty or x is below the first key. Equal keys are all counted, so
 * count - 1 is the last of a run of equal keys.
 */
#ifndef OTELPROF_UTIL_BSEARCH_LE_H
#define OTELPROF_UTIL_BSEARCH_LE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Element i's key; false if it cannot be read (data read from an image
 * of outside data is bounds-checked as it is read). */
typedef bool (*bsearch_le_key_fn)(const void *ctx, size_t i, uint64_t *key);

/* Over n keys read through key(ctx, ...); false (and *count untouched) as
 * soon as a key cannot be read. */
static inline bool bsearch_le_count_fn(size_t n, uint64_t x,
				       bsearch_le_key_fn key, const void *ctx,
				       size_t *count)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;

		if (!key(ctx, mid, &k))
			return false;
		if (k <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	*count = lo;
	return true;
}

struct bsearch_le_array {
	const char *base;
	size_t elem, key_off;
};

static inline bool bsearch_le_array_key(const void *ctx, size_t i,
					uint64_t *key)
{
	const struct bsearch_le_array *a = ctx;

	memcpy(key, a->base + i * a->elem + a->key_off, sizeof(*key));
	return true;
}

/* Over an array in memory of n elements of elem bytes, each with its
 * uint64_t key at byte key_off (offsetof). base may be NULL when n is 0. */
static inline size_t bsearch_le_count(const void *base, size_t n, size_t elem,
				      size_t key_off, uint64_t x)
{
	const struct bsearch_le_array a = {base, elem, key_off};
	size_t count = 0;

	bsearch_le_count_fn(n, x, bsearch_le_array_key, &a, &count);
	return count;
}

#endif
