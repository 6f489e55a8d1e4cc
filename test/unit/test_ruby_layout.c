// SPDX-License-Identifier: Apache-2.0
/* CRuby's decoders: versions, the TLS and tail-jump code patterns of
 * Debian's libruby, .eh_frame_hdr bounds, String objects and the succinct
 * line index (built here the way iseq.c builds it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "runtimes/ruby/ruby_layout.h"

static void layouts_known(void **state)
{
	unsigned major, minor;

	(void)state;
	assert_non_null(ruby_layout_find(3, 1));
	assert_non_null(ruby_layout_find(3, 3));
	assert_null(ruby_layout_find(3, 2));
	assert_null(ruby_layout_find(3, 4));
	assert_int_equal(ruby_version_parse("3.3.8", 5, &major, &minor), 0);
	assert_int_equal(major * 10 + minor, 33);
	assert_int_equal(ruby_version_parse("3.", 2, &major, &minor), -1);
	assert_int_equal(ruby_version_parse("x3.1", 4, &major, &minor), -1);
}

/* Debian 13's libruby-3.3 rb_thread_current at 0x235ab0 */
static void tls_pattern(void **state)
{
	static const uint8_t code[] = {
		0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08, 0x66, 0x48,
		0x8d, 0x3d, 0x10, 0x50, 0x22, 0x00, 0x66, 0x66, 0x48, 0xe8,
		0x38, 0x9c, 0xe0, 0xff, 0x48, 0x8b, 0x00, 0x48, 0x8b, 0x40};
	uint64_t got = 0;

	(void)state;
	assert_int_equal(ruby_tls_from_code(code, sizeof(code), 0x235ab0, &got),
			 0);
	assert_int_equal(got, 0x45aad0);
	assert_int_equal(ruby_tls_from_code(code, 20, 0x235ab0, &got), -1);
}

static void tail_jumps(void **state)
{
	/* jmp +0 (inside), then jmp to 0x1000 - ... outside */
	uint8_t code[32] = {0};
	uint64_t t[4];
	int32_t rel = -0x200;

	(void)state;
	code[0] = 0xe9; /* jmp 0x2005: inside */
	code[10] = 0xe9;
	memcpy(code + 11, &rel, 4);
	assert_int_equal(ruby_tail_jumps(code, sizeof(code), 0x2000, t, 4), 1);
	assert_int_equal(t[0], 0x2000 + 15 - 0x200);
}

static void eh_frame_hdr(void **state)
{
	uint8_t h[12 + 3 * 8] = {1, 0x1b, 0x03, 0x3b};
	int32_t locs[3] = {0x100, 0x180, 0x400};
	uint32_t n = 3;
	uint64_t end = 0;

	(void)state;
	memcpy(h + 8, &n, 4);
	for (int i = 0; i < 3; i++)
		memcpy(h + 12 + 8 * i, &locs[i], 4);
	assert_int_equal(ruby_function_end(h, sizeof(h), 0x1000, 0x1180, &end),
			 0);
	assert_int_equal(end, 0x1400);
	/* not a function start, the last one, a short table */
	assert_int_equal(ruby_function_end(h, sizeof(h), 0x1000, 0x1190, &end),
			 -1);
	assert_int_equal(ruby_function_end(h, sizeof(h), 0x1000, 0x1400, &end),
			 -1);
	assert_int_equal(ruby_function_end(h, 20, 0x1000, 0x1100, &end), -1);
}

static void strings(void **state)
{
	const struct ruby_layout *l31 = ruby_layout_find(3, 1),
				 *l33 = ruby_layout_find(3, 3);
	uint8_t h[64] = {0};
	uint64_t flags, heap, len, n;
	char out[32], big[RUBY_NAME_MAX + 1];

	(void)state;
	/* 3.1 embedded: length in the flags, bytes at 16 */
	flags = 0x05 | (5ull << 14);
	memcpy(h, &flags, 8);
	memcpy(h + 16, "hot_a", 5);
	assert_int_equal(
		ruby_str_decode(l31, h, 64, out, sizeof(out), &heap, &len), 0);
	assert_string_equal(out, "hot_a");
	assert_int_equal(heap, 0);
	/* 3.3 embedded: len at 16, bytes at 24 */
	memset(h, 0, sizeof(h));
	flags = 0x05;
	n = 6;
	memcpy(h, &flags, 8);
	memcpy(h + 16, &n, 8);
	memcpy(h + 24, "<main>", 6);
	assert_int_equal(
		ruby_str_decode(l33, h, 64, out, sizeof(out), &heap, &len), 0);
	assert_string_equal(out, "<main>");
	/* heap: pointer and length to read next */
	flags = 0x05 | RUBY_STR_NOEMBED;
	n = 300;
	memcpy(h, &flags, 8);
	memcpy(h + 16, &n, 8);
	n = 0x7f0000001000;
	memcpy(h + 24, &n, 8);
	assert_int_equal(
		ruby_str_decode(l33, h, 64, out, sizeof(out), &heap, &len), 0);
	assert_int_equal(heap, 0x7f0000001000);
	assert_int_equal(len, 300);
	/* not a String; an embedded length past the object */
	flags = 0x07;
	memcpy(h, &flags, 8);
	assert_int_equal(
		ruby_str_decode(l33, h, 64, out, sizeof(out), &heap, &len), -1);
	/* 3.3 embedded beyond the 64 bytes read (a slot of up to 640 bytes):
	 * its length, the rest to read from the object; too long for out, or
	 * for any name, refused */
	flags = 0x05;
	n = 60;
	memcpy(h, &flags, 8);
	memcpy(h + 16, &n, 8);
	assert_int_equal(
		ruby_str_decode(l33, h, 64, big, sizeof(big), &heap, &len), 1);
	assert_int_equal(len, 60);
	assert_int_equal(heap, 0);
	assert_int_equal(
		ruby_str_decode(l33, h, 64, out, sizeof(out), &heap, &len), -1);
	n = RUBY_NAME_MAX + 1;
	memcpy(h + 16, &n, 8);
	assert_int_equal(
		ruby_str_decode(l33, h, 64, big, sizeof(big), &heap, &len), -1);
}

