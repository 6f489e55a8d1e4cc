// SPDX-License-Identifier: Apache-2.0
/*
 * Exec storm: for SECONDS, keeps PAR short-lived children running at once.
 * Most exec one of BIN... (round robin) with the newest copy of LIB as
 * argument; every eighth is a plain fork running storm_fork_work in this
 * image. LIB is copied to a fresh file (a new inode, its own trailer) in DIR
 * every 250 ms and older copies are deleted, so the files mapped by the
 * children keep changing. Usage: storm SECONDS PAR DIR LIB BIN... Writes every
 * child's pid to DIR/pids, one a line, and prints "spawned N execs E forks F
 * libs L failed X" at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE     __attribute__((noinline))
#define COPY_EVERY_S 0.25

static volatile uint64_t sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE static void storm_fork_work(void)
{
	double end = cpu_s() + 0.002;

	do {
		for (int i = 0; i < 20000; i++)
			sink = sink * 6364136223846793005ULL + 1;
	} while (cpu_s() < end);
}

static char *slurp(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st))
		return NULL;
	buf = malloc((size_t)st.st_size);
	if (!buf || read(fd, buf, (size_t)st.st_size) != st.st_size) {
		close(fd);
		free(buf);
		return NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* A copy with its own bytes too (a trailer after the ELF contents, which
 * the loader ignores): identical files are kept once by the profiler, and
 * each copy here is meant to need its own tables, evicted after. */
static int write_copy(const char *path, const char *buf, size_t len,
		      unsigned long n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	char trailer[32];
	int tlen = snprintf(trailer, sizeof(trailer), "storm copy %05lu\n", n);

	if (fd < 0)
		return -errno;
	if (write(fd, buf, len) != (ssize_t)len ||
	    write(fd, trailer, (size_t)tlen) != tlen) {
		close(fd);
		return -EIO;
	}
	return close(fd) ? -errno : 0;
}

int main(int argc, char **argv)
{
	unsigned long spawned = 0, execs = 0, forks = 0, libs = 0, failed = 0;
	char lib[3][4096];
	double seconds, end, next_copy = 0;
	int par, live = 0, nbin;
	size_t liblen;
	char *libbuf;
	FILE *pids;

	if (argc < 6) {
		fprintf(stderr, "usage: storm SECONDS PAR DIR LIB BIN...\n");
		return 2;
	}
	seconds = atof(argv[1]);
	par = atoi(argv[2]);
	nbin = argc - 5;
	libbuf = slurp(argv[4], &liblen);
	if (!libbuf || par < 1) {
		fprintf(stderr, "storm: cannot read %s\n", argv[4]);
		return 1;
	}
	memset(lib, 0, sizeof(lib));
	snprintf(lib[0], sizeof(lib[0]), "%s/pids", argv[3]);
	pids = fopen(lib[0], "we");
	if (!pids) {
		fprintf(stderr, "storm: cannot write %s\n", lib[0]);
		return 1;
	}
	lib[0][0] = '\0';
	end = now_s() + seconds;
	while (now_s() < end || live > 0) {
		int status;
		pid_t pid;

		if (now_s() >= next_copy && now_s() < end) {
			/* New inode for the library; drop the one two
			 * generations back (children may still map it,
			 * which is fine once it is open). */
			if (lib[(libs + 1) % 3][0])
				unlink(lib[(libs + 1) % 3]);
			snprintf(lib[libs % 3], sizeof(lib[0]),
				 "%s/libstorm-%05lu.so", argv[3], libs);
			if (write_copy(lib[libs % 3], libbuf, liblen, libs)) {
				fprintf(stderr, "storm: cannot write %s\n",
					lib[libs % 3]);
				return 1;
			}
			libs++;
			next_copy = now_s() + COPY_EVERY_S;
		}
		while (live < par && now_s() < end) {
			unsigned long k = spawned++;
			const char *cur = lib[(libs - 1) % 3];

			pid = fork();
			if (pid < 0) {
				failed++;
				break;
			}
			if (pid == 0) {
				if (k % 8 == 7) {
					storm_fork_work();
					_exit(0);
				}
				execl(argv[5 + k % (unsigned long)nbin],
				      argv[5 + k % (unsigned long)nbin], cur,
				      (char *)NULL);
				_exit(127);
			}
			fprintf(pids, "%d\n", (int)pid);
			if (k % 8 == 7)
				forks++;
			else
				execs++;
			live++;
		}
		pid = waitpid(-1, &status, 0);
		if (pid > 0) {
			live--;
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				failed++;
		} else if (errno == ECHILD) {
			live = 0;
		}
	}
	for (int i = 0; i < 3; i++)
		if (lib[i][0])
			unlink(lib[i]);
	fclose(pids);
	printf("spawned %lu execs %lu forks %lu libs %lu failed %lu\n", spawned,
	       execs, forks, libs, failed);
	return 0;
}
