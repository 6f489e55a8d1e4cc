// SPDX-License-Identifier: Apache-2.0
/*
 * Short-lived processes: runs COUNT children one after another, each an
 * exec of `callgraph_nofp 0.1` (100 ms of CPU). Usage: spawner COUNT
 * PATH_TO_CALLGRAPH. Prints each child's pid, and the children's total
 * CPU time on stderr.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 10;
	struct rusage ru;

	if (argc < 3)
		return 2;
	for (int i = 0; i < count; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			int devnull = open("/dev/null", O_WRONLY);

			if (devnull >= 0)
				dup2(devnull, 1);
			execl(argv[2], argv[2], "0.1", (char *)NULL);
			_exit(127);
		}
		printf("%d\n", (int)pid);
		fflush(stdout);
		waitpid(pid, NULL, 0);
	}
	/* The children's CPU time, for the caller's expected sample count. */
	getrusage(RUSAGE_CHILDREN, &ru);
	fprintf(stderr, "children_cpu_seconds %.3f\n",
		(double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
			(double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) /
				1e6);
	return 0;
}
