// SPDX-License-Identifier: Apache-2.0
/*
 * Runs in a file that costs the symbol budget a lot, then makes the
 * profiler load another such file while it runs elsewhere, then runs in
 * the first again (whose symbols the second's load evicted).
 * Usage: evictspin HOT OTHER
 *   HOT    elfbomb hotsyms output: its entry point is a spin function
 *   OTHER  any file, mapped executable in phase 2
 * Prints "ready", waits for a line on stdin (the profiler is running),
 * then prints "phase1 NS", "phase2 NS" and "phase3 NS" (CLOCK_REALTIME)
 * as each phase starts; phases last 3.5, 2.5 and 3 s.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static void die(const char *m)
{
	perror(m);
	exit(1);
}

static void *map_exec(const char *path)
{
	int fd = open(path, O_RDONLY);
	void *p;

	if (fd < 0)
		die(path);
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		die(path);
	close(fd);
	return p;
}

static double now(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void mark(const char *phase)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	printf("%s %lld\n", phase,
	       (long long)t.tv_sec * 1000000000ll + (long long)t.tv_nsec);
	fflush(stdout);
}

static __attribute__((noinline)) unsigned long own_spin(unsigned long x)
{
	for (int i = 0; i < 1000000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

int main(int argc, char **argv)
{
	volatile unsigned long sink = 0;
	void (*hot)(void);
	const Elf64_Ehdr *eh;
	char *base;
	double t0;

	if (argc != 3)
		return 2;
	base = map_exec(argv[1]);
	eh = (const Elf64_Ehdr *)base;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || !eh->e_entry ||
	    eh->e_entry >= 4096)
		die("HOT has no entry point in its first page");
	hot = (void (*)(void))(base + eh->e_entry);
	printf("ready\n");
	fflush(stdout);
	if (!fgets((char[16]){0}, 16, stdin))
		die("stdin");
	mark("phase1");
	for (t0 = now(CLOCK_MONOTONIC); now(CLOCK_MONOTONIC) - t0 < 3.5;)
		hot();
	mark("phase2");
	map_exec(argv[2]);
	for (t0 = now(CLOCK_MONOTONIC); now(CLOCK_MONOTONIC) - t0 < 2.5;)
		sink = own_spin(sink);
	mark("phase3");
	for (t0 = now(CLOCK_MONOTONIC); now(CLOCK_MONOTONIC) - t0 < 3;)
		hot();
	return 0;
}
