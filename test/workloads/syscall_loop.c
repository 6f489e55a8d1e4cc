// SPDX-License-Identifier: Apache-2.0
/*
 * The syscall tax: a tight getppid() loop for SECONDS, then prints
 * "ns_per_syscall X calls N" measured by the thread's own CPU time (what
 * any hook on the syscall path, or a sample interrupting it, is charged
 * to), not by the wall clock, so other load on the host does not count.
 * Usage: syscall_loop SECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5, end, cpu0, cpu;
	unsigned long long calls = 0;

	end = now_s(CLOCK_MONOTONIC) + secs;
	cpu0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	do {
		/* Between clock reads: 4096 calls (~1 ms). */
		for (int i = 0; i < 4096; i++)
			syscall(SYS_getppid);
		calls += 4096;
	} while (now_s(CLOCK_MONOTONIC) < end);
	cpu = now_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	printf("ns_per_syscall %.2f calls %llu\n", cpu * 1e9 / (double)calls,
	       calls);
	return 0;
}
