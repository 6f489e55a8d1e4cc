// SPDX-License-Identifier: Apache-2.0
/* /proc/PID/{maps,stat,cgroup} parsers on normal and malformed text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "process/proc_info.h"
#include "process/proc_file.h"
#include "process/proc_maps.h"

static void maps_keeps_executable_mappings(void **state)
{
	static const char text[] =
		"55d4c0a00000-55d4c0a02000 r--p 00000000 fd:01 1234 "
		"/usr/bin/cat\n"
		"55d4c0a02000-55d4c0a06000 r-xp 00002000 fd:01 1234 "
		"/usr/bin/cat\n"
		"7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
		"7f1000000000-7f1000100000 r-xp 00028000 08:10 99 "
		"/lib/x86_64-linux-gnu/libc.so.6\n"
		"7f2000000000-7f2000001000 r-xp 00000000 00:00 0 \n"
		"7f3000000000-7f3000002000 r-xp 00000000 00:01 7 /memfd:jit "
		"(deleted)\n"
		"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0               "
		"   [vdso]\n"
		"7f4000000000-7f4000001000 r-xp 00001000 fd:01 55 /tmp/my "
		"lib.so (deleted)\n"
		"7f5000000000-7f5000010000 r-xs 08000000 00:01 8 /dev/zero "
		"(deleted)\n"
		"7f6000000000-7f6000001000 r-xp 00000000 fd:01 9 /dev/zero\n";
	struct proc_maps m;
	unsigned bad = 0;
	const struct proc_mapping *x;

	(void)state;
	assert_int_equal(proc_maps_parse(text, sizeof(text) - 1, &m, &bad), 0);
	assert_int_equal(bad, 0);
	assert_int_equal(m.n, 8);
	x = proc_maps_find(&m, 0x55d4c0a02000);
	assert_non_null(x);
	assert_string_equal(x->path, "/usr/bin/cat");
	assert_int_equal(x->offset, 0x2000);
	assert_int_equal(x->inode, 1234);
	assert_int_equal(x->dev_major, 0xfd);
	assert_int_equal(x->kind, PROC_MAPPING_FILE);
	assert_null(proc_maps_find(&m, 0x55d4c0a00000)); /* not executable */
	assert_null(proc_maps_find(&m, 0x55d4c0a06000)); /* end is exclusive */
	x = proc_maps_find(&m, 0x7f1000000123);
	assert_non_null(x);
	assert_string_equal(x->path, "/lib/x86_64-linux-gnu/libc.so.6");
	assert_int_equal(proc_maps_find(&m, 0x7f2000000000)->kind,
			 PROC_MAPPING_ANON);
	/* memfd code is file-backed: readable through map_files. */
	assert_int_equal(proc_maps_find(&m, 0x7f3000000000)->kind,
			 PROC_MAPPING_FILE);
	assert_int_equal(proc_maps_find(&m, 0x7f3000000000)->deleted, 1);
	assert_int_equal(proc_maps_find(&m, 0x7ffd00000000)->kind,
			 PROC_MAPPING_VDSO);
	x = proc_maps_find(&m, 0x7f4000000000);
	assert_string_equal(x->path, "/tmp/my lib.so");
	assert_int_equal(x->deleted, 1);
	/* shared anonymous memory (opcache's JIT buffer): no file to read */
	x = proc_maps_find(&m, 0x7f5000000000);
	assert_int_equal(x->kind, PROC_MAPPING_ANON);
	assert_string_equal(x->path, "/dev/zero");
	assert_int_equal(x->deleted, 1);
	/* the device file itself, mapped: a file like any other */
	assert_int_equal(proc_maps_find(&m, 0x7f6000000000)->kind,
			 PROC_MAPPING_FILE);
	proc_maps_free(&m);
}

