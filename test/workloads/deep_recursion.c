// SPDX-License-Identifier: Apache-2.0
/*
 * main -> run_deep -> recurse_down x DEPTH (in librecurse.so) ->
 * recurse_leaf. Built without frame pointers. Usage: deep_recursion
 * SECONDS DEPTH
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

int recurse_down(int depth);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE int run_deep(double seconds, int depth)
{
	double end = now() + seconds;
	int acc = 0;

	while (now() < end)
		acc += recurse_down(depth);
	return acc;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	int depth = argc > 2 ? atoi(argv[2]) : 300;

	printf("%d\n", run_deep(seconds, depth));
	return 0;
}
