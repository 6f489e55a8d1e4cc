// SPDX-License-Identifier: Apache-2.0
/*
 * The functions optimized V8 code inlined at a pc, followed through the
 * code's deoptimization data (v8_inlining_chain) in a heap built here
 * the way V8 lays it out (Node 22's layout: a FixedArray of data, a
 * WeakFixedArray of literals, a ByteArray of 16-byte InliningPositions):
 * a top level that inlined mid, which inlined leaf. And heaps that lie:
 * a chain that loops, an index out of its array, a literal that is no
 * SharedFunctionInfo, a positions array of the wrong size or type.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "runtimes/v8/v8_heap.h"
#include "runtimes/v8/v8_layout.h"

#define BASE 0x100000ull
#define SIZE 4096

enum { T_SFI = 180, T_CODE = 206, T_BYTES = 186, T_FIXED = 174, T_WEAK = 247 };

static uint8_t mem[SIZE];

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < BASE || addr - BASE > SIZE || len > SIZE - (addr - BASE))
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), len);
	return 0;
}

static void put(uint64_t addr, uint64_t v)
{
	memcpy(mem + (addr - BASE), &v, 8);
}

static uint64_t smi(int64_t v)
{
	return (uint64_t)v << 32;
}

/* objects: their untagged addresses */
enum {
	MAPS = BASE,		  /* 5 maps, 64 bytes apart */
	CODE = BASE + 0x200,	  /* Code: deopt data at +8 */
	DATA = BASE + 0x300,	  /* FixedArray of 9 */
	LITS = BASE + 0x400,	  /* WeakFixedArray of 3 */
	POSITIONS = BASE + 0x500, /* ByteArray of 2 InliningPositions */
	SFI_MID = BASE + 0x600,
	SFI_LEAF = BASE + 0x680,
	OTHER = BASE + 0x700, /* a FixedArray, no function */
};

static uint64_t map_of(uint16_t type)
{
	static const uint16_t types[] = {T_SFI, T_CODE, T_BYTES, T_FIXED,
					 T_WEAK};
	for (unsigned k = 0; k < 5; k++)
		if (types[k] == type)
			return MAPS + 64 * k + 1;
	return 0;
}

/* A packed SourcePosition: script offset and inlining id, each + 1. */
static int64_t position(int32_t offset, int32_t inlining_id)
{
	return (int64_t)((uint64_t)(inlining_id + 1) << 31 |
			 (uint64_t)(offset + 1) << 1);
}

static void inlining_position(unsigned k, int64_t pos, int32_t function)
{
	uint64_t at = POSITIONS + 16 + 16 * k;

	put(at, (uint64_t)pos);
	put(at + 8, (uint32_t)function);
}

static struct v8_layout layout;

/* top level -> mid (at offset 100) -> leaf (at mid's offset 50) */
static int heap(void **state)
{
	static const uint16_t types[] = {T_SFI, T_CODE, T_BYTES, T_FIXED,
					 T_WEAK};

	(void)state;
	memset(mem, 0, sizeof(mem));
	for (unsigned k = 0; k < 5; k++)
		memcpy(mem + 64 * k + 12, &types[k], 2);
	put(CODE, map_of(T_CODE));
	put(CODE + 8, DATA + 1);
	put(DATA, map_of(T_FIXED));
	put(DATA + 8, smi(9));
	put(DATA + 16 + 8 * 1, smi(2)); /* inlined function count */
	put(DATA + 16 + 8 * 2, LITS + 1);
	put(DATA + 16 + 8 * 7, POSITIONS + 1);
	put(LITS, map_of(T_WEAK));
	put(LITS + 8, smi(3));
	put(LITS + 16, SFI_MID + 3); /* a weak reference */
	put(LITS + 24, SFI_LEAF + 1);
	put(LITS + 32, OTHER + 1); /* a literal, not an inlined function */
	put(POSITIONS, map_of(T_BYTES));
	put(POSITIONS + 8, smi(32));
	inlining_position(0, position(100, -1), 0); /* mid, called at 100 */
	inlining_position(1, position(50, 0), 1);   /* leaf, in mid at 50 */
	put(SFI_MID, map_of(T_SFI));
	put(SFI_LEAF, map_of(T_SFI));
	put(OTHER, map_of(T_FIXED));
	put(OTHER + 8, smi(0));
	layout = (struct v8_layout){.tagged_size = 8,
				    .smi_shift = 32,
				    .smi_tag_mask = 1,
				    .heap_tag_mask = 3,
				    .heap_tag = 1,
				    .map_instance_type = 12,
				    .type_sfi = T_SFI,
				    .array_length = 8,
				    .type_code = T_CODE,
				    .type_byte_array = T_BYTES,
				    .type_trusted_byte_array = -1,
				    .code_deopt = 8,
				    .deopt_count_idx = 1,
				    .deopt_literals_idx = 2,
				    .deopt_positions_idx = 7,
				    .type_fixed_array = T_FIXED,
				    .type_trusted_fixed_array = -1,
				    .type_protected_fixed_array = -1,
				    .type_weak_fixed_array = T_WEAK,
				    .type_trusted_weak_fixed_array = -1};
	return 0;
}

static int32_t chain(int64_t raw, struct v8_inlined *inl)
{
	struct v8_reader r = {
		.l = &layout, .read = mem_read, .budget = V8_READ_BUDGET};

	memset(inl, 0xa5, sizeof(*inl));
	return v8_inlining_chain(&r, CODE + 1, raw, inl);
}

