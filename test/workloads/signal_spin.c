// SPDX-License-Identifier: Apache-2.0
/*
 * main -> run -> raise(SIGUSR1) -> [signal frame, __restore_rt] ->
 * on_usr1 -> spin, which works until SECONDS have passed and exits from
 * inside the handler: every stack from then on crosses a signal frame,
 * and most are in clock_gettime (the vDSO: the loop does nothing else).
 * Usage:
 * signal_spin SECONDS
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;
static double seconds = 5;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE void spin(double end)
{
	while (now() < end)
		sink++;
	_exit(0);
}

NOINLINE void on_usr1(int sig)
{
	(void)sig;
	spin(now() + seconds);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void run(void)
{
	raise(SIGUSR1);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_usr1};

	if (argc > 1)
		seconds = atof(argv[1]);
	sigaction(SIGUSR1, &sa, NULL);
	run();
	return 0;
}
