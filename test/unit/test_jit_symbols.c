// SPDX-License-Identifier: Apache-2.0
/* JIT symbol files: perf map and jitdump parsers, V8 names, and reading a
 * process's files safely (fake /proc tree). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/jit_process.h"
#include "symbolize/jit_symbols.h"

static const char *name_at(struct jit_symbols *s, uint64_t pc)
{
	const struct jit_sym *e = jit_symbols_lookup(s, pc);

	return e ? jit_symbols_name(s, e) : NULL;
}

static void perf_map_lines(void **state)
{
	static const char text[] = "1000 100 first\n"
				   "0x2000 0x10 with spaces in name\r\n"
				   "\n"
				   "zz 10 bad\n"
				   "3000 0 empty size\n"
				   "4000 10\n"
				   "ffffffffffffffff 10 overflow\n"
				   "1080 10 newer inside first\n"
				   "5000 10 partial";
	struct jit_symbols s;
	size_t used;

	(void)state;
	jit_symbols_init(&s, 1 << 20);
	used = perf_map_feed(&s, text, sizeof(text) - 1, false);
	/* the last line has no newline yet: left for later */
	assert_int_equal(used, sizeof(text) - 1 - strlen("5000 10 partial"));
	assert_int_equal(s.n, 3);
	assert_int_equal(s.bad, 4);
	assert_string_equal(name_at(&s, 0x1000), "first");
	assert_string_equal(name_at(&s, 0x10ff), "first");
	assert_string_equal(name_at(&s, 0x1085), "newer inside first");
	assert_null(name_at(&s, 0x1100));
	assert_string_equal(name_at(&s, 0x200f), "with spaces in name");
	assert_null(name_at(&s, 0x5000));
	used = perf_map_feed(&s, "5000 10 partial\n", 16, false);
	assert_int_equal(used, 16);
	assert_string_equal(name_at(&s, 0x5001), "partial");
	/* a re-mapped address: the newest entry wins */
	perf_map_feed(&s, "1000 100 second\n", 16, false);
	assert_string_equal(name_at(&s, 0x1000), "second");
	jit_symbols_free(&s);
}

static void perf_map_long_line_and_budget(void **state)
{
	size_t n = JIT_NAME_MAX * 3;
	char *big = malloc(n);
	struct jit_symbols s;
	char line[64];

	(void)state;
	memset(big, 'x', n);
	jit_symbols_init(&s, 64 << 10);
	/* a line without end, fed in pieces, is skipped to its newline */
	assert_int_equal(perf_map_feed(&s, big, n, false), n);
	assert_int_equal(perf_map_feed(&s, big, n, false), n);
	assert_int_equal(perf_map_feed(&s, "x\n1 1 a\n", 8, false), 8);
	assert_int_equal(s.n, 1);
	assert_string_equal(name_at(&s, 1), "a");
	/* the budget caps what is kept, however much comes */
	for (int i = 0; i < 100000; i++) {
		int l = snprintf(line, sizeof(line), "%x 1 name%d\n",
				 0x100000 + i, i);
		perf_map_feed(&s, line, (size_t)l, false);
	}
	assert_true(jit_symbols_memory(&s) <= 64 << 10);
	assert_true(s.over_budget > 0);
	jit_symbols_free(&s);
	free(big);
	/* the global budget for file-derived data caps it too, and gets
	 * back what was charged */
	{
		struct mem_budget b;
		struct mem_account a;

		mem_budget_init(&b, 40 << 10, 40 << 10);
		mem_account_init(&a, &b);
		jit_symbols_init(&s, 1 << 20);
		s.account = &a;
		for (int i = 0; i < 100000; i++) {
			int l = snprintf(line, sizeof(line), "%x 1 name%d\n",
					 0x100000 + i, i);
			perf_map_feed(&s, line, (size_t)l, false);
		}
		assert_true(s.over_budget > 0);
		assert_true(mem_budget_used(&b) <= 40 << 10);
		assert_int_equal(mem_budget_used(&b), jit_symbols_memory(&s));
		jit_symbols_free(&s);
		assert_int_equal(mem_budget_used(&b), 0);
	}
}

/* jitdump records, little-endian as written on x86_64 */
static size_t put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return 4;
}

static size_t put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
	return 8;
}

static size_t header(uint8_t *p)
{
	memset(p, 0, 40);
	put32(p, JITDUMP_MAGIC);
	put32(p + 4, 1);
	put32(p + 8, 40);
	put32(p + 12, 62);
	return 40;
}

