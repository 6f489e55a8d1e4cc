/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A memory budget for everything derived from files other processes map
 * (symbols, strings, unwind rows, scratch read while parsing): one global
 * limit and one limit per file. Each file has an account; a charge that
 * would exceed either limit is refused, and the caller drops what it was
 * about to build (counted). Thread-safe: the symbol loader and the unwind
 * worker charge concurrently.
 */
#ifndef OTELPROF_UTIL_MEM_BUDGET_H
#define OTELPROF_UTIL_MEM_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Defaults, sized for a small host (the reference profiler publishes a
 * 250 MB budget for the whole agent). */
#define MEM_BUDGET_DEFAULT_TOTAL    (192ull << 20)
#define MEM_BUDGET_DEFAULT_PER_FILE (64ull << 20)

struct mem_budget {
	_Atomic uint64_t used;	  /* bytes charged by every account */
	uint64_t limit;		  /* global limit */
	uint64_t file_limit;	  /* limit of one account */
	_Atomic uint64_t refused; /* charges refused */
};

struct mem_account {
	struct mem_budget *budget; /* NULL: unlimited (tests, tools) */
	_Atomic uint64_t bytes;	   /* charged to this file now */
	_Atomic uint64_t peak;	   /* the most it held: what reading the
				      file again needs */
};

void mem_budget_init(struct mem_budget *b, uint64_t limit, uint64_t file_limit);
static inline uint64_t mem_budget_used(struct mem_budget *b)
{
	return atomic_load(&b->used);
}

void mem_account_init(struct mem_account *a, struct mem_budget *b);
/* Charge n bytes before allocating them. false: over the file's or the
 * global limit; nothing was charged. A NULL account always succeeds. */
bool mem_account_charge(struct mem_account *a, uint64_t n);
/* Give back n bytes charged earlier (n <= what is charged). */
void mem_account_uncharge(struct mem_account *a, uint64_t n);
/* Give back everything the account holds. */
void mem_account_release(struct mem_account *a);

#endif
