// SPDX-License-Identifier: Apache-2.0
/* The library the exec storm copies to a fresh inode every few hundred
 * milliseconds, so that the profiler's per-file tables churn. */
#include <stdint.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline, visibility("default"))) void
storm_lib_work(uint64_t us)
{
	struct timespec ts;
	uint64_t now, end;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	end = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000 + us;
	do {
		for (int i = 0; i < 20000; i++)
			sink = sink * 6364136223846793005ULL + 1;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
		now = (uint64_t)ts.tv_sec * 1000000u +
		      (uint64_t)ts.tv_nsec / 1000;
	} while (now < end);
}
