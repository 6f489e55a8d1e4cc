// SPDX-License-Identifier: Apache-2.0
#include "util/mem_budget.h"

#include <string.h>

void mem_budget_init(struct mem_budget *b, uint64_t limit, uint64_t file_limit)
{
	memset(b, 0, sizeof(*b));
	b->limit = limit ? limit : MEM_BUDGET_DEFAULT_TOTAL;
	b->file_limit = file_limit ? file_limit : MEM_BUDGET_DEFAULT_PER_FILE;
	if (b->file_limit > b->limit)
		b->file_limit = b->limit;
}

void mem_account_init(struct mem_account *a, struct mem_budget *b)
{
	a->budget = b;
	atomic_store(&a->bytes, 0);
	atomic_store(&a->peak, 0);
}

bool mem_account_charge(struct mem_account *a, uint64_t n)
{
	struct mem_budget *b = a ? a->budget : NULL;
	uint64_t cur;

	if (!b)
		return true;
	/* The file's own limit first (one account is charged by at most two
	 * threads, so a compare-exchange loop settles at once). */
	cur = atomic_load(&a->bytes);
	do {
		if (n > b->file_limit || cur > b->file_limit - n) {
			atomic_fetch_add(&b->refused, 1);
			return false;
		}
	} while (!atomic_compare_exchange_weak(&a->bytes, &cur, cur + n));
	cur = atomic_load(&b->used);
	do {
		if (n > b->limit || cur > b->limit - n) {
			atomic_fetch_sub(&a->bytes, n);
			atomic_fetch_add(&b->refused, 1);
			return false;
		}
	} while (!atomic_compare_exchange_weak(&b->used, &cur, cur + n));
	cur = atomic_load(&a->peak);
	while (atomic_load(&a->bytes) > cur &&
	       !atomic_compare_exchange_weak(&a->peak, &cur,
					     atomic_load(&a->bytes)))
		;
	return true;
}

void mem_account_uncharge(struct mem_account *a, uint64_t n)
{
	if (!a || !a->budget || !n)
		return;
	atomic_fetch_sub(&a->bytes, n);
	atomic_fetch_sub(&a->budget->used, n);
}

void mem_account_release(struct mem_account *a)
{
	if (!a || !a->budget)
		return;
	atomic_fetch_sub(&a->budget->used, atomic_exchange(&a->bytes, 0));
}
