// SPDX-License-Identifier: Apache-2.0
/*
 * Maps many shared libraries (dlopen of each path given), then burns CPU
 * for SECONDS so that the profiler loads every library's unwind table.
 * Usage: many_libs SECONDS LIB...  Prints how many libraries loaded.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	struct timespec t0, t;
	int loaded = 0;

	for (int i = 2; i < argc; i++)
		if (dlopen(argv[i], RTLD_LAZY | RTLD_LOCAL))
			loaded++;
	printf("loaded %d\n", loaded);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000000; i++)
			sink = sink * 6364136223846793005ULL + 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) +
			 (double)(t.tv_nsec - t0.tv_nsec) / 1e9 <
		 seconds);
	return 0;
}
