// SPDX-License-Identifier: Apache-2.0
/*
 * The summary `otelprof record` prints (cli/stats_summary.c), driven by
 * lib/agent/stats_fields.def. The expected texts are what the hand-written
 * table printed before the list existed, for the same counters (and the
 * runtime programs' figures appended to the runtimes line since): the
 * list must not change a character of it (integration tests parse these
 * lines).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/stats_summary.h"

static char *summary_of(const struct otelprof_stats *st)
{
	FILE *f = tmpfile();
	char *buf;
	long len;

	assert_non_null(f);
	stats_summary_print(f, st);
	len = ftell(f);
	assert_true(len >= 0);
	rewind(f);
	buf = calloc(1, (size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	return buf;
}

/* Every counter distinct: the field at index i (after sz) is
 * (i + 1) * 1000003, so a value in the wrong place shows. */
static void fill_distinct(struct otelprof_stats *st)
{
	size_t n = (sizeof(*st) - sizeof(size_t)) / sizeof(uint64_t);

	memset(st, 0, sizeof(*st));
	st->sz = sizeof(*st);
	for (size_t i = 0; i < n; i++) {
		uint64_t v = (i + 1) * 1000003u;

		memcpy((char *)st + sizeof(size_t) + i * sizeof(v), &v,
		       sizeof(v));
	}
}

static void every_line_as_before(void **state)
{
	struct otelprof_stats st;
	char *got;

	(void)state;
	fill_distinct(&st);
	got = summary_of(&st);
	assert_string_equal(
		got,
		"otelprof: user stacks: 14000042 complete, 15000045 truncated, "
		"70000210 stopped (rule 16000048, read 17000051, loop "
		"18000054, unknown code 19000057), 20000060 unwound from "
		"stack copies, 26000078 cut at a table still loading; tables: "
		"21000063 files, 22000066 rows, 22461 KiB in the kernel, built "
		"in 25 ms; 24000072 files with unusable CFI\n"
		"otelprof: stacks not read: 5000015 kernel stacks, 6000018 "
		"user stacks (user registers or the whole stack copy "
		"unreadable)\n"
		"otelprof: unwind losses: 66000198 processes not written to "
		"the kernel (frame pointers only), 67000201 CFI rows the "
		"kernel cannot follow, 68000204 processes with extra mappings "
		"refused\n"
		"otelprof: fair shares: 56000168 unwind tables refused for "
		"their process's share, 57000171 for the host's (frame "
		"pointers instead); 38000114 rescans and 69000207 file reads "
		"put off\n"
		"otelprof: 62000186 samples, links or context attributes "
		"could not be added to the profile (out of memory or a table "
		"full)\n"
		"otelprof: 79000237 ring buffer records skipped: sizes or "
		"counts that do not hold together (library and BPF program of "
		"different versions?)\n"
		"otelprof: hostile input: 50000150 mapped files refused (not "
		"regular files), 51000153 over the per-file budget (symbols), "
		"63000189 (unwind tables), 52000156 evicted for the total "
		"budget (64000192 read again)\n"
		"otelprof: include_env_vars: 90000270 environments not read "
		"(over 64 KiB or not NUL-terminated), 91000273 values dropped "
		"(over 256 bytes or not printable UTF-8)\n"
		"otelprof: debuginfod: 74000222 build ids asked, 75000225 "
		"debug files taken, 76000228 failed, 77000231 refused\n"
		"otelprof: trace context: 27000081 samples linked, 28000084 "
		"unreadable; 29000087 TLS variables located; 30000090 process "
		"contexts read, 31000093 malformed; 32000096 attributes "
		"dropped\n"
		"otelprof: Elastic APM: 70000210 agent sockets registered "
		"with, 73000219 refused; 71000213 stack-trace correlations "
		"sent, 72000216 dropped\n"
		"otelprof: runtimes: 41000123 processes of a runtime "
		"(42000126 with their own offsets, 43000129 unknown versions), "
		"44000132 samples with runtime frames, 45000135 "
		"unreadable frames, 46000138 unreadable code objects or "
		"methods; 47000141 JIT frames named, 48000144 bad JIT map "
		"entries, 49000147 JIT files refused, 78000234 JIT entries "
		"over the memory budget; 80000240 walk programs loaded "
		"(81000243 refused, 82000246 processes waited for one), "
		"83000249 walks handed over, 84000252 cut at the tail-call "
		"limit\n"
		"otelprof: identical files: 100000300 kept once under another "
		"identity; 101000303 candidates differed, 102000306 could not "
		"be compared\n"
		"otelprof: off-CPU: 92000276 program attached, 93000279 "
		"switch-outs recorded, 94000282 events in the profile; lost: "
		"95000285 (pending map full), 96000288 (ring buffer full), "
		"97000291 unmatched, 98000294 not kept, 99000297 intervals "
		"not attached\n");
	free(got);
}

