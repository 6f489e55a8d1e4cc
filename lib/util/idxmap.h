/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Open-addressing index from a 64-bit hash to a uint32 element index. The
 * elements themselves live in the caller's arrays; equality is the caller's
 * callback. Hand-written because C has no standard hash table and pulling in
 * glib for one structure is not worth it on every host.
 */
#ifndef OTELPROF_UTIL_IDXMAP_H
#define OTELPROF_UTIL_IDXMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct idxmap {
	uint64_t
		*hashes; /* 0 marks an empty slot (hash values are made != 0) */
	uint32_t *values;
	size_t cap; /* power of two */
	size_t len;
};

typedef bool (*idxmap_eq_fn)(const void *ctx, uint32_t value);

void idxmap_init(struct idxmap *m);
void idxmap_free(struct idxmap *m);
void idxmap_clear(struct idxmap *m);
/* Returns true and sets *value when an element with hash h satisfies eq. */
bool idxmap_find(const struct idxmap *m, uint64_t h, idxmap_eq_fn eq,
		 const void *ctx, uint32_t *value);
/* Adds (h, value); does not check for duplicates. 0 or -ENOMEM. */
int idxmap_insert(struct idxmap *m, uint64_t h, uint32_t value);
/* Removes the entry (h, value) if present. */
void idxmap_remove(struct idxmap *m, uint64_t h, uint32_t value);
size_t idxmap_memory(const struct idxmap *m);

/* Fast non-cryptographic hashing for interning. */
uint64_t hash_bytes(const void *data, size_t len, uint64_t seed);
static inline uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}
static inline uint64_t hash_combine(uint64_t h, uint64_t v)
{
	return hash_u64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

#endif
