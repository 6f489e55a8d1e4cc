// SPDX-License-Identifier: Apache-2.0
/*
 * Workload for `otelprof report`'s browser test: thread "abc-main" spends
 * its CPU in alpha, beta and gamma in a given ratio (default 6:3:1, i.e.
 * 60/30/10 %), by work done, not by time slept, so the shares hold on a
 * loaded host; thread "abc-side" spins in side_spin alone, so filtering on
 * a thread changes the totals.
 * Usage: report_abc SECONDS [A:B:C]
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define UNIT	 20000

static volatile uint64_t sink;
static double end_at;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline uint64_t work(uint64_t units)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < units * UNIT; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

NOINLINE void alpha(unsigned units)
{
	sink = work(units);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void beta(unsigned units)
{
	sink = work(units);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void gamma_fn(unsigned units)
{
	sink = work(units);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void side_spin(void)
{
	sink = work(4);
	__asm__ volatile("" ::: "memory");
}

static void *side_thread(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "abc-side");
	while (now() < end_at)
		side_spin();
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned a = 6, b = 3, c = 1;
	pthread_t side;

	if (argc < 2 ||
	    (argc > 2 && sscanf(argv[2], "%u:%u:%u", &a, &b, &c) != 3)) {
		fprintf(stderr, "usage: report_abc SECONDS [A:B:C]\n");
		return 2;
	}
	end_at = now() + atof(argv[1]);
	pthread_setname_np(pthread_self(), "abc-main");
	if (pthread_create(&side, NULL, side_thread, NULL))
		return 1;
	while (now() < end_at) {
		alpha(a);
		beta(b);
		gamma_fn(c);
	}
	pthread_join(side, NULL);
	return 0;
}
