// SPDX-License-Identifier: Apache-2.0
/* Shared library for the deep-recursion workload, built without frame
 * pointers: every frame must be unwound from .eh_frame. */
#include <stdint.h>

#define NOINLINE __attribute__((noinline))

volatile uint64_t recurse_sink;

NOINLINE void recurse_leaf(void)
{
	uint64_t x = recurse_sink;

	for (int i = 0; i < 200000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	recurse_sink = x;
}

/* Each level keeps a little stack (the array) so frames are not trivial
 * and the total stack is well beyond what perf's 8 KiB copy holds. */
NOINLINE int recurse_down(int depth)
{
	volatile char pad[48];

	pad[0] = (char)depth;
	if (depth <= 0) {
		recurse_leaf();
		return pad[0];
	}
	return recurse_down(depth - 1) + pad[0];
}
