/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A file's section read on demand through a small page cache: for a table
 * too big to copy whole (a Go daemon's .gopclntab is tens of MB; libelf's
 * copy of the collector's own was 42 MB) that is read by small, mostly
 * forward accesses. Not mmap: a process can truncate a file it maps, and
 * reading a truncated mapping raises SIGBUS in the host process; a pread
 * past the end is a read error, and the access fails.
 */
#ifndef OTELPROF_ELF_SECTION_PAGES_H
#define OTELPROF_ELF_SECTION_PAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf/elf_guard.h"

#define SECTION_PAGE_BYTES 16384u
/* Two ways per set, at most 4 MiB of pages; fewer for a smaller section.
 * A scan reads four or five places of the table at once (function
 * table, _func records, names, SP deltas shared between functions, so
 * it jumps back): the row scan of a 42 MB table read 1.4 times its
 * pages with 4 MiB, 3.6 times with 1 MiB. */
#define SECTION_PAGE_SETS  128u
#define SECTION_PAGE_SLOTS (2u * SECTION_PAGE_SETS)
#define SECTION_STRING_MAX 4096u
/* What one reader holds at most: its pages, the bounce page, the string
 * copy. */
#define SECTION_PAGES_BYTES                                                    \
	((SECTION_PAGE_SLOTS + 1u) * SECTION_PAGE_BYTES + SECTION_STRING_MAX + \
	 1u)

struct section_pages {
	struct elf_source src;
	uint64_t off, len;		  /* the section's bytes in the file */
	uint64_t tag[SECTION_PAGE_SLOTS]; /* page number + 1; 0: empty */
	uint8_t next_way[SECTION_PAGE_SETS]; /* the way a miss replaces */
	unsigned sets;	/* in use: the section's pages, halved, at most all */
	unsigned last;	/* the slot of the last page used */
	uint8_t *pages; /* 2 x sets pages, then the bounce page */
	char *str;	/* SECTION_STRING_MAX + 1 */
	uint64_t reads; /* pages read from the file */
};

/* len bytes at off of src (the caller checked they lie inside the file).
 * 0 or -ENOMEM. */
int section_pages_init(struct section_pages *p, const struct elf_source *src,
		       uint64_t off, uint64_t len);
void section_pages_free(struct section_pages *p);

/* n bytes (n <= SECTION_PAGE_BYTES) at off of the section, contiguous;
 * valid until the next call on p. NULL outside the section or when the
 * file cannot be read there. */
const uint8_t *section_pages_get_slow(struct section_pages *p, uint64_t off,
				      size_t n);
static inline const uint8_t *section_pages_get(struct section_pages *p,
					       uint64_t off, size_t n)
{
	uint64_t in = off % SECTION_PAGE_BYTES;

	/* The page used last, inside the section: most reads of a scan. */
	if (p->tag[p->last] == off / SECTION_PAGE_BYTES + 1 && n &&
	    in + n <= SECTION_PAGE_BYTES && off <= p->len && p->len - off >= n)
		return p->pages + p->last * SECTION_PAGE_BYTES + in;
	return section_pages_get_slow(p, off, n);
}

/* The NUL-terminated string at off, at most max (<= SECTION_STRING_MAX)
 * bytes before its NUL, copied out: valid until the next string on p
 * (section_pages_get does not touch it). NULL if no NUL lies inside the
 * section within max bytes, or on a read error. */
const char *section_pages_string(struct section_pages *p, uint64_t off,
				 size_t max, size_t *len);

#endif
