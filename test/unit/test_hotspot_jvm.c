// SPDX-License-Identifier: Apache-2.0
/*
 * The HotSpot readers on live JVMs (Debian's JDK 17 and Temurin 25): the
 * layout from each JVM's own VMStructs, its code heaps, and the compiled
 * FibHash.fib named from its nmethod with class, signature, source file
 * and the line of its first bytecode, judged against the source file.
 * A JDK that is not installed fails the test (make deps installs 17).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtimes/hotspot/hotspot_jvm.h"

/* The line of "if (n < 2)" in FibHash.java: fib's bci 0. */
static uint32_t fib_first_line(void)
{
	FILE *f = fopen("test/workloads/java/FibHash.java", "r");
	char line[256];
	uint32_t n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, "if (n < 2)")) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	fail_msg("no fib in FibHash.java");
	return 0;
}

/* libjvm's load bias and path from the maps (its first segment maps
 * file offset 0 at vaddr 0). */
static bool find_libjvm(pid_t pid, uint64_t *bias, char *path, size_t len)
{
	char maps[64], line[600];
	FILE *f;
	bool ok = false;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e, off;
		char perm[8], p[512];

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %511s", &s, &e, perm,
			   &off, p) == 5 &&
		    strstr(p, "/libjvm.so") && off == 0) {
			*bias = s;
			snprintf(path, len, "%s", p);
			ok = true;
			break;
		}
	}
	fclose(f);
	return ok;
}

struct fib_search {
	struct hotspot_jvm *j;
	struct hotspot_blob blob;
	struct hotspot_method m;
	bool found, at_ok;
	uint32_t line0;
};

static void look(void *arg, const struct hotspot_blob *b)
{
	struct fib_search *s = arg;
	struct hotspot_method m;

	if (s->found || !b->nmethod || hotspot_method_read(s->j, b->method, &m))
		return;
	if (!strcmp(m.klass, "FibHash") && !strcmp(m.name, "fib")) {
		struct hotspot_blob b2;

		s->blob = *b;
		s->m = m;
		s->found = true;
		s->line0 = hotspot_method_line(s->j, &m, 0);
		/* the segment map leads from inside its code to it */
		s->at_ok = !hotspot_blob_at(s->j,
					    (b->code_begin + b->code_end) / 2,
					    &b2) &&
			   b2.addr == b->addr && b2.method == b->method;
	}
}

static void run_jdk(const char *java)
{
	char path[512], cp[256];
	struct hotspot_syms syms;
	struct hotspot_jvm j;
	struct fib_search s;
	const char *missing = NULL;
	uint64_t bias = 0;
	uint32_t pid;
	pid_t child;
	int fd, err = -1;

	if (access(java, X_OK))
		fail_msg("%s is not installed", java);
	snprintf(cp, sizeof(cp), "%s/workloads/java",
		 getenv("OTELPROF_BUILD") ? getenv("OTELPROF_BUILD") : "build");
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		execl(java, java, "-cp", cp, "FibHash", "20", (char *)NULL);
		_exit(127);
	}
	pid = (uint32_t)child;
	memset(&s, 0, sizeof(s));
	/* up to 15 s for the JVM to start and compile fib */
	for (int t = 0; t < 150 && !s.found; t++) {
		struct timespec ts = {0, 100 * 1000 * 1000};

		nanosleep(&ts, NULL);
		if (err && find_libjvm(child, &bias, path, sizeof(path))) {
			fd = open(path, O_RDONLY | O_CLOEXEC);
			assert_true(fd >= 0);
			assert_int_equal(
				hotspot_syms_from_file(fd, bias, &syms), 0);
			close(fd);
			/* the tables are filled at start-up: retry until
			 * they are */
			err = hotspot_jvm_open(&j, &syms, process_memory_read,
					       &pid, &missing);
			assert_null(missing);
		}
		if (err)
			continue;
		s.j = &j;
		hotspot_jvm_heaps(&j);
		hotspot_each_blob(&j, 1u << 20, look, &s);
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_int_equal(err, 0);
	assert_true(j.nheaps >= 1);
	/* where an nmethod's metadata is (the Methods it inlined): 17 an
	 * offset, 25 the blob's mutable data after its relocations */
	assert_true(j.l.nm_metadata != HS_NONE ||
		    (j.l.blob_mutable_data != HS_NONE &&
		     j.l.blob_mutable_size != HS_NONE &&
		     j.l.blob_relocation_size != HS_NONE));
	assert_true(j.interp_low && j.interp_high > j.interp_low);
	/* Each heap's reserved end, past what it had committed (a default
	 * code cache reserves 240 MiB, commits a few): code committed
	 * after the read is found too. */
	assert_true(j.l.vspace_high_boundary != HS_NONE);
	for (uint32_t i = 0; i < j.nheaps; i++)
		assert_true(j.heaps[i].limit > j.heaps[i].high);
	if (!s.found)
		fail_msg("%s: FibHash.fib not found among compiled methods",
			 java);
	assert_string_equal(s.m.signature, "(I)J");
	assert_string_equal(s.m.source, "FibHash.java");
	assert_int_equal(s.line0, fib_first_line());
	assert_true(s.blob.frame_size > 0 && s.blob.frame_size < 64);
	assert_true(s.at_ok);
}

static void jdk17(void **state)
{
	(void)state;
	run_jdk("/usr/lib/jvm/java-17-openjdk-amd64/bin/java");
}

static void jdk25(void **state)
{
	(void)state;
	run_jdk("/usr/lib/jvm/temurin-25-jdk-amd64/bin/java");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(jdk17),
		cmocka_unit_test(jdk25),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
