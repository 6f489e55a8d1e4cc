/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A set of strings, each stored once and named by a uint32 id, whose
 * pointers stay valid until the set is freed (strings live in chunks that
 * never move, unlike str_arena's one growing buffer): for tables whose
 * lookups hand out the strings and keep them in caches. Every allocation
 * is charged to the owner's budget first (grow.h's grow_charge).
 */
#ifndef OTELPROF_UTIL_STR_INTERN_H
#define OTELPROF_UTIL_STR_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "util/grow.h"

#define STR_INTERN_CHUNK   (32u << 10) /* bytes of strings per chunk */
#define STR_INTERN_MAX_LEN (8u << 10)  /* longer strings are refused */
#define STR_INTERN_MAX	   (1u << 24)  /* strings per set */

struct str_intern {
	const char **strs; /* id -> string */
	size_t n, strs_cap;
	uint32_t *slots; /* open addressing: id + 1, 0 empty */
	size_t nslots;	 /* a power of two, or 0 */
	char **chunks;
	size_t nchunks, chunks_cap;
	size_t chunk_used; /* bytes of the last chunk */
	size_t chunk_cap;
	size_t bytes; /* charged, in all */
};

/* The id of the string s (len bytes, no NUL inside needed): found, or
 * added. 0; -E2BIG (too long, too many), -EDQUOT (refused by c),
 * -ENOMEM. */
int str_intern_add(struct str_intern *t, const char *s, size_t len,
		   const struct grow_charge *c, uint32_t *id);
static inline const char *str_intern_get(const struct str_intern *t,
					 uint32_t id)
{
	return id < t->n ? t->strs[id] : NULL;
}
/* Frees everything, giving back what was charged to c. */
void str_intern_free(struct str_intern *t, const struct grow_charge *c);

#endif
