// SPDX-License-Identifier: Apache-2.0
/*
 * A file's page index (lib/unwind/row_index.c, read by unwind_walk.h's
 * unwind_find_row_paged): for every pc, the row the paged search finds is
 * the one a search of the whole table finds (the last row at or before
 * the pc), for dense and sparse code, in shared chunks and in a chunk of
 * its own; small tables get no index; an index that lies gives no row,
 * never one outside the file's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "unwind/unwind_maps.h"

static struct unwind_maps um;

static const struct unwind_packed_row *chunk_row(void *rows, uint32_t idx)
{
	const struct unwind_chunk *c = rows;

	return idx < c->nrows ? &c->rows[idx] : NULL;
}

#define UNWIND_READ_U64(ctx, addr, out) ((void)(ctx), (void)(addr), -1)
#define UNWIND_BIG_MAPPING(ctx, idx)                                           \
	((void)(ctx), (void)(idx), (const struct otelprof_bpf_mapping *)0)
#define UNWIND_ROWS(ctx, id)	   ((void)(ctx), unwind_maps_chunk(&um, (id)))
#define UNWIND_ROW(ctx, rows, idx) ((void)(ctx), chunk_row((rows), (idx)))
#include "unwind_walk.h"

static uint64_t lcg = 12345;

static uint32_t next_rand(uint32_t bound)
{
	lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(lcg >> 33) % bound;
}

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

/* n rows from first; each gap 1..max_gap, and every `jump` rows a jump of
 * jump_len (sparse code). */
static struct unwind_table make_table(uint32_t n, uint64_t first,
				      uint32_t max_gap, uint32_t jump,
				      uint64_t jump_len)
{
	struct unwind_table t = {.rows = calloc(n, sizeof(struct unwind_row)),
				 .nrows = n};
	uint64_t pc = first;

	assert_non_null(t.rows);
	for (uint32_t i = 0; i < n; i++) {
		t.rows[i] = (struct unwind_row){pc,
						{8 * (1 + i % 4), 0,
						 UNWIND_CFA_SP, UNWIND_FP_SAME,
						 UNWIND_RA_CFA_MINUS8}};
		pc += 1 + next_rand(max_gap);
		if (jump && i % jump == jump - 1)
			pc += jump_len;
	}
	return t;
}