/* iseq.c succ_index_table_create, for positions pos[] (sorted). */
static void succ_build(const int *pos, int size, int max_pos, uint8_t *t)
{
	int imm_size = (max_pos < RUBY_SUCC_IMM_SIZE ? max_pos + 8
						     : RUBY_SUCC_IMM_SIZE) /
		       9;
	int succ_size = (max_pos < RUBY_SUCC_IMM_SIZE
				 ? 0
				 : (max_pos - RUBY_SUCC_IMM_SIZE + 511)) /
			512;
	int r = 0;

	for (int j = 0; j < imm_size; j++) {
		uint64_t w = 0;

		for (int i = 0; i < 9; i++) {
			if (r < size && pos[r] == j * 9 + i)
				r++;
			w |= (uint64_t)r << (7 * i);
		}
		memcpy(t + 8 * j, &w, 8);
	}
	for (int k = 0; k < succ_size; k++) {
		uint8_t *b =
			t + RUBY_SUCC_IMM_BYTES + RUBY_SUCC_BLOCK_BYTES * k;
		uint32_t rank = (uint32_t)r;
		uint64_t ranks = 0;
		int small = 0;

		memcpy(b, &rank, 4);
		for (int j = 0; j < 8; j++) {
			uint64_t bits = 0;

			if (j)
				ranks |= (uint64_t)small << ((j - 1) * 9);
			for (int i = 0; i < 64; i++)
				if (r < size &&
				    pos[r] == k * 512 + j * 64 + i +
						      RUBY_SUCC_IMM_SIZE) {
					bits |= 1ull << i;
					r++;
				}
			memcpy(b + 16 + 8 * j, &bits, 8);
			small += __builtin_popcountll(bits);
		}
		memcpy(b + 8, &ranks, 8);
	}
}

static int64_t succ_at(const uint8_t *t, uint64_t pos)
{
	uint64_t off;
	size_t len;

	ruby_succ_chunk(pos, &off, &len);
	return ruby_succ_lookup(t + off, len, pos);
}

static void succ_index(void **state)
{
	static const int pos[] = {0, 3, 10, 60, 600, 700, 1200};
	static const struct {
		uint64_t pos;
		int64_t entry;
	} want[] = {{0, 0},   {2, 0},	{3, 1},	  {9, 1},    {10, 2},
		    {53, 2},  {54, 2},	{59, 2},  {60, 3},   {599, 3},
		    {600, 4}, {699, 4}, {700, 5}, {1199, 5}, {1200, 6}};
	uint8_t t[RUBY_SUCC_IMM_BYTES + 3 * RUBY_SUCC_BLOCK_BYTES] = {0};

	(void)state;
	succ_build(pos, 7, 1200, t);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(succ_at(t, want[i].pos), want[i].entry);
	assert_int_equal(ruby_succ_lookup(t, 4, 3), -1);
}

/* Debian 13's libruby-3.3: the function rb_id2str tail-jumps to
 * (get_id_serial_entry), from 0x229c93: test %edi; je; cmp %edi,
 * last_id(%rip); jb; mov ids(%rip),%rdi */
