// SPDX-License-Identifier: Apache-2.0
/*
 * Workload with a known call graph: main -> run -> {heavy, medium, light}
 * spending work in the ratio 3:2:1 (50% / 33.3% / 16.7% of CPU), each leaf
 * reached through its own chain so that stacks show the structure:
 *   main -> run_loop -> path_heavy -> leaf_heavy
 *   main -> run_loop -> path_medium -> leaf_medium
 *   main -> run_loop -> leaf_light      (no intermediate frame)
 * Usage: callgraph SECONDS (prints the rounds of work done)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

static NOINLINE void spin(uint64_t units)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < units * 20000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

NOINLINE void leaf_heavy(void)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < 3 * 20000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

NOINLINE void leaf_medium(void)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < 2 * 20000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

NOINLINE void leaf_light(void)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < 1 * 20000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

NOINLINE void path_heavy(void)
{
	leaf_heavy();
	__asm__ volatile("" ::: "memory"); /* keep the frame: no tail call */
}

NOINLINE void path_medium(void)
{
	leaf_medium();
	__asm__ volatile("" ::: "memory");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned long long rounds;

NOINLINE void run_loop(double seconds)
{
	double end = now() + seconds;

	while (now() < end) {
		for (int i = 0; i < 16; i++) {
			path_heavy();
			path_medium();
			leaf_light();
		}
		rounds++;
	}
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;

	(void)spin;
	run_loop(seconds);
	/* Work done, for overhead benchmarks (throughput with and without a
	 * profiler). */
	printf("rounds %llu sink %llu\n", rounds, (unsigned long long)sink);
	return 0;
}
