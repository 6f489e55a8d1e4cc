// SPDX-License-Identifier: Apache-2.0
/*
 * Context-switch-heavy load (make bench, off-CPU cost): two threads pass
 * a byte back and forth through two pipes for SECONDS, each blocking in
 * read() until the other answers: every round trip is two switch-outs of
 * a blocked thread and two switch-ins. Prints "round_trips N seconds S"
 * (S by CLOCK_MONOTONIC).
 * Usage: pingpong SECONDS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *echo(void *arg)
{
	char c;

	(void)arg;
	while (read(ping[0], &c, 1) == 1)
		if (write(pong[1], &c, 1) != 1)
			break;
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3, t0, end, t;
	unsigned long long n = 0;
	pthread_t th;
	char c = 'x';

	if (pipe(ping) || pipe(pong) || pthread_create(&th, NULL, echo, NULL))
		return 1;
	t0 = now_s();
	end = t0 + secs;
	do {
		for (int i = 0; i < 256; i++) {
			if (write(ping[1], &c, 1) != 1 ||
			    read(pong[0], &c, 1) != 1)
				return 1;
		}
		n += 256;
		t = now_s();
	} while (t < end);
	printf("round_trips %llu seconds %.3f\n", n, t - t0);
	return 0;
}
