// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
/*
 * Two named threads with distinct work: "worker-a" burns in work_a,
 * "worker-b" in work_b, each on its own CPU. Usage: threads SECONDS
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;
static double seconds = 5;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE void work_a(void)
{
	uint64_t x = sink;

	for (int i = 0; i < 100000; i++)
		x = x * 6364136223846793005ULL + 1;
	sink = x;
}

NOINLINE void work_b(void)
{
	uint64_t x = sink;

	for (int i = 0; i < 100000; i++)
		x = x * 2862933555777941757ULL + 3037000493ULL;
	sink = x;
}

static void *thread_main(void *arg)
{
	void (*fn)(void) = arg;
	double end = now() + seconds;

	while (now() < end)
		fn();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t a, b;

	if (argc > 1)
		seconds = atof(argv[1]);
	pthread_create(&a, NULL, thread_main, (void *)work_a);
	pthread_create(&b, NULL, thread_main, (void *)work_b);
	pthread_setname_np(a, "worker-a");
	pthread_setname_np(b, "worker-b");
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
