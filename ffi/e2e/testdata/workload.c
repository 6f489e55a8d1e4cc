/* SPDX-License-Identifier: Apache-2.0 */
/*
 * E2E workload with a known call graph.
 *   workload cpu      main -> e2e_loop -> e2e_hot  -> e2e_spin (75%)
 *                                      -> e2e_cold -> e2e_spin (25%)
 *   workload syscall  main -> e2e_syscalls -> write(2) on /dev/null
 *   workload sleep    main -> e2e_sleeper -> nanosleep(2), 10 ms at a time
 * Runs until killed.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* CPU time of this thread: the 3:1 ratio holds even on a loaded machine. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

volatile uint64_t sink;

__attribute__((noinline)) void e2e_spin(uint64_t ns)
{
	uint64_t end = now_ns() + ns;
	uint64_t x = sink;

	while (now_ns() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005u + 1442695040888963407u;
	sink = x;
}

__attribute__((noinline)) void e2e_hot(void)
{
	e2e_spin(3000000);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void e2e_cold(void)
{
	e2e_spin(1000000);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void e2e_loop(void)
{
	for (;;) {
		e2e_hot();
		e2e_cold();
	}
}

__attribute__((noinline)) void e2e_syscalls(void)
{
	int fd = open("/dev/null", O_WRONLY);
	char c = 'x';

	for (;;)
		if (write(fd, &c, 1) < 0)
			return;
}

__attribute__((noinline)) void e2e_sleeper(void)
{
	struct timespec ts = {0, 10000000};

	for (;;)
		nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "syscall") == 0)
		e2e_syscalls();
	else if (argc > 1 && strcmp(argv[1], "sleep") == 0)
		e2e_sleeper();
	else
		e2e_loop();
	return 0;
}
