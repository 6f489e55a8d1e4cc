// SPDX-License-Identifier: Apache-2.0
/* str_arena: offsets and NULs, doubling from the first capacity, the
 * charge before each growth (refused, and given back when the allocation
 * fails) and the UINT32_MAX bound. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "util/str_arena.h"

struct ledger {
	size_t charged, limit, last_new_cap;
	unsigned charges, uncharges;
};

static bool charge(void *ctx, size_t new_cap, size_t grow)
{
	struct ledger *l = ctx;

	l->charges++;
	l->last_new_cap = new_cap;
	if (l->charged + grow > l->limit)
		return false;
	l->charged += grow;
	return true;
}

static void uncharge(void *ctx, size_t grow)
{
	struct ledger *l = ctx;

	l->uncharges++;
	l->charged -= grow;
}

static void push_and_read_back(void **state)
{
	const struct str_arena_growth g = {8, NULL, NULL, NULL};
	struct str_arena a = {0};
	uint32_t o1, o2, o3;

	(void)state;
	assert_int_equal(str_arena_push(&a, "abc", 3, &g, &o1), 0);
	assert_int_equal(a.cap, 8);
	assert_int_equal(str_arena_push(&a, "", 0, &g, &o2), 0);
	/* Only the first 2 bytes of the string are taken. */
	assert_int_equal(str_arena_push(&a, "xyzzy", 2, &g, &o3), 0);
	assert_int_equal(o1, 0);
	assert_int_equal(o2, 4);
	assert_int_equal(o3, 5);
	assert_int_equal(a.len, 8);
	assert_int_equal(a.cap, 8); /* exactly full: no growth */
	assert_string_equal(a.buf + o1, "abc");
	assert_string_equal(a.buf + o2, "");
	assert_string_equal(a.buf + o3, "xy");
	/* Room for nothing more is always there. */
	assert_int_equal(str_arena_reserve(&a, 0, &g), 0);
	assert_int_equal(a.cap, 8);
	/* A long one: doubled until it fits. */
	char big[40];

	memset(big, 'q', sizeof(big));
	assert_int_equal(str_arena_push(&a, big, sizeof(big), &g, &o1), 0);
	assert_int_equal(o1, 8);
	assert_int_equal(a.cap, 64);
	assert_int_equal(strlen(a.buf + o1), sizeof(big));
	assert_string_equal(a.buf + o3, "xy");
	str_arena_free(&a);
	assert_null(a.buf);
	assert_int_equal(a.len + a.cap, 0);
}

static void charged_before_growth(void **state)
{
	struct ledger l = {0, 16, 0, 0, 0};
	const struct str_arena_growth g = {16, charge, uncharge, &l};
	struct str_arena a = {0};
	uint32_t off;

	(void)state;
	assert_int_equal(str_arena_push(&a, "0123456789", 10, &g, &off), 0);
	assert_int_equal(l.charged, 16);
	assert_int_equal(l.last_new_cap, 16);
	/* Growing to 32 would charge 16 more: refused, arena unchanged. */
	assert_int_equal(str_arena_push(&a, "0123456789", 10, &g, &off),
			 -E2BIG);
	assert_int_equal(l.charges, 2);
	assert_int_equal(l.last_new_cap, 32);
	assert_int_equal(a.len, 11);
	assert_int_equal(a.cap, 16);
	assert_int_equal(l.charged, 16);
	l.limit = 32;
	assert_int_equal(str_arena_push(&a, "0123456789", 10, &g, &off), 0);
	assert_int_equal(off, 11);
	assert_int_equal(l.charged, a.cap);
	assert_int_equal(l.uncharges, 0);
	str_arena_free(&a);
}

static void offsets_stay_in_uint32(void **state)
{
	const struct str_arena_growth g = {16, NULL, NULL, NULL};
	struct str_arena a = {0};

	(void)state;
	/* Refused before anything is allocated. */
	assert_int_equal(str_arena_reserve(&a, (size_t)UINT32_MAX + 1, &g),
			 -E2BIG);
	assert_int_equal(str_arena_reserve(&a, SIZE_MAX, &g), -E2BIG);
	assert_null(a.buf);
	/* A full arena (only its length is looked at before growing). */
	a.len = UINT32_MAX - 3;
	a.cap = UINT32_MAX - 3;
	assert_int_equal(str_arena_reserve(&a, 4, &g), -E2BIG);
	assert_int_equal(str_arena_reserve(&a, 0, &g), 0);
	assert_null(a.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(push_and_read_back),
		cmocka_unit_test(charged_before_growth),
		cmocka_unit_test(offsets_stay_in_uint32),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
