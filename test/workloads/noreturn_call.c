// SPDX-License-Identifier: Apache-2.0
/*
 * main -> run -> spin_then_exit, where spin_then_exit never returns and
 * its call is run's last instruction: the return address on the stack is
 * the first byte of the next function (main), so only a lookup at pc - 1
 * finds run's unwind row. Usage: noreturn_call SECONDS
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE __attribute__((noreturn)) void spin_then_exit(double seconds)
{
	double end = now() + seconds;

	while (now() < end) {
		uint64_t x = sink;

		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ULL + 1;
		sink = x;
	}
	exit(0);
}

/* A frame of its own (a local array), so that its row differs from the
 * next function's first one. */
NOINLINE void run(double seconds)
{
	volatile uint64_t pad[8];

	for (int i = 0; i < 8; i++)
		pad[i] = sink + (uint64_t)i;
	spin_then_exit(seconds + (double)(pad[3] & 0));
}

int main(int argc, char **argv)
{
	run(argc > 1 ? atof(argv[1]) : 5);
	return 0;
}
