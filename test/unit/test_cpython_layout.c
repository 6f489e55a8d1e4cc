// SPDX-License-Identifier: Apache-2.0
/* CPython line tables (3.9 lnotab, 3.10 linetable, 3.11+ location table)
 * and str objects, on tables made the way each version's compiler makes
 * them, and on malformed ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "runtimes/cpython/cpython_layout.h"

static void layouts_known(void **state)
{
	(void)state;
	for (unsigned m = 9; m <= 13; m++)
		assert_non_null(cpython_layout_find(m));
	assert_null(cpython_layout_find(8));
	assert_null(cpython_layout_find(14));
}

static void lnotab_39(void **state)
{
	/* def at line 10: bytes 0-5 line 10, 6-13 line 11, 14- line 13 */
	static const uint8_t t[] = {6, 1, 8, 2};

	(void)state;
	assert_int_equal(cpython_line(9, t, sizeof(t), 10, 0), 10);
	assert_int_equal(cpython_line(9, t, sizeof(t), 10, 5), 10);
	assert_int_equal(cpython_line(9, t, sizeof(t), 10, 6), 11);
	assert_int_equal(cpython_line(9, t, sizeof(t), 10, 20), 13);
	assert_int_equal(cpython_line(9, t, 3, 10, 20), 11); /* odd length */
}

static void linetable_310(void **state)
{
	/* (bytes, line delta): 4 bytes at +1, 6 bytes none, 8 at +2 */
	static const uint8_t t[] = {4, 1, 6, 0x80, 8, 2};

	(void)state;
	assert_int_equal(cpython_line(10, t, sizeof(t), 20, 2), 21);
	assert_int_equal(cpython_line(10, t, sizeof(t), 20, 5), 0);
	assert_int_equal(cpython_line(10, t, sizeof(t), 20, 12), 23);
	assert_int_equal(cpython_line(10, t, sizeof(t), 20, 40), 0);
}

static void locations_311(void **state)
{
	static const uint8_t t[] = {
		0x80 | 13 << 3 | 0,
		0x02, /* 1 unit, no column, line +1 */
		0x80 | 11 << 3 | 2,
		4,
		9, /* 3 units, one-line form +1 */
		0x80 | 3 << 3 | 1,
		5,		    /* 2 units, short form: same */
		0x80 | 15 << 3 | 0, /* 1 unit, no location */
		0x80 | 14 << 3 | 1,
		0x44,
		0x01,
		0,
		1,
		2, /* 2 units, long
		       form: -... */
	};

	(void)state;
	assert_int_equal(cpython_line(11, t, sizeof(t), 5, 0), 6);
	assert_int_equal(cpython_line(11, t, sizeof(t), 5, 1), 7);
	assert_int_equal(cpython_line(11, t, sizeof(t), 5, 3), 7);
	assert_int_equal(cpython_line(11, t, sizeof(t), 5, 5), 7);
	assert_int_equal(cpython_line(11, t, sizeof(t), 5, 6), 0);
	/* svarint 0x44 0x01 = 4 | 1 << 6 = 68 -> +34 */
	assert_int_equal(cpython_line(11, t, sizeof(t), 5, 7), 41);
	assert_int_equal(cpython_line(11, t, sizeof(t), 5, 9), 0);
	/* cut inside an entry, or not at an entry start */
	assert_int_equal(cpython_line(11, t, 10, 5, 7), 0);
	assert_int_equal(cpython_line(11, (const uint8_t *)"\x01", 1, 5, 0), 0);
	assert_int_equal(cpython_line(12, NULL, 0, 5, 0), 0);
}