/* The last row of t at or before v, or -1. */
static long reference_row(const struct unwind_table *t, uint64_t v)
{
	long lo = 0, hi = (long)t->nrows - 1, found = -1;

	while (lo <= hi) {
		long mid = (lo + hi) / 2;

		if (t->rows[mid].pc <= v) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

static void check_pc(const struct unwind_table *t,
		     const struct otelprof_bpf_mapping *m, uint64_t v)
{
	struct unwind_chunk *c = unwind_maps_chunk(&um, m->file_id);
	const struct unwind_packed_row *got, *plain;
	long want;

	if (v > UNWIND_PACKED_MAX_PC)
		return;
	want = reference_row(t, v);
	got = unwind_find_row_paged(NULL, c, m, (uint32_t)v);
	plain = unwind_find_row(NULL, c, m->row_base, m->nrows, (uint32_t)v);
	if (want < 0) {
		assert_null(got);
	} else {
		assert_ptr_equal(got, &c->rows[m->row_base + want]);
		assert_int_equal(got->pc, t->rows[want].pc);
	}
	assert_ptr_equal(got, plain);
}

/* Every row's pc and its neighbours, then random pcs around the table. */
static void check_table(struct unwind_table *t, bool want_index)
{
	struct unwind_slot slot;
	struct otelprof_bpf_mapping m = {0};
	uint64_t first = t->rows[0].pc, last = t->rows[t->nrows - 1].pc;

	assert_int_equal(unwind_maps_add_file(&um, t, &slot), 0);
	assert_int_equal(slot.nrows, t->nrows);
	if (want_index) {
		assert_true(slot.index_rows >= 3);
		assert_true(slot.index_rows <= t->nrows / 8 + 2);
	} else {
		assert_int_equal(slot.index_rows, 0);
	}
	assert_int_equal(um.counters.rows, slot.index_rows + slot.nrows);
	m.file_id = slot.id;
	m.nrows = slot.nrows;
	m.row_base = slot.base;
	m.index_rows = slot.index_rows;
	for (uint32_t i = 0; i < t->nrows; i++) {
		check_pc(t, &m, t->rows[i].pc);
		check_pc(t, &m, t->rows[i].pc + 1);
		if (t->rows[i].pc)
			check_pc(t, &m, t->rows[i].pc - 1);
	}
	for (int k = 0; k < 200000; k++)
		check_pc(t, &m,
			 first - 0x3000 +
				 next_rand((uint32_t)(last - first + 0x40000)));
	check_pc(t, &m, 0);
	check_pc(t, &m, UNWIND_PACKED_MAX_PC);
	unwind_maps_remove_file(&um, &slot);
	assert_int_equal(um.counters.rows, 0);
	free(t->rows);
}

static void dense_code_in_a_shared_chunk(void **state)
{
	struct unwind_table t = make_table(5000, 0x1234, 48, 0, 0);

	(void)state;
	check_table(&t, true);
}

/* Big gaps (code in two distant ranges): pages grow, the index stays
 * within an eighth of the rows. */
static void sparse_code_gets_bigger_pages(void **state)
{
	struct unwind_table t =
		make_table(3000, 0x400000, 64, 1000, 0x30000000);

	(void)state;
	check_table(&t, true);
}

static void big_table_in_its_own_chunk(void **state)
{
	struct unwind_table t =
		make_table(UNWIND_OWN_CHUNK_ROWS + 777, 0x10000, 24, 0, 0);

	(void)state;
	check_table(&t, true);
}

static void small_table_has_no_index(void **state)
{
	struct unwind_table t =
		make_table(UNWIND_INDEX_MIN_ROWS - 1, 0x5000, 300, 0, 0);

	(void)state;
	check_table(&t, false);
}

/* An index entry past the file's rows, or out of order: no row. */
static void lying_index_gives_no_row(void **state)
{
	struct unwind_table t = make_table(1000, 0x8000, 32, 0, 0);
	struct unwind_slot slot;
	struct otelprof_bpf_mapping m = {0};
	struct unwind_chunk *c;
	uint32_t at, v = (uint32_t)t.rows[500].pc;

	(void)state;
	assert_int_equal(unwind_maps_add_file(&um, &t, &slot), 0);
	m = (struct otelprof_bpf_mapping){.file_id = slot.id,
					  .nrows = slot.nrows,
					  .row_base = slot.base,
					  .index_rows = slot.index_rows};
	c = unwind_maps_chunk(&um, slot.id);
	at = slot.base - slot.index_rows;
	assert_non_null(unwind_find_row_paged(NULL, c, &m, v));
	for (uint32_t p = 1; p < slot.index_rows; p++)
		c->rows[at + p].pc = slot.nrows + 5;
	assert_null(unwind_find_row_paged(NULL, c, &m, v));
	for (uint32_t p = 1; p < slot.index_rows; p++)
		c->rows[at + p].pc = slot.index_rows - p;
	assert_null(unwind_find_row_paged(NULL, c, &m, v));
	/* index_rows larger than the rows before the table: not read. */
	m.index_rows = slot.base + 1;
	assert_ptr_equal(unwind_find_row_paged(NULL, c, &m, v),
			 &c->rows[slot.base + 500]);
	unwind_maps_remove_file(&um, &slot);
	free(t.rows);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(dense_code_in_a_shared_chunk,
						setup, teardown),
		cmocka_unit_test_setup_teardown(sparse_code_gets_bigger_pages,
						setup, teardown),
		cmocka_unit_test_setup_teardown(big_table_in_its_own_chunk,
						setup, teardown),
		cmocka_unit_test_setup_teardown(small_table_has_no_index, setup,
						teardown),
		cmocka_unit_test_setup_teardown(lying_index_gives_no_row, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
