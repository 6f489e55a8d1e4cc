// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
/*
 * Maps files executable and burns CPU in its own code, so a profiler loads
 * every file it maps. Usage: mapspin SECONDS [FILE...]
 *   FILE "fifo:/dev/zero": map /dev/zero (a device) executable, then in a
 *   private mount namespace cover /dev with a tmpfs holding a FIFO of that
 *   name, so the path the maps line shows is a FIFO nobody writes to.
 * Prints "ready" once everything is mapped.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void die(const char *m)
{
	perror(m);
	exit(1);
}

static void map_exec(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0 || mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd,
			   0) == MAP_FAILED)
		die(path);
	close(fd);
}

static void fifo_over(const char *dev)
{
	char dir[256];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", dev);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		die("fifo path");
	*slash = '\0';
	map_exec(dev);
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("none", dir, "tmpfs", 0, "mode=755") || mkfifo(dev, 0666))
		die("fifo namespace");
}

static __attribute__((noinline)) unsigned long spin(unsigned long x)
{
	for (int i = 0; i < 1000000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

int main(int argc, char **argv)
{
	struct timespec t0, t;
	volatile unsigned long sink = 0;
	double secs;

	if (argc < 2)
		return 2;
	secs = atof(argv[1]);
	for (int i = 2; i < argc; i++) {
		if (!strncmp(argv[i], "fifo:", 5))
			fifo_over(argv[i] + 5);
		else
			map_exec(argv[i]);
	}
	printf("ready\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sink = spin(sink);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) +
			 (double)(t.tv_nsec - t0.tv_nsec) / 1e9 <
		 secs);
	return 0;
}
