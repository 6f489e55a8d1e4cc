// SPDX-License-Identifier: Apache-2.0
/*
 * Runs in main for BEFORE seconds, then dlopens LIB (a library the
 * profiler has not seen in this process, built without frame pointers)
 * and spends IN seconds in its recurse_down(DEPTH): the first samples in
 * the new code tell how soon the unwinder learns a dlopen'd library.
 * Prints "dlopen NS" (CLOCK_REALTIME, as the profile's sample times) just
 * before the first call into the library.
 * Usage: dlopen_late BEFORE IN LIB DEPTH
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn_main(double seconds)
{
	double end = now_s() + seconds;

	while (now_s() < end)
		for (int i = 0; i < 100000; i++)
			sink = sink * 6364136223846793005ULL + 1;
}

int main(int argc, char **argv)
{
	struct timespec rt;
	int (*down)(int);
	void *h;
	double end;

	if (argc != 5) {
		fprintf(stderr, "usage: dlopen_late BEFORE IN LIB DEPTH\n");
		return 2;
	}
	burn_main(atof(argv[1]));
	h = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
	if (!h || !(down = (int (*)(int))dlsym(h, "recurse_down"))) {
		fprintf(stderr, "dlopen_late: %s\n", dlerror());
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &rt);
	printf("dlopen %lld\n",
	       (long long)rt.tv_sec * 1000000000LL + (long long)rt.tv_nsec);
	fflush(stdout);
	end = now_s() + atof(argv[2]);
	while (now_s() < end)
		sink += (uint64_t)down(atoi(argv[4]));
	return 0;
}
