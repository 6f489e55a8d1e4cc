// SPDX-License-Identifier: Apache-2.0
/*
 * A -O2 -g program whose hot loop is inlined into each leaf, for source
 * lines and inlined frames from DWARF (native_test.go): the leaf samples
 * must come back as mix (this file, a line of its body: the loop's
 * control or its arithmetic, whichever the timer lands on) inlined into
 * leaf_heavy / leaf_light (the line of the call); in leaf_nested, mix
 * inlined into twice (the line of its call there) inlined into
 * leaf_nested. The test finds the expected lines by the markers in the
 * comments.
 * Usage: inlined SECONDS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

#define MUL 6364136223846793005ULL
#define ADD 1442695040888963407ULL

/* MARK:mix_begin */
static inline __attribute__((always_inline)) uint64_t mix(uint64_t x,
							  unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		x = x * MUL + ADD;
	return x;
} /* MARK:mix_end */

NOINLINE void leaf_heavy(void)
{
	sink = mix(sink, 3 * 20000); /* MARK:call_heavy */
}

NOINLINE void leaf_light(void)
{
	sink = mix(sink, 1 * 20000); /* MARK:call_light */
}

static inline __attribute__((always_inline)) uint64_t twice(uint64_t x,
							    unsigned n)
{
	x = mix(x, n); /* MARK:twice_call */
	return x ^ (x >> 7);
}

NOINLINE void leaf_nested(void)
{
	sink = twice(sink, 2 * 20000); /* MARK:call_nested */
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 5);
	unsigned long long rounds = 0;

	while (now() < end) {
		leaf_heavy();
		leaf_light();
		leaf_nested();
		rounds++;
	}
	printf("rounds %llu\n", rounds);
	return 0;
}
