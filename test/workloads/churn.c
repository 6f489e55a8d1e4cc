// SPDX-License-Identifier: Apache-2.0
/*
 * An address-space churner, for the host-cost tests. Usage:
 *   churn mmap SECONDS  -- 20,000 small mappings, then 200 times a second
 *                          maps a page executable, runs one instruction in
 *                          it and unmaps it
 *   churn prctl SECONDS -- prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, ...,
 *                          "OTEL_CTX") in a loop
 * Both also burn ~10% of a CPU in short bursts so that samples see them.
 * Prints "ops N" at the end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA	     0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

static volatile uint64_t sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void burn(double s)
{
	double end = now_s() + s;

	while (now_s() < end)
		for (int i = 0; i < 10000; i++)
			sink = sink * 6364136223846793005ULL + 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "mmap";
	double end = now_s() + (argc > 2 ? atof(argv[2]) : 10), next_burn = 0;
	long page = sysconf(_SC_PAGESIZE);
	unsigned long long ops = 0;
	char *region = NULL;

	if (!strcmp(mode, "mmap")) {
		/* Alternating protections keep the pages apart: 20,000
		 * mappings, each a line of /proc/PID/maps. */
		region = mmap(NULL, 20000 * page, PROT_READ,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (region == MAP_FAILED)
			return 1;
		for (int i = 0; i < 20000; i += 2)
			mprotect(region + i * page, page,
				 PROT_READ | PROT_WRITE);
	} else {
		region = mmap(NULL, page, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (region == MAP_FAILED)
			return 1;
	}
	while (now_s() < end) {
		if (!strcmp(mode, "mmap")) {
			/* mmap(PROT_EXEC) itself: what a syscall hook
			 * would see (a JIT's code pages). */
			unsigned char *code = mmap(
				NULL, page, PROT_READ | PROT_WRITE | PROT_EXEC,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (code == MAP_FAILED)
				return 1;
			code[0] = 0xc3; /* ret */
			((void (*)(void))(uintptr_t)code)();
			munmap(code, page);
			ops++;
			usleep(5000);
		} else {
			prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME,
			      (unsigned long)region, page,
			      (unsigned long)"OTEL_CTX");
			ops++;
		}
		if (now_s() >= next_burn) {
			burn(0.005);
			next_burn = now_s() + 0.05;
		}
	}
	printf("ops %llu\n", ops);
	return 0;
}
