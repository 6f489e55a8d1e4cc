// SPDX-License-Identifier: Apache-2.0
/*
 * Signal handlers: a CPU-time timer (ITIMER_PROF, every 10 ms) interrupts
 * main_loop_work; the handler burns ~5 ms in handler_work, so about a
 * third of the samples are inside a handler, whose stacks must continue
 * through the signal frame (__restore_rt) into the interrupted code and
 * up to main. Usage: signals SECONDS
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE void handler_work(void)
{
	uint64_t x = sink;

	for (int i = 0; i < 12000000; i++)
		x = x * 6364136223846793005ULL + 1;
	sink = x;
}

NOINLINE void on_sigprof(int sig)
{
	(void)sig;
	handler_work();
	__asm__ volatile("" ::: "memory");
}

NOINLINE void main_loop_work(void)
{
	uint64_t x = sink;

	for (int i = 0; i < 100000; i++)
		x = x * 2862933555777941757ULL + 3037000493ULL;
	sink = x;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5, end;
	struct sigaction sa = {0};
	struct itimerval it = {{0, 10000}, {0, 10000}};

	sa.sa_handler = on_sigprof;
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	end = now() + seconds;
	while (now() < end)
		main_loop_work();
	return 0;
}
