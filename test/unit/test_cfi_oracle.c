// SPDX-License-Identifier: Apache-2.0
/*
 * The CFA interpreter against libdw (libdw_cfi_oracle.h): on libraries
 * every Debian build host has and on every test workload (C, C++, Go,
 * Rust, JVM agents), each row built from .eh_frame must be the rule libdw
 * computes at every one of its addresses. The hostile workloads are left
 * out: libdw itself mishandles them. aarch64: Debian's arm64 libraries
 * (the multiarch packages `make arm64` installs) and a program
 * cross-compiled without frame pointers, judged the same way, every
 * return-address rule of the row format seen. The whole-host run is
 * test/bench/bench_cfi_oracle (docs/unwinding.md).
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

#include "libdw_cfi_oracle.h"

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

/* Debian's arm64 userland, as the arm64 test guest runs it. */
static const char *const aarch64_files[] = {
	"/usr/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1",
	"/usr/lib/aarch64-linux-gnu/libc.so.6",
	"/usr/lib/aarch64-linux-gnu/libm.so.6",
	"/usr/lib/aarch64-linux-gnu/libgcc_s.so.1",
	"/usr/lib/aarch64-linux-gnu/libz.so.1",
	"/usr/lib/aarch64-linux-gnu/libelf.so.1",
};

struct tally {
	unsigned int files, judged_files;
	uint64_t rows, judged, frames, mismatched;
	uint64_t ra_rules[4]; /* rows per enum unwind_ra_rule */
};

static void judge(const char *path, struct tally *tl)
{
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	struct oracle_result r;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	assert_true(fd >= 0);
	err = unwind_table_build_fd(fd, &t, &st);
	close(fd);
	if (err == -ENOEXEC || err == -ENOENT)
		return; /* not an x86_64 ELF, or no CFI (stripped Go) */
	assert_int_equal(err, 0);
	tl->files++;
	assert_int_equal(oracle_check(path, &t, &r), 0);
	if (r.mismatched)
		print_message("%s: %lu of %lu rows differ from libdw\n", path,
			      (unsigned long)r.mismatched,
			      (unsigned long)r.judged);
	tl->judged_files += r.judged > 0;
	tl->rows += r.rows;
	tl->judged += r.judged;
	tl->frames += r.frames;
	tl->mismatched += r.mismatched;
	for (size_t i = 0; i < t.nrows; i++)
		if (t.rows[i].rule.cfa_base == UNWIND_CFA_SP ||
		    t.rows[i].rule.cfa_base == UNWIND_CFA_FP)
			tl->ra_rules[t.rows[i].rule.ra_rule & 3]++;
	unwind_table_free(&t);
}

static void report(const char *what, const struct tally *tl)
{
	print_message("%s: %u files (%u judged), %lu rows, %lu judged against"
		      " %lu libdw frame states, %lu differ\n",
		      what, tl->files, tl->judged_files,
		      (unsigned long)tl->rows, (unsigned long)tl->judged,
		      (unsigned long)tl->frames, (unsigned long)tl->mismatched);
}

static void test_system_libraries(void **state)
{
	struct tally tl = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(system_files) / sizeof(*system_files);
	     i++) {
		if (access(system_files[i], R_OK))
			fail_msg("%s missing", system_files[i]);
		judge(system_files[i], &tl);
	}
	report("system", &tl);
	assert_int_equal(tl.judged_files, tl.files);
	assert_int_equal(tl.mismatched, 0);
	/* Most rows come from an FDE libdw can judge (the others: gaps after
	 * an FDE, PLT stubs without one). */
	assert_true(tl.judged > 50000);
	assert_true(tl.judged * 100 > tl.rows * 80);
}

static void test_aarch64_libraries(void **state)
{
	struct tally tl = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(aarch64_files) / sizeof(*aarch64_files);
	     i++) {
		if (access(aarch64_files[i], R_OK))
			fail_msg("%s missing (make arm64-deps installs it)",
				 aarch64_files[i]);
		judge(aarch64_files[i], &tl);
	}
	report("aarch64", &tl);
	print_message(
		"aarch64 return address rules: CFA-8 %lu, x30 %lu, "
		"after x29 %lu, own offset %lu\n",
		(unsigned long)tl.ra_rules[0], (unsigned long)tl.ra_rules[1],
		(unsigned long)tl.ra_rules[2], (unsigned long)tl.ra_rules[3]);
	assert_int_equal(tl.files,
			 sizeof(aarch64_files) / sizeof(*aarch64_files));
	assert_int_equal(tl.judged_files, tl.files);
	assert_int_equal(tl.mismatched, 0);
	assert_true(tl.judged > 10000);
	assert_true(tl.judged * 100 > tl.rows * 80);
	/* glibc has leaf functions (x30), {x29, x30} pairs at CFA-16 and
	 * deeper: every rule but the lone-x30 save. */
	assert_true(tl.ra_rules[0] > 100 && tl.ra_rules[1] > 1000 &&
		    tl.ra_rules[2] > 1000);
}

/* build/test/unit/X -> build/<rel> */
static void build_path(char *out, size_t len, const char *rel)
{
	char exe[1024];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	assert_true(n > 0);
	exe[n] = '\0';
	snprintf(out, len, "%s/../../%s", dirname(exe), rel);
}

/*
 * callgraph.c by aarch64 gcc without frame pointers (the arm64 test
 * guest's workloads): its functions save x30 alone, as {x30, x19} or not
 * at all, so the lone-x30 rule is exercised here; built once plain and
 * once with return addresses signed (DW_CFA_AARCH64_negate_ra_state in
 * every FDE).
 */
static void test_aarch64_nofp_program(void **state)
{
	char path[1200];
	struct tally tl = {0};

	(void)state;
	for (int i = 0; i < 2; i++) {
		build_path(path, sizeof(path),
			   i ? "arm64-unit/callgraph_pac"
			     : "arm64-unit/callgraph_nofp");
		if (access(path, R_OK))
			fail_msg("%s missing (its make rule builds it)", path);
		judge(path, &tl);
	}
	report("aarch64 nofp", &tl);
	print_message(
		"aarch64 nofp return address rules: CFA-8 %lu, x30 %lu, "
		"after x29 %lu, own offset %lu\n",
		(unsigned long)tl.ra_rules[0], (unsigned long)tl.ra_rules[1],
		(unsigned long)tl.ra_rules[2], (unsigned long)tl.ra_rules[3]);
	assert_int_equal(tl.judged_files, 2);
	assert_int_equal(tl.mismatched, 0);
	assert_true(tl.ra_rules[1] > 0 && tl.ra_rules[3] > 0);
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

		if (de->d_name[0] == '.' || !strcmp(de->d_name, "hostile"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &sb))
			continue;
		if (S_ISDIR(sb.st_mode) && depth < 4)
			walk(path, tl, depth + 1);
		else if (S_ISREG(sb.st_mode))
			judge(path, tl);
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
	report("workloads", &tl);
	/* C, C++, Go (external linking), Rust, the JVM agent. */
	assert_true(tl.judged_files >= 20);
	assert_int_equal(tl.mismatched, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_system_libraries),
		cmocka_unit_test(test_workloads),
		cmocka_unit_test(test_aarch64_libraries),
		cmocka_unit_test(test_aarch64_nofp_program),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
