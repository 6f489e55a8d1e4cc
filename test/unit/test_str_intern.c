// SPDX-License-Identifier: Apache-2.0
/*
 * The string set dwarf_lines keeps names in: one id per distinct string,
 * pointers that survive any number of later adds (lookups hand them out
 * and caches keep them), refusals by the budget that leave the set usable,
 * and every charged byte given back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/str_intern.h"

struct budget {
	size_t used, limit;
};

static bool take(void *ctx, size_t bytes)
{
	struct budget *b = ctx;

	if (b->used + bytes > b->limit)
		return false;
	b->used += bytes;
	return true;
}

static void give(void *ctx, size_t bytes)
{
	struct budget *b = ctx;

	assert_true(bytes <= b->used);
	b->used -= bytes;
}

static void ids_and_stable_pointers(void **state)
{
	struct budget b = {0, SIZE_MAX};
	const struct grow_charge c = {take, give, &b};
	struct str_intern t = {0};
	const char *first;
	uint32_t id, again;
	char s[32];

	(void)state;
	assert_int_equal(str_intern_add(&t, "ceval.c", 7, &c, &id), 0);
	first = str_intern_get(&t, id);
	assert_string_equal(first, "ceval.c");
	/* enough strings for many chunks and several rehashes */
	for (int i = 0; i < 100000; i++) {
		int n = snprintf(s, sizeof(s), "name_%d", i);

		assert_int_equal(str_intern_add(&t, s, (size_t)n, &c, &id), 0);
		assert_int_equal(id, (uint32_t)i + 1);
	}
	assert_ptr_equal(str_intern_get(&t, 0), first);
	for (int i = 0; i < 100000; i += 997) {
		int n = snprintf(s, sizeof(s), "name_%d", i);

		assert_int_equal(str_intern_add(&t, s, (size_t)n, &c, &again),
				 0);
		assert_int_equal(again, (uint32_t)i + 1);
		assert_string_equal(str_intern_get(&t, again), s);
	}
	/* a prefix is another string */
	assert_int_equal(str_intern_add(&t, "ceval", 5, &c, &id), 0);
	assert_int_equal(id, 100001);
	assert_null(str_intern_get(&t, 100002));
	assert_true(b.used > 100000 * 8);
	str_intern_free(&t, &c);
	assert_int_equal(b.used, 0);
}

static void refusals(void **state)
{
	struct budget b = {0, 64 << 10};
	const struct grow_charge c = {take, give, &b};
	struct str_intern t = {0};
	static char big[STR_INTERN_MAX_LEN + 2];
	char s[32];
	uint32_t id;
	int err = 0, added = 0;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	assert_int_equal(str_intern_add(&t, big, sizeof(big) - 1, &c, &id),
			 -E2BIG);
	assert_int_equal(str_intern_add(&t, "a\0b", 3, &c, &id), -E2BIG);
	while (!err) {
		int n = snprintf(s, sizeof(s), "s%d", added);

		err = str_intern_add(&t, s, (size_t)n, &c, &id);
		added += !err;
	}
	assert_int_equal(err, -EDQUOT);
	assert_true(b.used <= b.limit);
	/* what was added is still there and found */
	assert_int_equal(str_intern_add(&t, "s0", 2, &c, &id), 0);
	assert_int_equal(id, 0);
	assert_string_equal(str_intern_get(&t, (uint32_t)added - 1),
			    (snprintf(s, sizeof(s), "s%d", added - 1), s));
	str_intern_free(&t, &c);
	assert_int_equal(b.used, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ids_and_stable_pointers),
		cmocka_unit_test(refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
