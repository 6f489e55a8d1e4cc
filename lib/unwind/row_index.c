// SPDX-License-Identifier: Apache-2.0
#include "unwind/row_index.h"

#include <string.h>

/* Pages of 4 KiB and up: a page holds a dozen rows of typical compiled
 * code, so the walk's search within it stays in a line or two. */
static uint64_t page_of(uint64_t pc, uint8_t shift)
{
	return pc >> shift;
}

uint32_t unwind_row_index_rows(const struct unwind_table *t, uint32_t n,
			       uint8_t *shift)
{
	uint64_t first, last, npages;
	uint8_t s = UNWIND_INDEX_MIN_SHIFT;

	*shift = 0;
	if (n < UNWIND_INDEX_MIN_ROWS || n > t->nrows)
		return 0;
	first = t->rows[0].pc;
	last = t->rows[n - 1].pc;
	if (last > UNWIND_PACKED_MAX_PC || last < first)
		return 0;
	/* Bounded by the table: at most one index row per 8 rows. */
	for (;; s++) {
		npages = page_of(last, s) - page_of(first, s) + 1;
		if (npages <= n / 8 || s >= 31)
			break;
	}
	if (npages > n / 8)
		return 0;
	*shift = s;
	return (uint32_t)npages + 2;
}

void unwind_row_index_fill(const struct unwind_table *t, uint32_t n,
			   uint8_t shift, struct unwind_packed_row *out,
			   uint32_t ix)
{
	uint32_t npages = ix - 2, row = 0;
	uint64_t base = page_of(t->rows[0].pc, shift) << shift;

	memset(out, 0, (size_t)ix * sizeof(*out));
	out[0].pc = (uint32_t)base;
	out[0].rules = shift;
	for (uint32_t p = 0; p < npages; p++) {
		uint64_t start = base + ((uint64_t)p << shift);

		/* E[p]: the last row at or before the page's start. */
		while (row + 1 < n && t->rows[row + 1].pc <= start)
			row++;
		out[1 + p].pc = row;
	}
	out[1 + npages].pc = n - 1;
}
