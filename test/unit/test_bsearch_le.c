// SPDX-License-Identifier: Apache-2.0
/* bsearch_le against a linear scan: empty arrays, x below the first key,
 * runs of equal keys, the largest keys, and a key reader that fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "util/bsearch_le.h"

struct elem {
	uint32_t pad;
	uint64_t key;
};

static size_t linear_count(const struct elem *v, size_t n, uint64_t x)
{
	size_t c = 0;

	while (c < n && v[c].key <= x)
		c++;
	return c;
}

static size_t count(const struct elem *v, size_t n, uint64_t x)
{
	return bsearch_le_count(v, n, sizeof(*v), offsetof(struct elem, key),
				x);
}

static void empty_and_edges(void **state)
{
	struct elem v[] = {{0, 10}, {0, 20}, {0, 20}, {0, 20}, {0, UINT64_MAX}};

	(void)state;
	assert_int_equal(count(NULL, 0, 0), 0);
	assert_int_equal(count(NULL, 0, UINT64_MAX), 0);
	assert_int_equal(count(v, 5, 0), 0); /* below the first */
	assert_int_equal(count(v, 5, 9), 0);
	assert_int_equal(count(v, 5, 10), 1); /* equal to the first */
	assert_int_equal(count(v, 5, 19), 1);
	assert_int_equal(count(v, 5, 20), 4); /* the last of equal keys */
	assert_int_equal(count(v, 5, 21), 4);
	assert_int_equal(count(v, 5, UINT64_MAX - 1), 4);
	assert_int_equal(count(v, 5, UINT64_MAX), 5);
	assert_int_equal(count(v, 1, 5), 0);
	assert_int_equal(count(v, 1, 10), 1);
	assert_int_equal(count(v, 1, UINT64_MAX), 1);
}

static void random_arrays_match_scan(void **state)
{
	struct elem v[64];

	(void)state;
	srand(11);
	for (int round = 0; round < 20000; round++) {
		size_t n = (size_t)rand() % 65;
		uint64_t k = (uint64_t)(rand() % 4);

		/* Few distinct steps: many runs of equal keys. */
		for (size_t i = 0; i < n; i++) {
			k += (uint64_t)(rand() % 3);
			v[i].key = k;
		}
		for (uint64_t x = 0; x < k + 3; x++)
			assert_int_equal(count(v, n, x), linear_count(v, n, x));
	}
}

/* Keys 0, 2, 4, ... with every index from `bad` on unreadable. */
struct reader {
	size_t bad;
	unsigned reads;
};

static bool read_key(const void *ctx, size_t i, uint64_t *key)
{
	struct reader *r = (struct reader *)ctx;

	r->reads++;
	if (i >= r->bad)
		return false;
	*key = 2 * (uint64_t)i;
	return true;
}

static void failing_reader(void **state)
{
	struct reader r = {SIZE_MAX, 0};
	size_t c = 99;

	(void)state;
	assert_true(bsearch_le_count_fn(1000, 7, read_key, &r, &c));
	assert_int_equal(c, 4); /* 0 2 4 6 */
	assert_true(r.reads <= 11);
	assert_true(bsearch_le_count_fn(0, 7, read_key, &r, &c));
	assert_int_equal(c, 0);
	/* A key it must read is unreadable: false, count untouched. */
	r.bad = 500;
	c = 99;
	assert_false(bsearch_le_count_fn(1000, 7, read_key, &r, &c));
	assert_int_equal(c, 99);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty_and_edges),
		cmocka_unit_test(random_arrays_match_scan),
		cmocka_unit_test(failing_reader),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