static void maps_skips_and_counts_malformed_lines(void **state)
{
	static const char text[] =
		"garbage\n"
		"1000-0500 r-xp 00000000 00:00 0 /backwards\n"
		"11111111111111111-2000 r-xp 0 0:0 0 /too-long-hex\n"
		"1000-2000 r-x\n"
		"1000-2000 r-xp zz 00:00 0 /badoff\n"
		"3000-4000 r-xp 00000000 00:00 99999999999999999999999 "
		"/badinode\n"
		"\n"
		"5000-6000 r-xp 00000000 00:00 0 /ok";
	struct proc_maps m;
	unsigned bad = 0;

	(void)state;
	assert_int_equal(proc_maps_parse(text, sizeof(text) - 1, &m, &bad), 0);
	assert_int_equal(m.n, 1);
	assert_string_equal(m.v[0].path, "/ok");
	assert_int_equal(bad, 7);
	proc_maps_free(&m);
}

static void maps_empty_and_binary_input(void **state)
{
	struct proc_maps m;
	unsigned bad = 0;
	char junk[4096];

	(void)state;
	assert_int_equal(proc_maps_parse("", 0, &m, &bad), 0);
	assert_int_equal(m.n, 0);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 131 + 7);
	assert_int_equal(proc_maps_parse(junk, sizeof(junk), &m, &bad), 0);
	proc_maps_free(&m);
}

/* OTEP 4719: the process-context mapping under each of its names. */
static void maps_find_otel_ctx_mapping(void **state)
{
	static const struct {
		const char *line;
		uint64_t start;
	} cases[] = {
		{"7f0000001000-7f0000002000 rw-s 00000000 00:01 645 "
		 "/memfd:OTEL_CTX (deleted)\n",
		 0x7f0000001000},
		{"7f0000003000-7f0000004000 rw-s 00000000 00:01 646 "
		 "/memfd:OTEL_CTX\n",
		 0x7f0000003000},
		{"7f0000005000-7f0000006000 rw-p 00000000 00:00 0 "
		 "[anon:OTEL_CTX]\n",
		 0x7f0000005000},
		{"7f0000007000-7f0000008000 rw-s 00000000 00:01 7 "
		 "[anon_shmem:OTEL_CTX]\n",
		 0x7f0000007000},
		/* Not it: unreadable, other names, a file called so. */
		{"7f0000009000-7f000000a000 ---p 00000000 00:00 0 "
		 "[anon:OTEL_CTX]\n",
		 0},
		{"7f0000009000-7f000000a000 rw-p 00000000 00:00 0 "
		 "[anon:OTEL_CTXX]\n",
		 0},
		{"7f0000009000-7f000000a000 rw-p 00000000 08:01 9 "
		 "/tmp/OTEL_CTX\n",
		 0},
	};
	struct proc_maps m;
	unsigned bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(proc_maps_parse(cases[i].line,
						 strlen(cases[i].line), &m,
						 &bad),
				 0);
		assert_int_equal(m.otel_ctx_start, cases[i].start);
		if (cases[i].start)
			assert_int_equal(m.otel_ctx_end,
					 cases[i].start + 0x1000);
		proc_maps_free(&m);
	}
	assert_int_equal(bad, 0);
}

static void stat_starttime_with_hostile_comm(void **state)
{
	/* comm may contain spaces and ')' : only the last ')' ends it. */
	static const char text[] =
		"1234 (evil) 1 2 3 (x) S) R 1 1234 1234 0 -1 4194560 100 0 0 0 "
		"5 6 0 0 20 0 1 0 987654 12345678 100\n";
	uint64_t st = 0;

	(void)state;
	assert_int_equal(proc_stat_parse_starttime(text, sizeof(text) - 1, &st),
			 0);
	assert_int_equal(st, 987654);
	assert_int_equal(proc_stat_parse_starttime("1 (a) R 1 2", 11, &st),
			 -EINVAL);
	assert_int_equal(proc_stat_parse_starttime("no paren", 8, &st),
			 -EINVAL);
}

