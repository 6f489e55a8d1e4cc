// SPDX-License-Identifier: Apache-2.0
/*
 * Builds the unwind table of each ELF file given with the CFA interpreter
 * (CPU time and peak charged memory) and judges every row built from
 * .eh_frame against libdw (test/unit/libdw_cfi_oracle.h):
 *   bench_cfi_oracle [-v] [-n] FILE...   (or - : paths on stdin)
 * -n builds only (no libdw: for /usr/bin/time's peak RSS).
 * Exit status 1 if any row differs from libdw.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../unit/libdw_cfi_oracle.h"

static unsigned long files, unopened, differ;
static uint64_t fdes, rows, judged, frames, mismatched, cfi_bytes, worst_peak;
static double total_ms, worst_ms;
static char worst_path[256];
static int verbose, build_only;

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void one(const char *path)
{
	struct unwind_table t = {0};
	struct unwind_table_stats st = {0};
	struct oracle_result r;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	double t0, ms;

	if (fd < 0)
		return;
	t0 = cpu_ms();
	err = unwind_table_build_fd(fd, &t, &st);
	ms = cpu_ms() - t0;
	close(fd);
	if (err == -ENOEXEC)
		return;
	files++;
	total_ms += ms;
	if (ms > worst_ms) {
		worst_ms = ms;
		snprintf(worst_path, sizeof(worst_path), "%s", path);
	}
	if (st.mem_peak > worst_peak)
		worst_peak = st.mem_peak;
	if (verbose)
		fprintf(stderr, "%s: %d %.1f ms peak %lu rows %zu\n", path, err,
			ms, (unsigned long)st.mem_peak, t.nrows);
	if (err)
		return;
	fdes += st.fdes_total;
	rows += t.nrows;
	cfi_bytes += st.bytes_of_cfi;
	if (!build_only && st.bytes_of_cfi) {
		oracle_check(path, &t, &r);
		if (!r.opened)
			unopened++;
		judged += r.judged;
		frames += r.frames;
		mismatched += r.mismatched;
		if (r.mismatched) {
			differ++;
			printf("DIFF %s: %lu of %lu judged rows\n", path,
			       (unsigned long)r.mismatched,
			       (unsigned long)r.judged);
		}
	}
	unwind_table_free(&t);
}

int main(int argc, char **argv)
{
	char line[4096];
	int i = 1;

	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (!strcmp(argv[i], "-v"))
			verbose = 1;
		else if (!strcmp(argv[i], "-n"))
			build_only = 1;
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
	printf("files %lu; FDEs %lu; rows %lu; CFI %.1f MB; build cpu %.0f ms"
	       " (%.1f ms per MB of CFI), worst %.1f ms (%s), peak charged"
	       " worst %.1f MB\n",
	       files, (unsigned long)fdes, (unsigned long)rows, cfi_bytes / 1e6,
	       total_ms, cfi_bytes ? total_ms / (cfi_bytes / 1e6) : 0, worst_ms,
	       worst_path, worst_peak / 1e6);
	if (!build_only)
		printf("libdw: %lu rows judged against %lu frame states, %lu"
		       " differ (%lu files), %lu files libdw cannot open\n",
		       (unsigned long)judged, (unsigned long)frames,
		       (unsigned long)mismatched, differ, unopened);
	return mismatched ? 1 : 0;
}
