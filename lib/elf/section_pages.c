// SPDX-License-Identifier: Apache-2.0
#include "elf/section_pages.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int section_pages_init(struct section_pages *p, const struct elf_source *src,
		       uint64_t off, uint64_t len)
{
	uint64_t npages = len / SECTION_PAGE_BYTES + 1;

	memset(p, 0, sizeof(*p));
	p->src = *src;
	p->off = off;
	p->len = len;
	p->sets = npages / 2 + 1 < SECTION_PAGE_SETS
			  ? (unsigned)(npages / 2 + 1)
			  : SECTION_PAGE_SETS;
	p->pages = malloc((2 * p->sets + 1) * (size_t)SECTION_PAGE_BYTES);
	p->str = malloc(SECTION_STRING_MAX + 1);
	if (!p->pages || !p->str) {
		section_pages_free(p);
		return -ENOMEM;
	}
	return 0;
}

void section_pages_free(struct section_pages *p)
{
	free(p->pages);
	free(p->str);
	p->pages = NULL;
	p->str = NULL;
}

/* Page pg of the section, read into its set if neither way holds it. */
static const uint8_t *page(struct section_pages *p, uint64_t pg)
{
	unsigned set = (unsigned)(pg % p->sets), s = 2 * set, way;
	uint64_t at = pg * SECTION_PAGE_BYTES, n;

	if (p->tag[s] == pg + 1) {
		way = 0;
	} else if (p->tag[s + 1] == pg + 1) {
		way = 1;
	} else {
		way = p->next_way[set];
		n = p->len - at < SECTION_PAGE_BYTES ? p->len - at
						     : SECTION_PAGE_BYTES;
		p->tag[s + way] = 0;
		if (elf_source_read(&p->src, p->off + at,
				    p->pages + (s + way) * SECTION_PAGE_BYTES,
				    (size_t)n))
			return NULL;
		p->tag[s + way] = pg + 1;
		p->reads++;
	}
	p->next_way[set] = (uint8_t)!way; /* the other one: least recent */
	p->last = s + way;
	return p->pages + (size_t)p->last * SECTION_PAGE_BYTES;
}

const uint8_t *section_pages_get_slow(struct section_pages *p, uint64_t off,
				      size_t n)
{
	uint8_t *bounce = p->pages + 2 * p->sets * (size_t)SECTION_PAGE_BYTES;
	uint64_t in = off % SECTION_PAGE_BYTES;
	const uint8_t *a, *b;
	size_t first;

	if (!n || n > SECTION_PAGE_BYTES || off > p->len || p->len - off < n)
		return NULL;
	a = page(p, off / SECTION_PAGE_BYTES);
	if (!a)
		return NULL;
	if (in + n <= SECTION_PAGE_BYTES)
		return a + in;
	/* Across two pages: both halves into the bounce page. */
	first = (size_t)(SECTION_PAGE_BYTES - in);
	memcpy(bounce, a + in, first);
	b = page(p, off / SECTION_PAGE_BYTES + 1);
	if (!b)
		return NULL;
	memcpy(bounce + first, b, n - first);
	return bounce;
}

const char *section_pages_string(struct section_pages *p, uint64_t off,
				 size_t max, size_t *len)
{
	size_t got = 0;

	if (max > SECTION_STRING_MAX || off >= p->len)
		return NULL;
	while (got <= max && off + got < p->len) {
		uint64_t at = off + got, in = at % SECTION_PAGE_BYTES;
		size_t k = (size_t)(SECTION_PAGE_BYTES - in);
		const uint8_t *pg = page(p, at / SECTION_PAGE_BYTES), *nul;

		if (!pg)
			return NULL;
		if (k > p->len - at)
			k = (size_t)(p->len - at);
		if (k > max + 1 - got)
			k = max + 1 - got;
		nul = memchr(pg + in, 0, k);
		if (nul) {
			k = (size_t)(nul - (pg + in));
			memcpy(p->str + got, pg + in, k);
			got += k;
			p->str[got] = '\0';
			*len = got;
			return p->str;
		}
		memcpy(p->str + got, pg + in, k);
		got += k;
	}
	return NULL;
}