static void stat_comm_with_hostile_comm(void **state)
{
	static const char text[] =
		"1234 (evil) 1 2 3 (x) S) R 1 1234 1234 0 -1 4194560 100 0 0 0 "
		"5 6 0 0 20 0 1 0 987654 12345678 100\n";
	char comm[16];

	(void)state;
	/* the kernel cuts comm at 15 bytes: a longer one is a lie, cut too */
	assert_int_equal(proc_stat_parse_comm(text, sizeof(text) - 1, comm), 0);
	assert_string_equal(comm, "evil) 1 2 3 (x)");
	assert_int_equal(proc_stat_parse_comm("1 (sh) S 1", 10, comm), 0);
	assert_string_equal(comm, "sh");
	assert_int_equal(proc_stat_parse_comm("1 () S 1", 8, comm), 0);
	assert_string_equal(comm, "");
	assert_int_equal(proc_stat_parse_comm("1 (a b)) S", 10, comm), 0);
	assert_string_equal(comm, "a b)");
	assert_int_equal(proc_stat_parse_comm("1 )x( S", 7, comm), -EINVAL);
	assert_int_equal(proc_stat_parse_comm("no paren", 8, comm), -EINVAL);
	assert_int_equal(proc_stat_parse_comm("1 (open", 7, comm), -EINVAL);
}

static void cgroup_container_ids(void **state)
{
	char id[CONTAINER_ID_LEN + 1];
	const char *want = "0123456789abcdef0123456789abcdef0123456789abcdef012"
			   "3456789abcdef";
	const char *cases[] = {
		"0::/system.slice/"
		"docker-"
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd"
		"ef.scope\n",
		"12:pids:/docker/"
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd"
		"ef\n",
		"0::/kubepods.slice/kubepods-burstable.slice/"
		"kubepods-burstable-pod1.slice/"
		"cri-containerd-"
		"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcd"
		"ef.scope\n",
		"0::/kubepods/besteffort/pod5f3c/"
		"crio-"
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd"
		"ef\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(proc_cgroup_parse_container_id(
					 cases[i], strlen(cases[i]), id),
				 0);
		assert_string_equal(id, want);
	}
	assert_int_equal(proc_cgroup_parse_container_id("0::/\n", 5, id),
			 -ENOENT);
	/* 32 hex digits (a systemd id) and 65 hex digits are not ids. */
	assert_int_equal(proc_cgroup_parse_container_id(
				 "4:memory:/process_api/"
				 "fa3b1f56935d0539b75e957254a46cc9",
				 54, id),
			 -ENOENT);
	{
		char long_id[80];

		memset(long_id, 'a', 65);
		long_id[65] = '\0';
		assert_int_equal(
			proc_cgroup_parse_container_id(long_id, 65, id),
			-ENOENT);
	}
}

static void read_file_is_bounded(void **state)
{
	char *text;
	long n;

	(void)state;
	n = proc_read_file("/proc/self/maps", &text, PROC_MAPS_MAX_BYTES);
	assert_true(n > 0);
	assert_int_equal(strlen(text), (size_t)n);
	free(text);
	/* A 16-byte limit on a longer file is an error, not a truncation. */
	assert_int_equal(proc_read_file("/proc/self/maps", &text, 16), -EFBIG);
	assert_int_equal(proc_read_file("/nonexistent", &text, 16), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(maps_keeps_executable_mappings),
		cmocka_unit_test(maps_skips_and_counts_malformed_lines),
		cmocka_unit_test(maps_empty_and_binary_input),
		cmocka_unit_test(maps_find_otel_ctx_mapping),
		cmocka_unit_test(stat_starttime_with_hostile_comm),
		cmocka_unit_test(stat_comm_with_hostile_comm),
		cmocka_unit_test(cgroup_container_ids),
		cmocka_unit_test(read_file_is_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
