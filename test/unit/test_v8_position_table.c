// SPDX-License-Identifier: Apache-2.0
/*
 * V8's source position tables decoded against V8's own listing: the
 * tables are copied from live processes (the BytecodeArray of
 *   function f(n){ let s=0;
 *     for(let i=0;i<n;i++) s+=i;
 *     return s; }
 * in Node 24 (V8 13.6) and Node 26 (V8 14.6), and the start of Node 26's
 * TurboFan code for a loop), the expected positions from node
 * --print-bytecode / --print-opt-code of the same function.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "runtimes/v8/v8_position_table.h"

struct at {
	uint32_t off;
	int32_t pos; /* script offset */
};

static void expect(const uint8_t *t, size_t n, enum v8_spt_encoding enc,
		   const struct at *want, size_t nwant)
{
	for (size_t k = 0; k < nwant; k++) {
		int64_t raw = 0;
		int32_t inlined = 0;

		assert_true(v8_position_at(t, n, enc, want[k].off, &raw));
		assert_int_equal(v8_source_position_offset(raw, &inlined),
				 want[k].pos);
		assert_int_equal(inlined, -1);
	}
}

/* V8 13.6: offsets from the function entry (-1), a statement's delta
 * as is, an expression's as -delta - 1 */
static const uint8_t node24_f[] = {
	0x01, 0x2c, 0x02, 0x2c, 0x04, 0x3c, 0x04, 0x0c, 0x05, 0x00, 0x0a,
	0x20, 0x05, 0x0c, 0x0e, 0x1b, 0x0b, 0x43, 0x08, 0x74, 0x04, 0x24};
/* V8 14.6: the same function, deltas as delta << 2 | 2 | statement */
static const uint8_t node26_f[] = {
	0x02, 0x2c, 0x07, 0x2c, 0x0b, 0x3c, 0x0b, 0x0c, 0x0a, 0x00, 0x1b,
	0x20, 0x0a, 0x0c, 0x1f, 0x1b, 0x16, 0x43, 0x13, 0x74, 0x0b, 0x24};

static void bytecode_v8_13(void **state)
{
	/* --print-bytecode: @0 21 S, @2 36 S, @4 39 S, @6 39 E, @11 47 S,
	 * @13 50 E, @20 43 S, @25 26 E, @29 55 S, @31 64 S; between
	 * entries the last before */
	static const struct at want[] = {
		{0, 21},  {1, 21},  {2, 36},  {4, 39},	{6, 39},  {9, 39},
		{11, 47}, {12, 47}, {13, 50}, {19, 50}, {20, 43}, {25, 26},
		{28, 26}, {29, 55}, {31, 64}, {500, 64}};

	(void)state;
	expect(node24_f, sizeof(node24_f), V8_SPT_SIGNED, want,
	       sizeof(want) / sizeof(want[0]));
	assert_int_equal(v8_spt_encoding_of(13), V8_SPT_SIGNED);
	assert_int_equal(v8_spt_encoding_of(10), V8_SPT_SIGNED);
}

static void bytecode_v8_14(void **state)
{
	/* --print-bytecode: @0 21 S, @2 36 S, @4 39 S, @6 39 E, @12 47 S,
	 * @14 50 E, @21 43 S, @26 26 E, @30 55 S, @32 64 S */
	static const struct at want[] = {
		{0, 21},  {1, 21},  {2, 36},  {4, 39},	{6, 39},  {11, 39},
		{12, 47}, {13, 47}, {14, 50}, {20, 50}, {21, 43}, {26, 26},
		{29, 26}, {30, 55}, {32, 64}, {500, 64}};

	(void)state;
	expect(node26_f, sizeof(node26_f), V8_SPT_FLAGGED, want,
	       sizeof(want) / sizeof(want[0]));
	assert_int_equal(v8_spt_encoding_of(14), V8_SPT_FLAGGED);
}

static void optimized_v8_14(void **state)
{
	/* the first entries of a TurboFan table: pc offsets 0xb, 0x19,
	 * 0x2f at positions 14, 51, 96 (--print-opt-code) */
	static const uint8_t t[] = {0x32, 0x3c, 0x3a, 0x94,
				    0x01, 0x5a, 0xb4, 0x01};
	static const struct at want[] = {{0xb, 14},  {0x18, 14}, {0x19, 51},
					 {0x2e, 51}, {0x2f, 96}, {0x100, 96}};
	int64_t raw;

	(void)state;
	expect(t, sizeof(t), V8_SPT_FLAGGED, want,
	       sizeof(want) / sizeof(want[0]));
	/* before the first entry: none (optimized code has no function
	 * entry's) */
	assert_false(v8_position_at(t, sizeof(t), V8_SPT_FLAGGED, 0xa, &raw));
}

