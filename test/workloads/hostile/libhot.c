// SPDX-License-Identifier: Apache-2.0
/*
 * Shared library with a hot call chain built without frame pointers:
 *   hot_entry -> hot_outer -> hot_inner -> hot_leaf
 * The hostile tests load corrupted copies of it (elfcorrupt.c): the loader
 * reads only program headers and the dynamic segment, so the copies still
 * load and run while section headers, CFI, symbols and notes are garbage.
 */
#include <stdint.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define EXPORT	 __attribute__((visibility("default")))

static volatile uint64_t sink;

NOINLINE void hot_leaf(void)
{
	uint64_t x = sink;

	for (int i = 0; i < 200000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

NOINLINE void hot_inner(void)
{
	hot_leaf();
	__asm__ volatile("" ::: "memory"); /* keep the frame: no tail call */
}

NOINLINE void hot_outer(void)
{
	hot_inner();
	__asm__ volatile("" ::: "memory");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs the chain for `seconds` of wall time; returns the rounds done. */
EXPORT NOINLINE uint64_t hot_entry(double seconds)
{
	double end = now() + seconds;
	uint64_t rounds = 0;

	while (now() < end) {
		hot_outer();
		rounds++;
	}
	__asm__ volatile("" ::: "memory");
	return rounds;
}
