/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A file's page index, stored in its chunk before its rows (layout:
 * ebpf/unwind_types.h, read by unwind_walk.h): the walk looks up the rows
 * of one page instead of halving the whole table.
 */
#ifndef OTELPROF_ROW_INDEX_H
#define OTELPROF_ROW_INDEX_H

#include <stdint.h>

#include "unwind/unwind_table.h"

/* The index of the first n rows of t: its size in rows (0: none, for
 * small tables) and its page shift. At most n / 8 + 2 rows: sparse code
 * gets bigger pages. */
uint32_t unwind_row_index_rows(const struct unwind_table *t, uint32_t n,
			       uint8_t *shift);
/* Write that index (ix rows from unwind_row_index_rows) into out. */
void unwind_row_index_fill(const struct unwind_table *t, uint32_t n,
			   uint8_t shift, struct unwind_packed_row *out,
			   uint32_t ix);

#endif
