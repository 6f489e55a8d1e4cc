// SPDX-License-Identifier: Apache-2.0
#include "util/idxmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static inline uint64_t nonzero(uint64_t h)
{
	return h ? h : 0x8000000000000000ULL;
}

void idxmap_init(struct idxmap *m)
{
	memset(m, 0, sizeof(*m));
}

void idxmap_free(struct idxmap *m)
{
	free(m->hashes);
	free(m->values);
	memset(m, 0, sizeof(*m));
}

void idxmap_clear(struct idxmap *m)
{
	if (m->cap)
		memset(m->hashes, 0, m->cap * sizeof(*m->hashes));
	m->len = 0;
}

bool idxmap_find(const struct idxmap *m, uint64_t h, idxmap_eq_fn eq,
		 const void *ctx, uint32_t *value)
{
	size_t mask, i;

	if (!m->cap)
		return false;
	h = nonzero(h);
	mask = m->cap - 1;
	for (i = h & mask;; i = (i + 1) & mask) {
		if (!m->hashes[i])
			return false;
		if (m->hashes[i] == h && eq(ctx, m->values[i])) {
			*value = m->values[i];
			return true;
		}
	}
}

static void put(uint64_t *hashes, uint32_t *values, size_t cap, uint64_t h,
		uint32_t v)
{
	size_t mask = cap - 1, i;

	for (i = h & mask; hashes[i]; i = (i + 1) & mask)
		;
	hashes[i] = h;
	values[i] = v;
}

static int grow(struct idxmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64, i;
	uint64_t *nh = calloc(ncap, sizeof(*nh));
	uint32_t *nv = malloc(ncap * sizeof(*nv));

	if (!nh || !nv) {
		free(nh);
		free(nv);
		return -ENOMEM;
	}
	for (i = 0; i < m->cap; i++)
		if (m->hashes[i])
			put(nh, nv, ncap, m->hashes[i], m->values[i]);
	free(m->hashes);
	free(m->values);
	m->hashes = nh;
	m->values = nv;
	m->cap = ncap;
	return 0;
}

int idxmap_insert(struct idxmap *m, uint64_t h, uint32_t value)
{
	/* Keep the load factor under 1/2 so probes stay short. */
	if ((m->len + 1) * 2 > m->cap) {
		int err = grow(m);

		if (err)
			return err;
	}
	put(m->hashes, m->values, m->cap, nonzero(h), value);
	m->len++;
	return 0;
}

void idxmap_remove(struct idxmap *m, uint64_t h, uint32_t value)
{
	size_t mask, i, j;

	if (!m->cap)
		return;
	h = nonzero(h);
	mask = m->cap - 1;
	for (i = h & mask;; i = (i + 1) & mask) {
		if (!m->hashes[i])
			return;
		if (m->hashes[i] == h && m->values[i] == value)
			break;
	}
	/* Backward-shift deletion keeps probe chains intact without tombstones.
	 */
	m->hashes[i] = 0;
	m->len--;
	for (j = (i + 1) & mask; m->hashes[j]; j = (j + 1) & mask) {
		size_t home = m->hashes[j] & mask;
		bool movable = (j > i) ? (home <= i || home > j)
				       : (home <= i && home > j);

		if (movable) {
			m->hashes[i] = m->hashes[j];
			m->values[i] = m->values[j];
			m->hashes[j] = 0;
			i = j;
		}
	}
}

size_t idxmap_memory(const struct idxmap *m)
{
	return m->cap * (sizeof(uint64_t) + sizeof(uint32_t));
}

uint64_t hash_bytes(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = seed ^ (len * 0x9e3779b97f4a7c15ULL);

	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		h = hash_combine(h, v);
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t v = 0;

		memcpy(&v, p, len);
		h = hash_combine(h, v);
	}
	return h;
}