static void symbols_pattern(void **state)
{
	static const uint8_t code[] = {0x85, 0xff, 0x74, 0x79, 0x39, 0x3d, 0xc3,
				       0x14, 0x23, 0x00, 0x72, 0x71, 0x48, 0x8b,
				       0x3d, 0xca, 0x14, 0x23, 0x00, 0x89};
	uint64_t last_id = 0, ids = 0;

	(void)state;
	assert_int_equal(ruby_symbols_from_code(code, sizeof(code), 0x229c93,
						&last_id, &ids),
			 0);
	assert_int_equal(last_id, 0x45b160);
	assert_int_equal(ids, 0x45b170);
	/* no such sequence */
	assert_int_equal(
		ruby_symbols_from_code(code, 12, 0x229c93, &last_id, &ids), -1);
	/* Ruby 3.3.8 built -O3 (as the official images are): rb_id2str
	 * itself (from 0x2a48ed), %ebx compared: xor %ebp,%ebp; test
	 * %ebx,%ebx; je; cmp %ebx,last_id(%rip); jb; mov ids(%rip),%rdi */
	static const uint8_t inlined[] = {0x31, 0xed, 0x85, 0xdb, 0x74, 0x65,
					  0x39, 0x1d, 0xe7, 0x62, 0x33, 0x00,
					  0x72, 0x5d, 0x48, 0x8b, 0x3d, 0xee,
					  0x62, 0x33, 0x00, 0x89};
	assert_int_equal(ruby_symbols_from_code(inlined, sizeof(inlined),
						0x2a48ed, &last_id, &ids),
			 0);
	assert_int_equal(last_id, 0x5dabe0);
	assert_int_equal(ids, 0x5dabf0);
	/* the same shape whose loaded word is not 16 bytes on: refused */
	{
		uint8_t other[sizeof(inlined)];

		memcpy(other, inlined, sizeof(other));
		other[17] ^= 0x40;
		assert_int_equal(ruby_symbols_from_code(other, sizeof(other),
							0x2a48ed, &last_id,
							&ids),
				 -1);
	}
	/* operator IDs are their own serial; others lose 4 scope bits */
	assert_int_equal(ruby_id_serial('+'), '+');
	assert_int_equal(ruby_id_serial(RUBY_LAST_OP_ID), RUBY_LAST_OP_ID);
	assert_int_equal(ruby_id_serial(0xf01), 0xf0);
}

/* Debian 12's arm64 libruby-3.1: rb_id2str (0x1f8420) ends in `b`
 * to get_id_serial_entry (0x1f6124), whose check of the serial against
 * the symbol table is at 0x1f6170: adrp x0, 0x380000; ldr w1, [x0,
 * #384]; cmp w19, w1; b.hi; add x0, x0, #0x180; lsr; ldr x0, [x0, #16] */
static void symbols_pattern_a64(void **state)
{
	static const uint8_t id2str[] = {
		0x1f, 0xa4, 0x02, 0xf1, 0x02, 0xfc, 0x44, 0xd3, 0x00, 0x90,
		0x82, 0x1a, 0x01, 0x00, 0x80, 0x52, 0x3d, 0xf7, 0xff, 0x17};
	static const uint8_t code[] = {0x40, 0x0c, 0x00, 0xd0, 0x01, 0x80, 0x41,
				       0xb9, 0x7f, 0x02, 0x01, 0x6b, 0xa8, 0x02,
				       0x00, 0x54, 0x00, 0x00, 0x06, 0x91, 0x61,
				       0x7e, 0x09, 0x53, 0x00, 0x08, 0x40, 0xf9,
				       0x02, 0x00, 0x40, 0xf9};
	static const uint8_t loop[] = {0x00, 0x00, 0x00, 0x14}; /* b . */
	uint64_t to[2] = {0}, last_id = 0, ids = 0;
	uint8_t other[sizeof(code)];

	(void)state;
	assert_int_equal(
		ruby_tail_jumps_a64(id2str, sizeof(id2str), 0x1f8420, to, 2),
		1);
	assert_int_equal(to[0], 0x1f6124);
	/* a branch inside the function is no tail jump */
	assert_int_equal(ruby_tail_jumps_a64(loop, sizeof(loop), 0x1000, to, 2),
			 0);
	assert_int_equal(ruby_symbols_from_code_a64(code, sizeof(code),
						    0x1f6170, &last_id, &ids),
			 0);
	assert_int_equal(last_id, 0x380180);
	assert_int_equal(ids, 0x380190);
	/* the counter loaded from another register than the adrp's: no
	 * such sequence */
	memcpy(other, code, sizeof(code));
	other[4] = 0x81; /* ldr w1, [x4, #384] */
	assert_int_equal(ruby_symbols_from_code_a64(other, sizeof(other),
						    0x1f6170, &last_id, &ids),
			 -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(layouts_known),
		cmocka_unit_test(tls_pattern),
		cmocka_unit_test(tail_jumps),
		cmocka_unit_test(eh_frame_hdr),
		cmocka_unit_test(strings),
		cmocka_unit_test(succ_index),
		cmocka_unit_test(symbols_pattern),
		cmocka_unit_test(symbols_pattern_a64),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
