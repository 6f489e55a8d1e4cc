// SPDX-License-Identifier: Apache-2.0
/*
 * One image of the pid-reuse test, built twice (REUSE_NAME a and b) so
 * that samples name the image that ran: burns CPU_MS of CPU in
 * reuse_work_<name>. Usage: reuse_X CPU_MS
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE   __attribute__((noinline))
#define CAT2(a, b) a##b
#define CAT(a, b)  CAT2(a, b)

static volatile uint64_t sink;

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE void CAT(reuse_work_, REUSE_NAME)(double seconds)
{
	double end = cpu_s() + seconds;

	do {
		for (int i = 0; i < 20000; i++)
			sink = sink * 6364136223846793005ULL + 1;
	} while (cpu_s() < end);
}

int main(int argc, char **argv)
{
	CAT(reuse_work_, REUSE_NAME)(argc > 1 ? atof(argv[1]) / 1000 : 0.3);
	return 0;
}
