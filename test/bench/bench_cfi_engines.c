// SPDX-License-Identifier: Apache-2.0
/*
 * Builds the unwind table of each ELF file given with both CFI engines
 * (libdw and the direct interpreter, unwind_table.h) and compares the
 * rows; reports build time and peak charged memory per engine.
 *   bench_cfi_engines [-v] [-e libdw|interp] FILE...   (or - : paths on stdin)
 * -e builds with one engine only (for /usr/bin/time's peak RSS).
 * Exit status 1 if any file's rows differ.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "unwind/unwind_table.h"

struct engine_total {
	double cpu_ms, worst_ms;
	uint64_t peak, worst_peak;
	char worst_path[256];
};

static struct engine_total tot[3];
static unsigned long files, same_files, diff_files, failed;
static uint64_t fdes, rows, rows_same, cfi_bytes;
static int verbose, only;

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int build(const char *path, int engine, struct unwind_table *t,
		 struct unwind_table_stats *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	double t0, ms;

	if (fd < 0)
		return -errno;
	memset(st, 0, sizeof(*st));
	st->cfi_engine = (uint8_t)engine;
	t0 = cpu_ms();
	err = unwind_table_build_fd(fd, t, st);
	ms = cpu_ms() - t0;
	close(fd);
	tot[engine].cpu_ms += ms;
	if (ms > tot[engine].worst_ms) {
		tot[engine].worst_ms = ms;
		snprintf(tot[engine].worst_path, sizeof(tot[engine].worst_path),
			 "%s", path);
	}
	if (st->mem_peak > tot[engine].worst_peak)
		tot[engine].worst_peak = st->mem_peak;
	tot[engine].peak += st->mem_peak;
	if (verbose)
		fprintf(stderr, "%s %s: %d %.1f ms peak %lu rows %zu\n",
			engine == UNWIND_CFI_LIBDW ? "libdw " : "interp", path,
			err, ms, (unsigned long)st->mem_peak, t->nrows);
	return err;
}

static const char *rule(const struct unwind_row *r, char *buf, size_t n)
{
	static const char *const base[] = {"INVALID", "SP",	"FP",
					   "PLT",     "SIGNAL", "STOP"};
	static const char *const fp[] = {"same", "cfa", "undef"};

	snprintf(buf, n, "%s%+d fp:%s%+d",
		 r->cfa_base <= 5 ? base[r->cfa_base] : "?", r->cfa_offset,
		 r->fp_rule <= 2 ? fp[r->fp_rule] : "?", r->fp_offset);
	return buf;
}

static bool row_eq(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->pc == b->pc && a->cfa_base == b->cfa_base &&
	       a->cfa_offset == b->cfa_offset && a->fp_rule == b->fp_rule &&
	       a->fp_offset == b->fp_offset;
}

/* Rows of `a` that `b` has too (same pc, same rules); both sorted. */
static size_t common_rows(const struct unwind_table *a,
			  const struct unwind_table *b, const char *path)
{
	size_t i = 0, j = 0, same = 0, shown = 0;

	while (i < a->nrows) {
		while (j < b->nrows && b->rows[j].pc < a->rows[i].pc)
			j++;
		if (j < b->nrows && row_eq(&a->rows[i], &b->rows[j])) {
			same++;
		} else if (shown < 8) {
			const struct unwind_row *o =
				unwind_table_lookup(b, a->rows[i].pc);
			char x[64], y[64];

			printf("  %s: pc 0x%lx libdw %s interp %s\n", path,
			       (unsigned long)a->rows[i].pc,
			       rule(&a->rows[i], x, sizeof(x)),
			       o ? rule(o, y, sizeof(y)) : "(none)");
			shown++;
		}
		i++;
	}
	return same;
}

static void one(const char *path)
{
	struct unwind_table a = {0}, b = {0};
	struct unwind_table_stats sa, sb;
	int ea = 0, eb = 0;

	if (only) {
		ea = build(path, only, &a, &sa);
		files++;
		if (ea && ea != -ENOENT && ea != -ENOEXEC)
			failed++;
		if (!ea) {
			rows += a.nrows;
			fdes += sa.fdes_total;
			cfi_bytes += sa.bytes_of_cfi;
		}
		unwind_table_free(&a);
		return;
	}
	ea = build(path, UNWIND_CFI_LIBDW, &a, &sa);
	eb = build(path, UNWIND_CFI_INTERP, &b, &sb);
	if (ea == -ENOEXEC && eb == -ENOEXEC)
		return; /* not an x86_64 ELF */
	files++;
	if (ea != eb) {
		printf("DIFF %s: libdw %d interp %d\n", path, ea, eb);
		diff_files++;
		goto out;
	}
	if (ea) {
		if (ea != -ENOENT)
			failed++;
		same_files++;
		goto out;
	}
	fdes += sa.fdes_total;
	rows += a.nrows;
	cfi_bytes += sa.bytes_of_cfi;
	{
		size_t same = common_rows(&a, &b, path);

		rows_same += same;
		if (same == a.nrows && a.nrows == b.nrows) {
			same_files++;
		} else {
			printf("DIFF %s: rows libdw %zu interp %zu, %zu same"
			       " (flags %#x %#x)\n",
			       path, a.nrows, b.nrows, same, sa.flags,
			       sb.flags);
			diff_files++;
		}
	}
out:
	unwind_table_free(&a);
	unwind_table_free(&b);
}

static void report(int e, const char *name)
{
	if (!tot[e].cpu_ms && !tot[e].peak)
		return;
	printf("%-6s cpu %.0f ms (%.1f ms per MB of CFI); worst file %.1f ms"
	       " (%s); peak charged worst %.1f MB\n",
	       name, tot[e].cpu_ms,
	       cfi_bytes ? tot[e].cpu_ms / (cfi_bytes / 1e6) : 0,
	       tot[e].worst_ms, tot[e].worst_path, tot[e].worst_peak / 1e6);
}

int main(int argc, char **argv)
{
	int i = 1;
	char line[4096];

	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (!strcmp(argv[i], "-v"))
			verbose = 1;
		else if (!strcmp(argv[i], "-e") && i + 1 < argc)
			only = !strcmp(argv[++i], "libdw") ? UNWIND_CFI_LIBDW
							   : UNWIND_CFI_INTERP;
		else
			break;
	}
	for (; i < argc; i++) {
		if (strcmp(argv[i], "-")) {
			one(argv[i]);
			continue;
		}
		while (fgets(line, sizeof(line), stdin)) {
			line[strcspn(line, "\n")] = '\0';
			if (line[0])
				one(line);
		}
	}
	printf("files %lu (identical %lu, different %lu, no table %lu);"
	       " FDEs %lu; rows %lu, identical %lu (%.4f %%); CFI %.1f MB\n",
	       files, same_files, diff_files, failed, (unsigned long)fdes,
	       (unsigned long)rows, (unsigned long)rows_same,
	       rows ? 100.0 * rows_same / rows : 100.0, cfi_bytes / 1e6);
	report(UNWIND_CFI_LIBDW, "libdw");
	report(UNWIND_CFI_INTERP, "interp");
	return diff_files ? 1 : 0;
}
