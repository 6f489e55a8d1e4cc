// SPDX-License-Identifier: Apache-2.0
/*
 * Differential test of the two CFI engines (libdw and the direct
 * interpreter, unwind_table.h): on libraries every Debian build host has
 * and on every test workload (C, C++, Go, Rust, the hostile ELF files),
 * both must build the same table, row for row. The explained
 * differences, both where the libdw path gives up on an .eh_frame the
 * interpreter reads: a section refused whole (UNWIND_ST_HOSTILE: something
 * libdw itself would mishandle), and an .eh_frame libdw cannot open
 * (dwarf_getcfi_elf() fails on a garbage .eh_frame_hdr, which the
 * interpreter does not need: it walks the section).
 * The whole-host run is test/bench/bench_cfi_engines (docs/unwinding.md).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/unwind_table.h"

static const char *const system_files[] = {
	"/lib64/ld-linux-x86-64.so.2",
	"/usr/lib/x86_64-linux-gnu/libc.so.6",
	"/usr/lib/x86_64-linux-gnu/libm.so.6",
	"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
	"/usr/lib/x86_64-linux-gnu/libgcc_s.so.1",
	"/usr/lib/x86_64-linux-gnu/libz.so.1",
	"/usr/lib/x86_64-linux-gnu/libelf.so.1",
	"/usr/lib/x86_64-linux-gnu/libdw.so.1",
	"/usr/bin/bash",
	"/usr/bin/ls",
};

struct tally {
	unsigned int files, identical, explained;
	uint64_t rows;
};

static int build(const char *path, uint8_t engine, struct unwind_table *t,
		 struct unwind_table_stats *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	memset(st, 0, sizeof(*st));
	st->cfi_engine = engine;
	err = unwind_table_build_fd(fd, t, st);
	close(fd);
	return err;
}

static bool same_rows(const struct unwind_table *a,
		      const struct unwind_table *b, const char *path)
{
	if (a->nrows != b->nrows) {
		print_message("%s: %zu rows (libdw) vs %zu (interp)\n", path,
			      a->nrows, b->nrows);
		return false;
	}
	for (size_t i = 0; i < a->nrows; i++) {
		const struct unwind_row *x = &a->rows[i], *y = &b->rows[i];

		if (x->pc != y->pc || x->cfa_base != y->cfa_base ||
		    x->cfa_offset != y->cfa_offset ||
		    x->fp_rule != y->fp_rule || x->fp_offset != y->fp_offset) {
			print_message("%s: row %zu pc %#lx: libdw %u%+d/%u%+d,"
				      " interp pc %#lx %u%+d/%u%+d\n",
				      path, i, (unsigned long)x->pc,
				      x->cfa_base, x->cfa_offset, x->fp_rule,
				      x->fp_offset, (unsigned long)y->pc,
				      y->cfa_base, y->cfa_offset, y->fp_rule,
				      y->fp_offset);
			return false;
		}
	}
	return true;
}

static void compare(const char *path, struct tally *tl)
{
	struct unwind_table a, b;
	struct unwind_table_stats sa, sb;
	int ea = build(path, UNWIND_CFI_LIBDW, &a, &sa);
	int eb = build(path, UNWIND_CFI_INTERP, &b, &sb);

	if (ea == -ENOEXEC && eb == -ENOEXEC)
		return; /* not an x86_64 ELF (scripts, jars) */
	tl->files++;
	if (ea != eb)
		print_message("%s: libdw %d, interp %d\n", path, ea, eb);
	assert_int_equal(ea, eb);
	if (same_rows(&a, &b, path)) {
		assert_int_equal(sa.rows_signal, sb.rows_signal);
		tl->identical++;
		tl->rows += a.nrows;
	} else {
		bool refused = (sa.flags & UNWIND_ST_HOSTILE) &&
			       !(sb.flags & UNWIND_ST_HOSTILE);
		bool unopened = !(sa.flags & UNWIND_ST_EH_FRAME) &&
				(sb.flags & UNWIND_ST_EH_FRAME);

		assert_true(refused || unopened);
		tl->explained++;
	}
	unwind_table_free(&a);
	unwind_table_free(&b);
}

static void test_system_libraries(void **state)
{
	struct tally tl = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(system_files) / sizeof(*system_files);
	     i++) {
		if (access(system_files[i], R_OK))
			fail_msg("%s missing", system_files[i]);
		compare(system_files[i], &tl);
	}
	print_message("system: %u files, %u identical (%lu rows)\n", tl.files,
		      tl.identical, (unsigned long)tl.rows);
	assert_int_equal(tl.identical, tl.files);
	assert_true(tl.rows > 10000);
}

static void walk(const char *dir, struct tally *tl, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[1024];
		struct stat sb;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &sb))
			continue;
		if (S_ISDIR(sb.st_mode) && depth < 4)
			walk(path, tl, depth + 1);
		else if (S_ISREG(sb.st_mode))
			compare(path, tl);
	}
	closedir(d);
}

static void test_workloads(void **state)
{
	char exe[1024], dir[1100];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct tally tl = {0};

	(void)state;
	assert_true(n > 0);
	exe[n] = '\0';
	/* build/test/unit/X -> build/workloads */
	snprintf(dir, sizeof(dir), "%s/../../workloads", dirname(exe));
	if (access(dir, R_OK))
		fail_msg("%s missing (make workloads builds it)", dir);
	walk(dir, &tl, 0);
	print_message("workloads: %u files, %u identical (%lu rows), %u with"
		      " an .eh_frame only the libdw path gives up on\n",
		      tl.files, tl.identical, (unsigned long)tl.rows,
		      tl.explained);
	/* C, C++, Go, Rust, Java agents and the hostile files. */
	assert_true(tl.files >= 40);
	assert_true(tl.identical + tl.explained == tl.files);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_system_libraries),
		cmocka_unit_test(test_workloads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
