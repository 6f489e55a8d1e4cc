/* SPDX-License-Identifier: Apache-2.0 */
/* Nanoseconds of a clock: CLOCK_MONOTONIC for deadlines and backoff,
 * CLOCK_BOOTTIME for what samples carry (bpf_ktime_get_boot_ns). */
#ifndef OTELPROF_UTIL_CLOCK_H
#define OTELPROF_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t boot_ns(void)
{
	return clock_ns(CLOCK_BOOTTIME);
}

#endif