/* All zero: the user-stack line only (it is always printed). */
static void zero_prints_user_stacks_only(void **state)
{
	struct otelprof_stats st;
	char *got;

	(void)state;
	memset(&st, 0, sizeof(st));
	st.sz = sizeof(st);
	got = summary_of(&st);
	assert_string_equal(
		got, "otelprof: user stacks: 0 complete, 0 truncated, 0 "
		     "stopped (rule 0, read 0, loop 0, unknown code 0), 0 "
		     "unwound from stack copies, 0 cut at a table still "
		     "loading; tables: 0 files, 0 rows, 0 KiB in the kernel, "
		     "built in 0 ms; 0 files with unusable CFI\n");
	free(got);
}

/* One counter set: its own line appears (and is whole), no other. */
static void one_counter_one_line(void **state)
{
	struct otelprof_stats st;
	char *got;

	(void)state;
	memset(&st, 0, sizeof(st));
	st.sz = sizeof(st);
	st.apm_sockets_refused = 3;
	got = summary_of(&st);
	assert_non_null(strstr(got, "\notelprof: Elastic APM: 0 agent "
				    "sockets registered with, 3 refused; 0 "
				    "stack-trace correlations sent, 0 "
				    "dropped\n"));
	assert_int_equal(strlen(strstr(got, "\n") + 1),
			 strlen("otelprof: Elastic APM: 0 agent sockets "
				"registered with, 3 refused; 0 stack-trace "
				"correlations sent, 0 dropped\n"));
	free(got);
	/* A counter that no line names prints nothing beyond the
	 * user-stack line. */
	memset(&st, 0, sizeof(st));
	st.samples_received = 5;
	got = summary_of(&st);
	assert_null(strstr(strstr(got, "\n") + 1, "otelprof:"));
	free(got);
}

/* Quotients round down: 2047 bytes are 1 KiB, 1999999 ns 1 ms. */
static void quotients_round_down(void **state)
{
	struct otelprof_stats st;
	char *got;

	(void)state;
	memset(&st, 0, sizeof(st));
	st.unwind_map_bytes = 2047;
	st.unwind_build_ns = 1999999;
	got = summary_of(&st);
	assert_non_null(strstr(got, " 1 KiB in the kernel, built in 1 ms;"));
	free(got);
}

/* The list itself: each line's placeholders are exactly the fields that
 * name that line, so a counter given a line is printed by it, and a line
 * prints no field that was not given to it. */
static const struct {
	const char *name, *line;
} fields[] = {
#define STATS_FIELD(name, type, unit, desc, source, line, metric)              \
	{#name, #line},
#include "agent/stats_fields.def"
};
static const struct {
	const char *id, *text;
} lines[] = {
#define STATS_LINE(id, always, text) {#id, text},
#include "agent/stats_fields.def"
};

static const char *line_of(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (strlen(fields[i].name) == len &&
		    !memcmp(fields[i].name, name, len))
			return fields[i].line;
	return NULL;
}

static bool line_names(const char *text, const char *name)
{
	size_t len = strlen(name);

	for (const char *c = text; (c = strstr(c, name)); c += len)
		if (strchr("{+", c[-1]) && strchr("}+/", c[len]))
			return true;
	return false;
}

static void lines_name_their_fields(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		const char *t = lines[i].text;

		for (const char *o = strchr(t, '{'); o;
		     o = strchr(o + 1, '{')) {
			const char *end = strchr(o, '}');

			assert_non_null(end);
			for (const char *p = o + 1; p < end;) {
				size_t n = strcspn(p, "+/}");
				const char *line = line_of(p, n);

				if (!line || strcmp(line, lines[i].id))
					fail_msg("line %s names %.*s, not a "
						 "field of that line",
						 lines[i].id, (int)n, p);
				p += n;
				if (*p == '/')
					break;
				if (*p == '+')
					p++;
			}
		}
	}
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		size_t k;

		if (!strcmp(fields[i].line, "NONE"))
			continue;
		for (k = 0; k < sizeof(lines) / sizeof(lines[0]); k++)
			if (!strcmp(lines[k].id, fields[i].line))
				break;
		if (k == sizeof(lines) / sizeof(lines[0]))
			fail_msg("%s: no line %s", fields[i].name,
				 fields[i].line);
		if (!line_names(lines[k].text, fields[i].name))
			fail_msg("%s: line %s does not print it",
				 fields[i].name, fields[i].line);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_line_as_before),
		cmocka_unit_test(zero_prints_user_stacks_only),
		cmocka_unit_test(one_counter_one_line),
		cmocka_unit_test(quotients_round_down),
		cmocka_unit_test(lines_name_their_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