static void str_objects(void **state)
{
	const struct cpython_layout *l = cpython_layout_find(12);
	uint8_t obj[128];
	char out[64];
	uint64_t len = 5;
	uint32_t st = 1u << 5 | 1u << 6 | 1u << 2; /* compact ascii */

	(void)state;
	memset(obj, 0, sizeof(obj));
	memcpy(obj + 16, &len, 8);
	memcpy(obj + 32, &st, 4);
	memcpy(obj + l->unicode_ascii_size, "hot_a", 5);
	assert_int_equal(cpython_str(l, obj, sizeof(obj), out, sizeof(out)), 5);
	assert_string_equal(out, "hot_a");
	/* UCS-2 "é€" -> UTF-8 */
	st = 1u << 5 | 2u << 2;
	len = 2;
	memcpy(obj + 16, &len, 8);
	memcpy(obj + 32, &st, 4);
	memcpy(obj + l->unicode_compact_size, "\xe9\x00\xac\x20", 4);
	assert_int_equal(cpython_str(l, obj, sizeof(obj), out, sizeof(out)), 5);
	assert_string_equal(out, "\xc3\xa9\xe2\x82\xac");
	/* longer than the bytes given, too long for out, not compact */
	len = 1000;
	memcpy(obj + 16, &len, 8);
	assert_int_equal(cpython_str(l, obj, sizeof(obj), out, sizeof(out)),
			 -1);
	len = 40;
	st = 1u << 5 | 1u << 6 | 1u << 2;
	memcpy(obj + 16, &len, 8);
	memcpy(obj + 32, &st, 4);
	assert_int_equal(cpython_str(l, obj, sizeof(obj), out, 8), -1);
	st = 1u << 6;
	memcpy(obj + 32, &st, 4);
	assert_int_equal(cpython_str(l, obj, sizeof(obj), out, sizeof(out)),
			 -1);
}

/* 3.13.0's own _Py_DebugOffsets words (read from a live interpreter),
 * shifted so the result differs from the table where it is applied. */
static void debug_offsets_313(void **state)
{
	uint64_t w[44] = {0};
	struct cpython_layout l = *cpython_layout_find(13), before = l;

	(void)state;
	memcpy(w, "xdebugpy", 8);
	w[1] = 0x030d00f0;
	w[5] = 632;
	w[9] = 7344;
	w[21] = 8;
	w[23] = 72;
	w[24] = 152;
	w[29] = 8;
	w[30] = 0;
	w[31] = 56;
	w[33] = 70;
	w[35] = 112;
	w[36] = 120;
	w[37] = 128;
	w[38] = 136;
	w[39] = 68;
	w[43] = 200;
	assert_int_equal(cpython_debug_offsets((uint8_t *)w, sizeof(w), &l), 0);
	/* the table agrees with what 3.13.0 publishes */
	assert_memory_equal(&l, &before, sizeof(l));
	w[24] = 160;
	assert_int_equal(cpython_debug_offsets((uint8_t *)w, sizeof(w), &l), 0);
	assert_int_equal(l.walk.tstate_thread_id, 160);
	/* refused: a frame field past what BPF reads, another version,
	 * free-threaded, a bad cookie, too short */
	l = before;
	w[31] = 4000;
	assert_int_equal(cpython_debug_offsets((uint8_t *)w, sizeof(w), &l),
			 -EINVAL);
	w[31] = 56;
	w[1] = 0x030e00f0;
	assert_int_equal(cpython_debug_offsets((uint8_t *)w, sizeof(w), &l),
			 -EINVAL);
	w[1] = 0x030d00f0;
	w[2] = 1;
	assert_int_equal(cpython_debug_offsets((uint8_t *)w, sizeof(w), &l),
			 -EINVAL);
	w[2] = 0;
	memcpy(w, "xdebugpz", 8);
	assert_int_equal(cpython_debug_offsets((uint8_t *)w, sizeof(w), &l),
			 -EINVAL);
	memcpy(w, "xdebugpy", 8);
	assert_int_equal(cpython_debug_offsets((uint8_t *)w, 100, &l), -EINVAL);
	assert_memory_equal(&l, &before, sizeof(l));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(layouts_known),
		cmocka_unit_test(lnotab_39),
		cmocka_unit_test(linetable_310),
		cmocka_unit_test(locations_311),
		cmocka_unit_test(str_objects),
		cmocka_unit_test(debug_offsets_313),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
