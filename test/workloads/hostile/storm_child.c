// SPDX-License-Identifier: Apache-2.0
/*
 * A process that lives a few milliseconds, for the exec storm. Built as
 * several binaries (STORM_NAME names its work function, so samples show
 * which image ran). Usage: storm_X [LIB]: burns ~2 ms of CPU, and with LIB
 * dlopens it and burns ~1 ms more in its storm_lib_work.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#ifdef STORM_DLOPEN
#include <dlfcn.h>
#endif

#define NOINLINE   __attribute__((noinline))
#define CAT2(a, b) a##b
#define CAT(a, b)  CAT2(a, b)
#define WORK_FN	   CAT(storm_work_, STORM_NAME)

static volatile uint64_t sink;

static uint64_t cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

NOINLINE void WORK_FN(uint64_t us)
{
	uint64_t end = cpu_us() + us;

	do {
		for (int i = 0; i < 20000; i++)
			sink = sink * 6364136223846793005ULL + 1;
	} while (cpu_us() < end);
}

int main(int argc, char **argv)
{
	WORK_FN(2000);
#ifdef STORM_DLOPEN
	if (argc > 1) {
		void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
		void (*fn)(uint64_t) = h ? (void (*)(uint64_t))(uintptr_t)dlsym(
						   h, "storm_lib_work")
					 : NULL;

		if (!fn)
			return 3;
		fn(1000);
	}
#else
	(void)argc;
	(void)argv;
#endif
	return 0;
}
