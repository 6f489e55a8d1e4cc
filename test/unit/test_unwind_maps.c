// SPDX-License-Identifier: Apache-2.0
/*
 * The chunks of unwind rows without kernel maps (plain memory, laid out
 * as in the kernel): every row a chunk cannot hold is counted, whether
 * stored INVALID (a rule that does not pack) or left out (code above
 * 4 GiB of file vaddr, which a packed row's 32-bit pc cannot name), and
 * the chunks' memory comes back to 0; shared chunks grow from 512 KiB to
 * 2 MiB as they fill.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "unwind/unwind_maps.h"

#define GIB4 0x100000000ull

static struct unwind_maps um;

static int setup(void **state)
{
	(void)state;
	unwind_maps_init(&um, -1, -1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unwind_maps_free(&um);
	return 0;
}

/* A shared chunk: one row stored INVALID, two left out. */
static void small_table_counts_rows_it_cannot_hold(void **state)
{
	struct unwind_row rows[] = {
		{0x1000,
		 {16, 0, UNWIND_CFA_SP, UNWIND_FP_SAME, UNWIND_RA_CFA_MINUS8}},
		{0x2000,
		 {12, 0, UNWIND_CFA_SP, UNWIND_FP_SAME,
		  UNWIND_RA_CFA_MINUS8}}, /* not /8 */
		{0x3000,
		 {0, 0, UNWIND_CFA_STOP, UNWIND_FP_SAME, UNWIND_RA_CFA_MINUS8}},
		{GIB4,
		 {16, 0, UNWIND_CFA_SP, UNWIND_FP_SAME, UNWIND_RA_CFA_MINUS8}},
		{GIB4 + 0x1000,
		 {16, 0, UNWIND_CFA_SP, UNWIND_FP_SAME, UNWIND_RA_CFA_MINUS8}},
	};
	struct unwind_table t = {.rows = rows, .nrows = 5};
	struct unwind_slot slot;
	const struct unwind_chunk *c;

	(void)state;
	assert_int_equal(unwind_maps_add_file(&um, &t, &slot), 0);
	assert_int_equal(slot.nrows, 3);
	assert_int_equal(um.counters.rows_unrepresentable, 1 + 2);
	assert_int_equal(um.counters.rows, 3);
	assert_int_equal(um.counters.files, 1);
	assert_true(um.counters.bytes > 0);
	c = unwind_maps_chunk(&um, slot.id);
	assert_non_null(c);
	assert_int_equal(UNWIND_ROW_CFA_BASE(&c->rows[slot.base + 1]),
			 UNWIND_CFA_INVALID);
	unwind_maps_remove_file(&um, &slot);
	assert_int_equal(um.counters.rows, 0);
	assert_int_equal(um.counters.files, 0);
}

/* A table of its own chunk: the rows past 4 GiB are counted too. */
static void big_table_counts_rows_left_out(void **state)
{
	uint32_t n = UNWIND_OWN_CHUNK_ROWS + 3;
	struct unwind_row *rows = calloc(n, sizeof(*rows));
	struct unwind_table t = {.rows = rows, .nrows = n};
	struct unwind_slot slot;

	(void)state;
	assert_non_null(rows);
	for (uint32_t i = 0; i < n; i++)
		rows[i] = (struct unwind_row){
			(i < n - 3 ? 0x1000 : GIB4) + 16ull * i,
			{8, 0, UNWIND_CFA_SP, UNWIND_FP_SAME,
			 UNWIND_RA_CFA_MINUS8}};
	assert_int_equal(unwind_maps_add_file(&um, &t, &slot), 0);
	assert_int_equal(slot.nrows, n - 3);
	assert_int_equal(um.counters.rows_unrepresentable, 3);
	unwind_maps_remove_file(&um, &slot);
	free(rows);
}

/* Shared chunks double from UNWIND_SHARED_FIRST_ROWS to
 * UNWIND_SHARED_CHUNK_ROWS, each file whole inside one, rows intact. */
static void shared_chunks_grow_as_they_fill(void **state)
{
	uint32_t n = UNWIND_OWN_CHUNK_ROWS - 1,
		 want[] = {64u << 10, 128u << 10, 256u << 10, 256u << 10};
	struct unwind_row *rows = calloc(n, sizeof(*rows));
	struct unwind_table t = {.rows = rows, .nrows = n};
	struct unwind_slot slot[15];
	uint32_t ids[4], nids = 0;

	(void)state;
	assert_non_null(rows);
	for (uint32_t i = 0; i < n; i++)
		rows[i] = (struct unwind_row){0x1000 + 16ull * i,
					      {8, 0, UNWIND_CFA_SP,
					       UNWIND_FP_SAME,
					       UNWIND_RA_CFA_MINUS8}};
	/* 2 + 4 + 8 tables fill the first three chunks, one more opens a
	 * fourth. */
	for (int f = 0; f < 15; f++) {
		const struct unwind_chunk *c;

		assert_int_equal(unwind_maps_add_file(&um, &t, &slot[f]), 0);
		c = unwind_maps_chunk(&um, slot[f].id);
		assert_non_null(c);
		assert_true(c->shared);
		assert_true(slot[f].base + slot[f].nrows <= c->nrows);
		assert_int_equal(c->rows[slot[f].base + n - 1].pc,
				 0x1000 + 16ull * (n - 1));
		if (!nids || ids[nids - 1] != slot[f].id) {
			assert_true(nids < 4);
			ids[nids++] = slot[f].id;
		}
	}
	assert_int_equal(nids, 4);
	for (uint32_t k = 0; k < nids; k++)
		assert_int_equal(unwind_maps_chunk(&um, ids[k])->nrows,
				 want[k]);
	for (int f = 0; f < 15; f++)
		unwind_maps_remove_file(&um, &slot[f]);
	assert_int_equal(um.counters.rows, 0);
	free(rows);
}

/* Nothing below 4 GiB: no table, a load error, and every row counted. */
static void table_above_4gib_is_refused_and_counted(void **state)
{
	struct unwind_row rows[] = {
		{GIB4,
		 {16, 0, UNWIND_CFA_SP, UNWIND_FP_SAME, UNWIND_RA_CFA_MINUS8}},
		{GIB4 + 0x1000,
		 {0, 0, UNWIND_CFA_STOP, UNWIND_FP_SAME, UNWIND_RA_CFA_MINUS8}},
	};
	struct unwind_table t = {.rows = rows, .nrows = 2};
	struct unwind_slot slot;

	(void)state;
	assert_int_equal(unwind_maps_add_file(&um, &t, &slot), -ERANGE);
	assert_int_equal(slot.id, 0);
	assert_int_equal(um.counters.rows_unrepresentable, 2);
	assert_int_equal(um.counters.load_errors, 1);
	assert_int_equal(um.counters.files, 0);
	assert_int_equal(um.counters.bytes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			small_table_counts_rows_it_cannot_hold, setup,
			teardown),
		cmocka_unit_test_setup_teardown(big_table_counts_rows_left_out,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			table_above_4gib_is_refused_and_counted, setup,
			teardown),
		cmocka_unit_test_setup_teardown(shared_chunks_grow_as_they_fill,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
