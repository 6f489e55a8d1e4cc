// SPDX-License-Identifier: Apache-2.0
/*
 * Off-CPU truth (test/integration/offcpu_test.go): the main thread spends
 * each 100 ms round about half asleep in nanosleep (sleep_half), a
 * quarter blocked on a pipe read a helper thread answers 25 ms later
 * (pipe_wait_quarter), and a quarter burning CPU (burn_quarter), for
 * ROUNDS rounds (argv[1], default 40). It measures its own truth: the
 * time spent inside each blocking call (CLOCK_MONOTONIC around it) and
 * its own CPU time, over the rounds after WARMUP rounds (argv[2],
 * default 20: the profiler loads the process's unwind tables meanwhile),
 * and prints them when it ends, with the measured span (CLOCK_REALTIME):
 *   sleep_ns=N pipe_ns=N cpu_ns=N tid=N start_ns=N end_ns=N
 * Built without frame pointers: the stacks are unwound from CFI.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int to_helper[2], to_main[2];

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void nap(long ms)
{
	struct timespec ts = {0, ms * 1000000L};

	while (nanosleep(&ts, &ts))
		;
}

/* The helper: waits for a byte, holds it 25 ms, answers. */
__attribute__((noinline)) static void helper_delay(void)
{
	nap(25);
}

static void *helper(void *arg)
{
	char c;

	(void)arg;
	while (read(to_helper[0], &c, 1) == 1) {
		helper_delay();
		if (write(to_main[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

__attribute__((noinline)) static uint64_t sleep_half(void)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);

	nap(50);
	return now_ns(CLOCK_MONOTONIC) - t0;
}

__attribute__((noinline)) static uint64_t pipe_wait_quarter(void)
{
	char c = 'x';
	uint64_t t0;

	if (write(to_helper[1], &c, 1) != 1)
		exit(1);
	t0 = now_ns(CLOCK_MONOTONIC);
	if (read(to_main[0], &c, 1) != 1)
		exit(1);
	return now_ns(CLOCK_MONOTONIC) - t0;
}

static volatile uint64_t sink;

/* 25 ms of this thread's own CPU time. */
__attribute__((noinline)) static void burn_quarter(void)
{
	uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + 25000000ull;

	while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i * 2654435761u;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 40;
	int warmup = argc > 2 ? atoi(argv[2]) : 20;
	uint64_t sleep_ns = 0, pipe_ns = 0, cpu0, start, end;
	pthread_t th;

	if (pipe(to_helper) || pipe(to_main) ||
	    pthread_create(&th, NULL, helper, NULL))
		return 1;
	for (int r = 0; r < warmup; r++) {
		burn_quarter();
		sleep_half();
		pipe_wait_quarter();
	}
	start = now_ns(CLOCK_REALTIME);
	cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	for (int r = 0; r < rounds; r++) {
		burn_quarter();
		sleep_ns += sleep_half();
		pipe_ns += pipe_wait_quarter();
	}
	cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	end = now_ns(CLOCK_REALTIME);
	printf("sleep_ns=%llu pipe_ns=%llu cpu_ns=%llu tid=%d start_ns=%llu "
	       "end_ns=%llu\n",
	       (unsigned long long)sleep_ns, (unsigned long long)pipe_ns,
	       (unsigned long long)cpu0, (int)gettid(),
	       (unsigned long long)start, (unsigned long long)end);
	fflush(stdout);
	return 0;
}
