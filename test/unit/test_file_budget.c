// SPDX-License-Identifier: Apache-2.0
/*
 * The memory budget of data derived from mapped files, beyond symbols:
 * MiniDebugInfo decompression (an xz bomb is refused at the budget, not at
 * the fixed output cap).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <lzma.h>

#include "symbolize/debug_info.h"
#include "util/mem_budget.h"

/* An xz stream of n zero bytes (a few KiB for any n here). */
static uint8_t *xz_zeros(size_t n, size_t *len)
{
	uint8_t *zeros = calloc(1, n), *out = malloc(1u << 20);
	size_t pos = 0;

	assert_non_null(zeros);
	assert_non_null(out);
	assert_int_equal(lzma_easy_buffer_encode(0, LZMA_CHECK_CRC64, NULL,
						 zeros, n, out, &pos, 1u << 20),
			 LZMA_OK);
	free(zeros);
	*len = pos;
	return out;
}

/* 48 MiB of zeros from a few KiB: within an unlimited account it inflates
 * whole; an 8 MiB account refuses it (-EDQUOT) before holding more than
 * its budget, and gets every byte back either way. */
static void xz_bomb_refused_at_budget(void **state)
{
	const size_t n = 48u << 20;
	struct mem_budget b;
	struct mem_account a;
	uint8_t *xz, *out;
	size_t len, out_len;

	(void)state;
	xz = xz_zeros(n, &len);
	assert_true(len < (64u << 10));

	mem_budget_init(&b, 1ull << 30, 1ull << 30);
	mem_account_init(&a, &b);
	assert_int_equal(debug_info_unxz(xz, len, &out, &out_len, &a), 0);
	assert_int_equal(out_len, n);
	assert_int_equal(atomic_load(&a.bytes), n);
	free(out);
	mem_account_uncharge(&a, out_len);
	assert_int_equal(mem_budget_used(&b), 0);

	mem_budget_init(&b, 8u << 20, 8u << 20);
	mem_account_init(&a, &b);
	assert_int_equal(debug_info_unxz(xz, len, &out, &out_len, &a), -EDQUOT);
	assert_null(out);
	assert_int_equal(out_len, 0);
	assert_int_equal(atomic_load(&a.bytes), 0);
	assert_true(atomic_load(&b.refused) >= 1);
	free(xz);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(xz_bomb_refused_at_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
