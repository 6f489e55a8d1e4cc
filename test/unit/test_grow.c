// SPDX-License-Identifier: Apache-2.0
/* grow_array: doubling from the first capacity, the max it never passes,
 * overflow of the byte size, and the charge taken before each growth. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "util/grow.h"

struct ledger {
	size_t charged, limit, last;
	unsigned charges;
};

static bool charge(void *ctx, size_t bytes)
{
	struct ledger *l = ctx;

	l->charges++;
	l->last = bytes;
	if (l->charged + bytes > l->limit)
		return false;
	l->charged += bytes;
	return true;
}

static void uncharge(void *ctx, size_t bytes)
{
	struct ledger *l = ctx;

	l->charged -= bytes;
}

static void doubles_from_first(void **state)
{
	uint64_t *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(grow_array(&v, &cap, 1, sizeof(*v), 4, 1000, NULL), 0);
	assert_int_equal(cap, 4);
	for (size_t i = 0; i < 4; i++)
		v[i] = i; /* the room is there (ASan checks) */
	/* Room already: untouched. */
	uint64_t *before = v;

	assert_int_equal(grow_array(&v, &cap, 4, sizeof(*v), 4, 1000, NULL), 0);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 4);
	assert_int_equal(grow_array(&v, &cap, 5, sizeof(*v), 4, 1000, NULL), 0);
	assert_int_equal(cap, 8);
	assert_int_equal(v[3], 3); /* kept */
	/* A jump doubles until it holds need. */
	assert_int_equal(grow_array(&v, &cap, 33, sizeof(*v), 4, 1000, NULL),
			 0);
	assert_int_equal(cap, 64);
	v[32] = 1;
	/* Never past max, even when doubling would be. */
	assert_int_equal(grow_array(&v, &cap, 65, sizeof(*v), 4, 100, NULL), 0);
	assert_int_equal(cap, 100);
	v[99] = 1;
	assert_int_equal(grow_array(&v, &cap, 101, sizeof(*v), 4, 100, NULL),
			 -E2BIG);
	assert_int_equal(cap, 100);
	free(v);
}

static void first_above_max_and_zero(void **state)
{
	char *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(grow_array(&v, &cap, 3, 1, 1024, 10, NULL), 0);
	assert_int_equal(cap, 10);
	free(v);
	v = NULL;
	cap = 0;
	assert_int_equal(grow_array(&v, &cap, 3, 1, 0, 10, NULL), 0);
	assert_int_equal(cap, 4); /* no first: from 1 */
	free(v);
}

static volatile size_t near_max_cap = SIZE_MAX / 32 + 1,
		       near_max = SIZE_MAX / 16;

static void sizes_that_overflow(void **state)
{
	struct ledger l = {0, 0, 0, 0};
	const struct grow_charge c = {charge, uncharge, &l};
	uint64_t *v = NULL;
	size_t cap = 0;

	(void)state;
	/* max * elem would not fit a size_t. */
	assert_int_equal(
		grow_array(&v, &cap, 2, sizeof(*v), 4, SIZE_MAX / 4, NULL),
		-E2BIG);
	assert_int_equal(grow_array(&v, &cap, 2, 0, 4, 10, NULL), -E2BIG);
	assert_int_equal(grow_array(&v, &cap, SIZE_MAX, sizeof(*v), 4,
				    SIZE_MAX / sizeof(*v), NULL),
			 -E2BIG);
	assert_null(v);
	assert_int_equal(cap, 0);
	/* Doubling near max clamps instead of wrapping: the charge sees the
	 * growth to max (refused here, so nothing is allocated). Read at run
	 * time so the compiler does not judge the realloc it never reaches. */
	cap = near_max_cap;
	assert_int_equal(grow_array(&v, &cap, cap + 1, 16, 4, near_max, &c),
			 -EDQUOT);
	assert_int_equal(l.charges, 1);
	assert_int_equal(l.last, (SIZE_MAX / 16 - (SIZE_MAX / 32 + 1)) * 16);
	assert_int_equal(cap, SIZE_MAX / 32 + 1);
	assert_null(v);
}

static void charged_first(void **state)
{
	struct ledger l = {0, 8 * sizeof(uint32_t), 0, 0};
	const struct grow_charge c = {charge, uncharge, &l};
	uint32_t *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(grow_array(&v, &cap, 1, sizeof(*v), 4, 100, &c), 0);
	assert_int_equal(l.charged, 4 * sizeof(*v));
	assert_int_equal(grow_array(&v, &cap, 5, sizeof(*v), 4, 100, &c), 0);
	assert_int_equal(l.charged, 8 * sizeof(*v)); /* only the growth */
	/* Refused: nothing allocated, capacity unchanged. */
	assert_int_equal(grow_array(&v, &cap, 9, sizeof(*v), 4, 100, &c),
			 -EDQUOT);
	assert_int_equal(cap, 8);
	assert_int_equal(l.charged, 8 * sizeof(*v));
	assert_int_equal(l.charges, 3);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(doubles_from_first),
		cmocka_unit_test(first_above_max_and_zero),
		cmocka_unit_test(sizes_that_overflow),
		cmocka_unit_test(charged_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