static void refused(void **state)
{
	/* a V8 13 table read as V8 14's: its first delta lacks bit 1 */
	static const uint8_t truncated[] = {0x0a, 0x80};
	static const uint8_t overlong[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0xff,
					   0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	int64_t raw;

	(void)state;
	assert_false(v8_position_at(node24_f, sizeof(node24_f), V8_SPT_FLAGGED,
				    10, &raw));
	/* an unknown version: nothing taken */
	assert_false(v8_position_at(node26_f, sizeof(node26_f), V8_SPT_UNKNOWN,
				    10, &raw));
	assert_int_equal(v8_spt_encoding_of(15), V8_SPT_UNKNOWN);
	assert_int_equal(v8_spt_encoding_of(-1), V8_SPT_UNKNOWN);
	assert_false(v8_position_at(truncated, sizeof(truncated), V8_SPT_SIGNED,
				    10, &raw));
	assert_false(v8_position_at(overlong, sizeof(overlong), V8_SPT_FLAGGED,
				    10, &raw));
	assert_false(v8_position_at(overlong, sizeof(overlong), V8_SPT_SIGNED,
				    10, &raw));
}

/* A SourcePosition's inlining id (bits 31-46, + 1) beside its script
 * offset (bits 1-30, + 1); an external one (bit 0) has no offset. */
static void inlining_ids(void **state)
{
	int32_t id = 0;

	(void)state;
	assert_int_equal(v8_source_position_offset(2 * 1378, &id), 1377);
	assert_int_equal(id, -1);
	assert_int_equal(v8_source_position_offset(
				 (int64_t)(3ull << 31 | 2 * 1060), &id),
			 1059);
	assert_int_equal(id, 2);
	assert_int_equal(
		v8_source_position_offset((int64_t)(0xffffull << 31 | 2), &id),
		0);
	assert_int_equal(id, 0xfffe);
	assert_int_equal(v8_source_position_offset(2 * 10 + 1, &id), -1);
}

/* Baseline code's pc offsets to bytecode offsets (V8's
 * BytecodeOffsetIterator: a pc in (start, end] of a bytecode's code is
 * its), over bytecodes of sizes from a table, with operand scaling
 * prefixes. */
static void baseline_offsets(void **state)
{
	static const uint8_t sizes[3][V8_BYTECODES_MAX] = {
		{1, 1, 1, 1, 1, 2, 3, 1},
		{1, 1, 1, 1, 1, 3, 5, 1},
		{1, 1, 1, 1, 1, 5, 9, 1}};
	/* @0 b5 (2), @2 b6 (3), @5 Wide b5 (1 + 3), @9 ExtraWide b6
	 * (1 + 9) */
	static const uint8_t code[] = {5, 0, 6, 0, 0, 0, 5, 0, 0, 1,
				       6, 0, 0, 0, 0, 0, 0, 0, 0};
	/* the prologue ends at 200 (a two-byte VLQ), then 4, 6, 8, 2 */
	static const uint8_t table[] = {0xc8, 0x01, 4, 6, 8, 2};
	static const struct {
		uint32_t off;
		int32_t bc;
	} want[] = {{1, -1},  {200, -1}, {201, 0},  {204, 0},
		    {205, 2}, {210, 2},	 {211, 5},  {218, 5},
		    {219, 9}, {220, 9},	 {221, -1}, {5000, -1}};
	uint8_t bad[sizeof(code)];

	(void)state;
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
		assert_int_equal(v8_baseline_bytecode_offset(
					 sizes, 8, table, sizeof(table), code,
					 sizeof(code), want[k].off),
				 want[k].bc);
	/* a table with an entry less, bytecodes with one more byte: the
	 * sizes are not this code's */
	assert_int_equal(v8_baseline_bytecode_offset(sizes, 8, table,
						     sizeof(table) - 1, code,
						     sizeof(code), 205),
			 -1);
	assert_int_equal(v8_baseline_bytecode_offset(sizes, 8, table,
						     sizeof(table), code,
						     sizeof(code) - 1, 205),
			 -1);
	/* a bytecode the table does not have; two prefixes in a row */
	memcpy(bad, code, sizeof(code));
	bad[2] = 8;
	assert_int_equal(v8_baseline_bytecode_offset(sizes, 8, table,
						     sizeof(table), bad,
						     sizeof(bad), 205),
			 -1);
	bad[2] = 0;
	bad[3] = 1;
	assert_int_equal(v8_baseline_bytecode_offset(sizes, 8, table,
						     sizeof(table), bad,
						     sizeof(bad), 205),
			 -1);
	/* a VLQ cut at the table's end */
	assert_int_equal(v8_baseline_bytecode_offset(sizes, 8, table, 1, code,
						     sizeof(code), 205),
			 -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bytecode_v8_13),
		cmocka_unit_test(bytecode_v8_14),
		cmocka_unit_test(optimized_v8_14),
		cmocka_unit_test(refused),
		cmocka_unit_test(inlining_ids),
		cmocka_unit_test(baseline_offsets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
