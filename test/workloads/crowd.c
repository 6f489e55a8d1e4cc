// SPDX-License-Identifier: Apache-2.0
/*
 * A crowd of processes sharing a fixed CPU budget (make bench's scale
 * curve): COUNT children, each its own exec of this program, each busy
 * 1/COUNT of CPUS for SECONDS in 100 ms periods. The host's sample rate
 * stays the same whatever COUNT is; what grows is the number of distinct
 * processes the samples land in.
 * Usage: crowd SECONDS COUNT CPUS   (prints "ready" once all run)
 *        crowd --child SECONDS BUSY_US  (one member)
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PERIOD_US 100000L

static volatile uint64_t sink;

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Kept out of line: the samples' leaf. */
__attribute__((noinline)) static void crowd_burn(int64_t until_us)
{
	while (now_us() < until_us)
		for (int i = 0; i < 1000; i++)
			sink = sink * 6364136223846793005ULL + 1;
}

static int member(double seconds, long busy_us)
{
	int64_t end = now_us() + (int64_t)(seconds * 1e6);

	for (int64_t t = now_us(); t < end; t += PERIOD_US) {
		struct timespec idle;
		int64_t left;

		crowd_burn(now_us() + busy_us);
		left = t + PERIOD_US - now_us();
		if (left <= 0)
			continue;
		idle.tv_sec = left / 1000000;
		idle.tv_nsec = (left % 1000000) * 1000;
		nanosleep(&idle, NULL);
	}
	return 0;
}

int main(int argc, char **argv)
{
	char secs[32], busy[32];
	double seconds, cpus;
	long count, busy_us;
	pid_t *pids;
	int devnull;

	if (argc == 4 && !strcmp(argv[1], "--child"))
		return member(atof(argv[2]), atol(argv[3]));
	if (argc != 4)
		return 2;
	seconds = atof(argv[1]);
	count = atol(argv[2]);
	cpus = atof(argv[3]);
	if (count < 1 || count > 100000 || cpus <= 0)
		return 2;
	busy_us = (long)(cpus * PERIOD_US / (double)count);
	if (busy_us < 1)
		busy_us = 1;
	snprintf(secs, sizeof(secs), "%g", seconds);
	snprintf(busy, sizeof(busy), "%ld", busy_us);
	pids = calloc((size_t)count, sizeof(*pids));
	if (!pids)
		return 1;
	devnull = open("/dev/null", O_WRONLY);
	for (long i = 0; i < count; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			/* Its own children only: the caller's process group
			 * (a bench script) is not ours to signal. */
			perror("crowd: fork");
			for (long k = 0; k < i; k++)
				kill(pids[k], SIGTERM);
			return 1;
		}
		pids[i] = pid;
		if (pid == 0) {
			if (devnull >= 0)
				dup2(devnull, 1);
			execl("/proc/self/exe", argv[0], "--child", secs, busy,
			      (char *)NULL);
			_exit(127);
		}
	}
	printf("ready\n");
	fflush(stdout);
	while (wait(NULL) > 0)
		;
	free(pids);
	return 0;
}