static size_t load(uint8_t *p, uint64_t addr, uint64_t size, const char *name,
		   size_t code_bytes)
{
	size_t nl = strlen(name) + 1, total = 56 + nl + code_bytes;

	put32(p, 0);
	put32(p + 4, (uint32_t)total);
	put64(p + 8, 0);
	put32(p + 16, 1);
	put32(p + 20, 1);
	put64(p + 24, addr);
	put64(p + 32, addr);
	put64(p + 40, size);
	put64(p + 48, 0);
	memcpy(p + 56, name, nl);
	memset(p + 56 + nl, 0xcc, code_bytes);
	return total;
}

static size_t move(uint8_t *p, uint64_t from, uint64_t to, uint64_t size)
{
	put32(p, 1);
	put32(p + 4, 64);
	put64(p + 8, 0);
	put32(p + 16, 1);
	put32(p + 20, 1);
	put64(p + 24, to);
	put64(p + 32, from);
	put64(p + 40, to);
	put64(p + 48, size);
	put64(p + 56, 0);
	return 64;
}

static void jitdump_records(void **state)
{
	uint8_t buf[4096];
	struct jit_symbols s;
	size_t n = 0, used, l2;

	(void)state;
	jit_symbols_init(&s, 1 << 20);
	n += header(buf);
	n += load(buf + n, 0x1000, 0x40, "JS:*a /x.js:1:1", 16);
	l2 = load(buf + n, 0x2000, 0x40, "b", 1000);
	/* the second load arrives without its code: name taken, rest
	 * skipped as it comes */
	used = jitdump_feed(&s, buf, n + 70);
	assert_int_equal(used, n + 70);
	assert_int_equal(s.n, 2);
	assert_string_equal(name_at(&s, 0x2010), "b");
	n += l2;
	assert_int_equal(jitdump_feed(&s, buf + used, n - used), n - used);
	n = move(buf, 0x1000, 0x3000, 0x40);
	/* a record cut short waits for the rest */
	assert_int_equal(jitdump_feed(&s, buf, 20), 0);
	assert_int_equal(jitdump_feed(&s, buf, n), n);
	assert_string_equal(name_at(&s, 0x3008), "JS:*a /x.js:1:1");
	assert_int_equal(s.bad, 0);
	/* a record size below its header breaks the stream for good */
	memset(buf, 0, 16);
	assert_int_equal(jitdump_feed(&s, buf, 16), 16);
	assert_true(s.broken);
	assert_int_equal(jitdump_feed(&s, buf, 16), 16);
	jit_symbols_free(&s);

	jit_symbols_init(&s, 1 << 20);
	header(buf);
	put32(buf, 0x12345678);
	jitdump_feed(&s, buf, 40);
	assert_true(s.broken);
	assert_int_equal(s.n, 0);
	jit_symbols_free(&s);
}

static void v8_names(void **state)
{
	char buf[JIT_NAME_MAX + 1];
	struct jit_frame_name f;

	(void)state;
	jit_name_split("JS:*hot_a /tmp/a b/x.js:12:15", buf, &f);
	assert_true(f.v8js);
	assert_string_equal(f.function, "hot_a");
	assert_string_equal(f.file, "/tmp/a b/x.js");
	assert_int_equal(f.line, 12);
	jit_name_split("LazyCompile:~run node:internal/main:3", buf, &f);
	assert_true(f.v8js);
	assert_string_equal(f.function, "run");
	assert_string_equal(f.file, "node:internal/main");
	assert_int_equal(f.line, 3);
	jit_name_split("JS:^ /x.js:1:1", buf, &f);
	assert_string_equal(f.function, "(anonymous)");
	jit_name_split("JS:~", buf, &f);
	assert_true(f.v8js);
	assert_string_equal(f.function, "");
	assert_null(f.file);
	jit_name_split("py::hot_a:/x.py", buf, &f);
	assert_false(f.v8js);
	assert_string_equal(f.function, "py::hot_a:/x.py");
	assert_null(f.file);
}

static void nspid(void **state)
{
	static const char s1[] = "Name:\tx\nNSpid:\t4242\t17\t1\nTgid:\t1\n";
	static const char s2[] = "Name:\tx\nNSpid:\t99\n";
	static const char s3[] = "NSpid:\t12x\n";

	(void)state;
	assert_int_equal(proc_status_parse_nspid(s1, sizeof(s1) - 1), 1);
	assert_int_equal(proc_status_parse_nspid(s2, sizeof(s2) - 1), 99);
	assert_int_equal(proc_status_parse_nspid(s3, sizeof(s3) - 1), 0);
	assert_int_equal(proc_status_parse_nspid("Name:\n", 6), 0);
}

