// SPDX-License-Identifier: Apache-2.0
/*
 * The unwind builder's sort of spans (unwind_spans_sort) against a stable
 * reference, on the shapes real files give (one run per CFI section, plus
 * a Go binary's pclntab functions) and on shuffled input: the same order,
 * ties included; a merge refused by the budget still sorts (by qsort, ties
 * in any order, as before) without failing the build.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "unwind/unwind_internal.h"
#include "util/mem_budget.h"

#define N 20000

/* Reference: insertion by lo, ties in input order (stable). Input order
 * is kept in rule.cfa_offset. */
static int ref_cmp(const void *a, const void *b)
{
	const struct unwind_span *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->rule.cfa_offset < y->rule.cfa_offset	 ? -1
	       : x->rule.cfa_offset > y->rule.cfa_offset ? 1
							 : 0;
}

/* n spans in `runs` ascending runs of random lengths; lo values repeat so
 * that ties occur within and across runs. */
static void fill(struct unwind_span *v, size_t n, size_t runs, unsigned seed)
{
	uint64_t lo = 0;

	srand(seed);
	for (size_t i = 0; i < n; i++) {
		if (runs && i % (n / runs + 1) == 0)
			lo = (uint64_t)(rand() % 1000) * 16;
		else if (!runs)
			lo = (uint64_t)(rand() % 5000) * 16;
		else
			lo += (uint64_t)(rand() % 3) * 16; /* 0: a tie */
		v[i] = (struct unwind_span){.lo = lo, .hi = lo + 16};
		v[i].rule.cfa_offset = (int32_t)i;
	}
}

/* stable: ties in input order too (the merge); else by lo only (qsort,
 * as before the merge). */
static void check(size_t runs, struct unwind_mem *mem, unsigned seed,
		  bool stable)
{
	struct unwind_span *v = calloc(N, sizeof(*v)),
			   *want = calloc(N, sizeof(*want));
	struct unwind_spans s = {.v = v, .n = N, .cap = N, .mem = mem};

	assert_non_null(v);
	assert_non_null(want);
	fill(v, N, runs, seed);
	memcpy(want, v, N * sizeof(*v));
	qsort(want, N, sizeof(*want), ref_cmp);
	unwind_spans_sort(&s);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(v[i].lo, want[i].lo);
		if (stable)
			assert_int_equal(v[i].rule.cfa_offset,
					 want[i].rule.cfa_offset);
	}
	free(v);
	free(want);
}

static void runs_of_real_files_merge_stably(void **state)
{
	(void)state;
	check(1, NULL, 1, true); /* one section: no work */
	check(2, NULL, 2, true); /* .eh_frame + pclntab */
	check(3, NULL, 3, true); /* + .debug_frame */
	check(7, NULL, 4, true); /* odd counts leave a run to carry */
	check(64, NULL, 5, true);
}

static void shuffled_input_sorts_stably(void **state)
{
	(void)state;
	check(0, NULL, 6, true);
	check(0, NULL, 7, true);
}

/* No budget for the merge's copy: sorted anyway, and the build is not
 * refused for it. */
static void merge_over_budget_still_sorts(void **state)
{
	struct mem_budget b;
	struct mem_account a;
	struct unwind_mem m = {0};

	(void)state;
	mem_budget_init(&b, 1024, 1024);
	mem_account_init(&a, &b);
	m.acct = &a;
	check(3, &m, 8, false);
	assert_false(m.refused);
	assert_int_equal(m.charged, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(runs_of_real_files_merge_stably),
		cmocka_unit_test(shuffled_input_sorts_stably),
		cmocka_unit_test(merge_over_budget_still_sorts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
