// SPDX-License-Identifier: Apache-2.0
/* idxmap against a brute-force model under random insert/remove. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "util/idxmap.h"

#define N 20000

static uint64_t keys[N];
static bool live[N];

static bool eq(const void *ctx, uint32_t v)
{
	return keys[v] == *(const uint64_t *)ctx;
}

static void random_ops_match_model(void **state)
{
	struct idxmap m;
	size_t nlive = 0;

	(void)state;
	idxmap_init(&m);
	srand(7);
	for (uint32_t i = 0; i < N; i++)
		keys[i] = ((uint64_t)rand() << 32) ^ (uint64_t)rand() ^ i;
	for (int round = 0; round < 200000; round++) {
		uint32_t i = (uint32_t)rand() % N;
		/* Few hash bits on purpose: long collision chains. */
		uint64_t h = keys[i] & 0xff;
		uint32_t v;
		bool found = idxmap_find(&m, h, eq, &keys[i], &v);

		assert_int_equal(found, live[i]);
		if (found)
			assert_int_equal(v, i);
		if (!live[i]) {
			assert_int_equal(idxmap_insert(&m, h, i), 0);
			live[i] = true;
			nlive++;
		} else if (rand() % 2) {
			idxmap_remove(&m, h, i);
			live[i] = false;
			nlive--;
		}
		assert_int_equal(m.len, nlive);
	}
	idxmap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(random_ops_match_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