static char root[256];

static void write_file(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void mk(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

/* A fake /proc: pid 7 is pid 3 in its namespace; its root has tmp/. */
static void process_files(void **state)
{
	struct jit_process *j = NULL;
	struct jit_stats st = {0};
	char path[512];
	const char *n;

	(void)state;
	snprintf(root, sizeof(root), "/tmp/otelprof-jit-XXXXXX");
	assert_non_null(mkdtemp(root));
	mk("7");
	mk("7/root");
	mk("7/root/tmp");
	write_file("7/status", "Name:\tnode\nNSpid:\t7\t3\n");
	write_file("7/root/tmp/perf-3.map", "1000 10 JS:*f /a.js:1:1\n");
	n = jit_process_lookup(&j, root, 7, NULL, 0x1004, 1, NULL, &st);
	assert_non_null(n);
	assert_string_equal(n, "JS:*f /a.js:1:1");
	assert_int_equal(j->nspid, 3);
	/* a miss looks again only after JIT_REFRESH_NS */
	write_file("7/root/tmp/perf-3.map",
		   "1000 10 JS:*f /a.js:1:1\n2000 10 g\n");
	assert_null(
		jit_process_lookup(&j, root, 7, NULL, 0x2004, 2, NULL, &st));
	n = jit_process_lookup(&j, root, 7, NULL, 0x2004, 2 + JIT_REFRESH_NS,
			       NULL, &st);
	assert_non_null(n);
	assert_string_equal(n, "g");
	/* replaced by a FIFO: refused without blocking, names kept */
	snprintf(path, sizeof(path), "%s/7/root/tmp/perf-3.map", root);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_null(jit_process_lookup(&j, root, 7, NULL, 0x9000,
				       10 * JIT_REFRESH_NS, NULL, &st));
	assert_int_equal(st.refused, 1);
	/* a symlink out of the root is not followed */
	assert_int_equal(unlink(path), 0);
	write_file("secret", "9000 10 leaked\n");
	snprintf(path, sizeof(path), "%s/7/root/tmp/perf-3.map", root);
	{
		char target[512];

		snprintf(target, sizeof(target), "%s/secret", root);
		assert_int_equal(symlink(target, path), 0);
	}
	assert_null(jit_process_lookup(&j, root, 7, NULL, 0x9004,
				       20 * JIT_REFRESH_NS, NULL, &st));
	assert_int_equal(st.refused, 2);
	assert_true(jit_process_memory(j) > 0);
	jit_process_free(j);
	snprintf(path, sizeof(path), "rm -rf '%s'", root);
	assert_int_equal(system(path), 0);
}

/* Entries past the memory budget are dropped and counted for the stats
 * (jit_over_budget), and what was kept goes back to the budget. */
static void process_over_budget(void **state)
{
	struct jit_process *j = NULL;
	struct jit_stats st = {0};
	struct mem_budget b;
	size_t cap = 4000 * 32, len = 0;
	char *text = malloc(cap), cmd[512];

	(void)state;
	assert_non_null(text);
	for (int i = 0; i < 4000; i++)
		len += (size_t)snprintf(text + len, cap - len, "%x 10 name%d\n",
					0x100000 + 16 * i, i);
	snprintf(root, sizeof(root), "/tmp/otelprof-jit-XXXXXX");
	assert_non_null(mkdtemp(root));
	mk("8");
	mk("8/root");
	mk("8/root/tmp");
	write_file("8/status", "Name:\tnode\nNSpid:\t8\n");
	write_file("8/root/tmp/perf-8.map", text);
	free(text);
	mem_budget_init(&b, 64 << 10, 64 << 10);
	assert_non_null(
		jit_process_lookup(&j, root, 8, NULL, 0x100004, 1, &b, &st));
	assert_true(st.over_budget > 0);
	assert_int_equal(st.bad_entries, 0);
	assert_true(mem_budget_used(&b) <= 64 << 10);
	jit_process_free(j);
	assert_int_equal(mem_budget_used(&b), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(perf_map_lines),
		cmocka_unit_test(perf_map_long_line_and_budget),
		cmocka_unit_test(jitdump_records),
		cmocka_unit_test(v8_names),
		cmocka_unit_test(nspid),
		cmocka_unit_test(process_files),
		cmocka_unit_test(process_over_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
