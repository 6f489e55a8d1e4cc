// SPDX-License-Identifier: Apache-2.0
/* A small shared library the many-libraries test copies thousands of
 * times (each copy a distinct file, so each needs its own unwind table). */
#include <stdint.h>

static volatile uint64_t tiny_sink;

__attribute__((noinline)) void tiny_work(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		tiny_sink = tiny_sink * 6364136223846793005ULL + i;
}