static void follows_the_chain(void **state)
{
	struct v8_inlined inl;

	(void)state;
	/* in leaf at its offset 20: leaf, mid, and the top level at 100 */
	assert_int_equal(chain(position(20, 1), &inl), 100);
	assert_int_equal(inl.n, 2);
	assert_int_equal(inl.sfi[0], SFI_LEAF + 1);
	assert_int_equal(inl.pos[0], 20);
	assert_int_equal(inl.sfi[1], SFI_MID + 1);
	assert_int_equal(inl.pos[1], 50);
	/* in mid's own code at 60 */
	assert_int_equal(chain(position(60, 0), &inl), 100);
	assert_int_equal(inl.n, 1);
	assert_int_equal(inl.sfi[0], SFI_MID + 1);
	assert_int_equal(inl.pos[0], 60);
	/* in the code's own function: no data read */
	put(CODE + 8, 0);
	assert_int_equal(chain(position(7, -1), &inl), 7);
	assert_int_equal(inl.n, 0);
}

static void refuses_a_lying_heap(void **state)
{
	struct v8_inlined inl;

	(void)state;
	/* an id past the positions */
	assert_int_equal(chain(position(20, 2), &inl), -1);
	/* a chain that loops: leaf's caller is leaf */
	inlining_position(1, position(50, 1), 1);
	assert_int_equal(chain(position(20, 1), &inl), -1);
	assert_true(inl.n <= V8_INLINE_MAX);
	heap(NULL);
	/* a function index past the inlined ones (the third literal) */
	inlining_position(1, position(50, 0), 2);
	assert_int_equal(chain(position(20, 1), &inl), -1);
	heap(NULL);
	/* a literal that is no SharedFunctionInfo */
	put(LITS + 24, OTHER + 1);
	assert_int_equal(chain(position(20, 1), &inl), -1);
	heap(NULL);
	/* positions of a size that is no whole number of entries */
	put(POSITIONS + 8, smi(24));
	assert_int_equal(chain(position(20, 1), &inl), -1);
	heap(NULL);
	/* positions that are no ByteArray */
	put(POSITIONS, map_of(T_FIXED));
	assert_int_equal(chain(position(20, 1), &inl), -1);
	heap(NULL);
	/* data that is no array; an index past it */
	put(DATA, map_of(T_SFI));
	assert_int_equal(chain(position(20, 1), &inl), -1);
	heap(NULL);
	put(DATA + 8, smi(5));
	assert_int_equal(chain(position(20, 1), &inl), -1);
	heap(NULL);
	/* more inlined functions than literals */
	put(DATA + 16 + 8, smi(4));
	assert_int_equal(chain(position(20, 1), &inl), -1);
	heap(NULL);
	/* a cleared weak literal (V8's cleared reference: 3) */
	put(LITS + 16, 3);
	assert_int_equal(chain(position(20, 1), &inl), -1);
}

/* The code memo: found by a pc inside a span only, within its time,
 * replacing the entry of the same code or the one read longest ago. */
static void code_memo(void **state)
{
	static struct v8_code_memo m;
	static uint8_t big[V8_CODE_MEMO_TABLE + 1];
	const uint8_t table[3] = {1, 2, 3};
	const uint64_t s = 1000000; /* 1 ms */
	int k;

	(void)state;
	memset(&m, 0, sizeof(m));
	assert_int_equal(v8_code_memo_find(&m, 0x1000, s), -1);
	k = v8_code_memo_put(&m, 0x11, 0x1000, 0x100, false, table, 3, s);
	assert_int_equal(v8_code_memo_find(&m, 0x1000, s), k);
	assert_int_equal(v8_code_memo_find(&m, 0x10ff, s + V8_CODE_MEMO_NS - 1),
			 k);
	assert_int_equal(m.e[k].table_len, 3);
	assert_memory_equal(m.e[k].table, table, 3);
	/* the end is past the code; the time is the read's, not a use's */
	assert_int_equal(v8_code_memo_find(&m, 0x1100, s), -1);
	assert_int_equal(v8_code_memo_find(&m, 0xfff, s), -1);
	assert_int_equal(v8_code_memo_find(&m, 0x1000, s + V8_CODE_MEMO_NS),
			 -1);
	/* the same code again: its entry, read anew; a table too large is
	 * not kept */
	assert_int_equal(v8_code_memo_put(&m, 0x11, 0x1000, 0x100, false, big,
					  sizeof(big), 2 * s),
			 k);
	assert_int_equal(m.e[k].table_len, 0);
	/* full: the entry read longest ago goes */
	for (uint64_t i = 1; i < V8_CODE_MEMO; i++)
		v8_code_memo_put(&m, 0x11 + 0x100 * i, 0x1000 + 0x1000 * i,
				 0x100, false, table, 3, (2 + i) * s);
	assert_int_equal(v8_code_memo_find(&m, 0x1000, 3 * s), k);
	assert_int_equal(v8_code_memo_put(&m, 0x99, 0x90000, 0x100, true, NULL,
					  0, 30 * s),
			 k);
	assert_int_equal(v8_code_memo_find(&m, 0x1000, 30 * s), -1);
	k = v8_code_memo_find(&m, 0x90050, 30 * s);
	assert_true(k >= 0 && m.e[k].baseline && m.e[k].code == 0x99);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(follows_the_chain, heap),
		cmocka_unit_test_setup(refuses_a_lying_heap, heap),
		cmocka_unit_test(code_memo),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
