// SPDX-License-Identifier: Apache-2.0
/*
 * Syscall-heavy workload: most CPU time is spent in the kernel inside
 * write(2) to /dev/null and getppid(2), so samples carry kernel frames.
 * Usage: syscalls SECONDS
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static char buf[65536];

NOINLINE void do_writes(int fd)
{
	for (int i = 0; i < 64; i++)
		if (write(fd, buf, sizeof(buf)) < 0)
			exit(1);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void do_getppid(void)
{
	for (int i = 0; i < 256; i++)
		syscall(SYS_getppid);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	int fd = open("/dev/null", O_WRONLY);
	struct timespec t0, t;

	if (fd < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		do_writes(fd);
		do_getppid();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) +
			 (double)(t.tv_nsec - t0.tv_nsec) / 1e9 <
		 seconds);
	return 0;
}
