// SPDX-License-Identifier: Apache-2.0
/*
 * Makes the kernel hand one pid to several processes in a row: a child
 * runs, exits and is reaped, then clone3() with set_tid (CAP_SYS_ADMIN or
 * CAP_CHECKPOINT_RESTORE) creates the next process with the same pid.
 * Each round uses one pid for three processes, each burning CPU_MS of CPU:
 *   1. exec BIN_A          (image BIN_A)
 *   2. exec BIN_B          (image BIN_B)
 *   3. no exec: a fork running pidreuse_fork_work in this image
 * Usage: pidreuse ROUNDS CPU_MS BIN_A BIN_B
 * Prints "round PID" per round on stdout; exits 1 if a pid could not be
 * reused.
 */
#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE static void pidreuse_fork_work(double seconds)
{
	double end = cpu_s() + seconds;

	do {
		for (int i = 0; i < 20000; i++)
			sink = sink * 6364136223846793005ULL + 1;
	} while (cpu_s() < end);
}

/* fork() into a chosen pid (0: any). Returns like fork(). */
static pid_t fork_pid(pid_t want)
{
	struct clone_args ca;
	pid_t tid = want;

	memset(&ca, 0, sizeof(ca));
	ca.exit_signal = SIGCHLD;
	if (want) {
		ca.set_tid = (uint64_t)(uintptr_t)&tid;
		ca.set_tid_size = 1;
	}
	return (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
}

static int run(pid_t want, const char *bin, const char *arg, double seconds,
	       pid_t *got)
{
	int status;
	pid_t pid = fork_pid(want);

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (bin) {
			execl(bin, bin, arg, (char *)NULL);
			_exit(127);
		}
		pidreuse_fork_work(seconds);
		_exit(0);
	}
	*got = pid;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -ECHILD;
	return 0;
}

int main(int argc, char **argv)
{
	int rounds;
	double seconds;
	char arg[32];

	if (argc != 5) {
		fprintf(stderr, "usage: pidreuse ROUNDS CPU_MS BIN_A BIN_B\n");
		return 2;
	}
	rounds = atoi(argv[1]);
	seconds = atof(argv[2]) / 1000;
	snprintf(arg, sizeof(arg), "%s", argv[2]);
	for (int r = 0; r < rounds; r++) {
		pid_t pid, again;
		int e;

		e = run(0, argv[3], arg, seconds, &pid);
		if (!e)
			e = run(pid, argv[4], arg, seconds, &again);
		if (!e)
			e = run(pid, NULL, NULL, seconds, &again);
		if (e) {
			fprintf(stderr, "pidreuse: round %d: %s\n", r,
				strerror(-e));
			return 1;
		}
		printf("round %d\n", (int)pid);
		fflush(stdout);
	}
	return 0;
}
