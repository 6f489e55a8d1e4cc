// SPDX-License-Identifier: Apache-2.0
/*
 * Build unwind tables for every ELF file mapped executable by any process on
 * this host (deduplicated by device + inode) and report time and memory per
 * MB of CFI. Run as root so /proc/PID/root/... of every process is readable:
 *   bench_unwind_table [-v] [EXTRA_ELF...]
 * Extra files (e.g. a large libLLVM) are built too, after the mapped ones.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "unwind/unwind_table.h"

struct file_id {
	unsigned long dev_major, dev_minor, ino;
};

struct result {
	char path[256];
	double ms;
	uint64_t cfi, rows;
	int err;
};

static struct file_id *seen;
static size_t nseen, capseen;

static int seen_add(const struct file_id *id)
{
	for (size_t i = 0; i < nseen; i++)
		if (!memcmp(&seen[i], id, sizeof(*id)))
			return 0;
	if (nseen == capseen) {
		size_t nc = capseen ? capseen * 2 : 256;
		struct file_id *nv = realloc(seen, nc * sizeof(*nv));

		if (!nv)
			return -1;
		seen = nv;
		capseen = nc;
	}
	seen[nseen++] = *id;
	return 1;
}

static struct result *res;
static size_t nres, capres;
static uint64_t cfi, rows, skipped, fdes;
static double total_ms, total_cpu_ms;
static unsigned int failed, rejected, truncated;
static bool verbose;

static double now_ms(void);
static double cpu_ms(void);

static void build_one(int fd, const char *path)
{
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	struct result *r;
	double t0, c0;

	if (nres == capres) {
		capres = capres ? capres * 2 : 256;
		res = realloc(res, capres * sizeof(*res));
		if (!res)
			exit(1);
	}
	r = &res[nres++];
	t0 = now_ms();
	c0 = cpu_ms();
	r->err = unwind_table_build_fd(fd, &t, &st);
	r->ms = now_ms() - t0;
	total_cpu_ms += cpu_ms() - c0;
	close(fd);
	snprintf(r->path, sizeof(r->path), "%s", path);
	r->cfi = st.bytes_of_cfi;
	r->rows = st.rows;
	if (r->err)
		failed++;
	if (st.flags & UNWIND_ST_HOSTILE)
		rejected++;
	if (st.flags & UNWIND_ST_TRUNCATED)
		truncated++;
	cfi += st.bytes_of_cfi;
	rows += st.rows;
	fdes += st.fdes_total;
	skipped += st.fdes_skipped;
	total_ms += r->ms;
	if (verbose)
		printf("%9.2f ms %8lu rows %9lu B cfi err %d %s\n", r->ms,
		       st.rows, st.bytes_of_cfi, r->err, path);
	unwind_table_free(&t);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* CPU time too: wall time is skewed on a busy host. */
static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long maxrss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static int cmp_ms(const void *a, const void *b)
{
	const struct result *x = a, *y = b;

	return x->ms < y->ms ? 1 : x->ms > y->ms ? -1 : 0;
}

int main(int argc, char **argv)
{
	long rss0 = maxrss_kb();
	unsigned int procs = 0;
	int argi = 1;
	DIR *proc = opendir("/proc");
	struct dirent *de;

	if (argc > 1 && !strcmp(argv[1], "-v")) {
		verbose = true;
		argi++;
	}
	if (!proc) {
		perror("/proc");
		return 1;
	}
	while ((de = readdir(proc))) {
		char mpath[300], line[4096];
		FILE *maps;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(mpath, sizeof(mpath), "/proc/%s/maps", de->d_name);
		maps = fopen(mpath, "re");
		if (!maps)
			continue;
		procs++;
		while (fgets(line, sizeof(line), maps)) {
			char perms[8], path[2048], fpath[2400];
			struct file_id id;
			int fd;

			path[0] = '\0';
			if (sscanf(line,
				   "%*x-%*x %7s %*x %lx:%lx %lu %2047[^\n]",
				   perms, &id.dev_major, &id.dev_minor, &id.ino,
				   path) < 4 ||
			    perms[2] != 'x' || !id.ino) {
				continue;
			}
			{
				char *p = path;

				while (*p == ' ')
					p++;
				memmove(path, p, strlen(p) + 1);
			}
			if (path[0] != '/' || strstr(path, " (deleted)"))
				continue;
			if (seen_add(&id) != 1)
				continue;
			snprintf(fpath, sizeof(fpath), "/proc/%s/root%s",
				 de->d_name, path);
			fd = open(fpath, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0)
				build_one(fd, path);
		}
		fclose(maps);
	}
	closedir(proc);
	for (; argi < argc; argi++) {
		struct stat sb;
		struct file_id id;
		int fd = open(argv[argi], O_RDONLY | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &sb)) {
			perror(argv[argi]);
			if (fd >= 0)
				close(fd);
			continue;
		}
		id.dev_major = major(sb.st_dev);
		id.dev_minor = minor(sb.st_dev);
		id.ino = sb.st_ino;
		if (seen_add(&id) == 1)
			build_one(fd, argv[argi]);
		else
			close(fd);
	}

	printf("processes %u, distinct executable files %zu (%u without "
	       "table, %u with a CFI section rejected, %u truncated)\n",
	       procs, nres, failed, rejected, truncated);
	printf("CFI %.2f MB, FDEs %lu (skipped %lu), rows %lu "
	       "(%.2f MB as 16-byte rows)\n",
	       cfi / 1048576.0, fdes, skipped, rows,
	       rows * sizeof(struct unwind_row) / 1048576.0);
	printf("build time %.1f ms wall (%.1f ms CPU) total, %.1f ms wall "
	       "(%.1f ms CPU) per MB of CFI, %.0f ns CPU per row\n",
	       total_ms, total_cpu_ms, cfi ? total_ms / (cfi / 1048576.0) : 0,
	       cfi ? total_cpu_ms / (cfi / 1048576.0) : 0,
	       rows ? total_cpu_ms * 1e6 / rows : 0);
	printf("peak RSS growth %ld KB (max RSS %ld KB; tables freed after "
	       "each file, so this is the largest single build)\n",
	       maxrss_kb() - rss0, maxrss_kb());
	qsort(res, nres, sizeof(*res), cmp_ms);
	for (size_t i = 0; i < nres && i < 5; i++)
		printf("  slowest: %8.1f ms %8lu rows %8.2f MB cfi %s\n",
		       res[i].ms, res[i].rows, res[i].cfi / 1048576.0,
		       res[i].path);
	free(res);
	free(seen);
	return 0;
}
