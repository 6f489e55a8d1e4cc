// SPDX-License-Identifier: Apache-2.0
/*
 * One table of lines instead of one printf block per subject: a line is
 * its text, with `%v` where a value goes, and the counters behind each
 * value (a sum of up to four, optionally divided, e.g. bytes to KiB).
 */
#include "stats_summary.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SUMMARY_MAX_VALUES 14

struct summary_value {
	size_t off[4]; /* into struct otelprof_stats, summed */
	unsigned n;
	uint64_t div; /* 0 or 1: as is */
};

struct summary_line {
	bool always;
	const char *text;
	struct summary_value v[SUMMARY_MAX_VALUES];
};

#define F(x) offsetof(struct otelprof_stats, x)
#define V(x)                                                                   \
	{                                                                      \
		{F(x)}, 1, 1                                                   \
	}
#define DIV(x, d)                                                              \
	{                                                                      \
		{F(x)}, 1, d                                                   \
	}
#define SUM4(a, b, c, d)                                                       \
	{                                                                      \
		{F(a), F(b), F(c), F(d)}, 4, 1                                 \
	}

static const struct summary_line lines[] = {
	{true,
	 "user stacks: %v complete, %v truncated, %v stopped (rule %v, read "
	 "%v, loop %v, unknown code %v), %v unwound from stack copies, %v cut "
	 "at a table still loading; tables: %v files, %v rows, %v KiB in the "
	 "kernel, built in %v ms; %v files with unusable CFI",
	 {V(unwind_complete), V(unwind_truncated),
	  SUM4(unwind_err_rule, unwind_err_read, unwind_err_loop,
	       unwind_no_mapping),
	  V(unwind_err_rule), V(unwind_err_read), V(unwind_err_loop),
	  V(unwind_no_mapping), V(stack_copies), V(unwind_pending),
	  V(unwind_files), V(unwind_rows), DIV(unwind_map_bytes, 1024),
	  DIV(unwind_build_ns, 1000000), V(unwind_table_errors)}},
	{false,
	 "stacks not read: %v kernel stacks, %v user stacks (user registers "
	 "or the whole stack copy unreadable)",
	 {V(kernel_stack_errors), V(user_stack_errors)}},
	{false,
	 "unwind losses: %v processes not written to the kernel (frame "
	 "pointers only), %v CFI rows the kernel cannot follow, %v processes "
	 "with extra mappings refused",
	 {V(unwind_procs_errors), V(unwind_rows_unrepresentable),
	  V(unwind_big_refused)}},
	{false,
	 "fair shares: %v unwind tables refused for their process's share, "
	 "%v for the host's (frame pointers instead); %v rescans and %v file "
	 "reads put off",
	 {V(unwind_refused_process), V(unwind_refused_host), V(rescans_held),
	  V(file_loads_retried)}},
	{false,
	 "%v samples, links or context attributes could not be added to the "
	 "profile (out of memory or a table full)",
	 {V(add_errors)}},
	{false,
	 "%v ring buffer records skipped: sizes or counts that do not hold "
	 "together (library and BPF program of different versions?)",
	 {V(events_malformed)}},
	{false,
	 "hostile input: %v mapped files refused (not regular files), %v "
	 "over the per-file budget (symbols), %v (unwind tables), %v evicted "
	 "for the total budget (%v read again)",
	 {V(files_refused), V(files_over_budget), V(unwind_over_budget),
	  V(budget_evictions), V(budget_reloads)}},
	{false,
	 "debuginfod: %v build ids asked, %v debug files taken, %v failed, %v "
	 "refused",
	 {V(debuginfod_lookups), V(debuginfod_hits), V(debuginfod_failures),
	  V(debuginfod_refused)}},
	{false,
	 "trace context: %v samples linked, %v unreadable; %v TLS variables "
	 "located; %v process contexts read, %v malformed; %v attributes "
	 "dropped",
	 {V(ctx_samples), V(ctx_read_errors), V(ctx_tls_resolved),
	  V(ctx_process_reads), V(ctx_process_errors), V(ctx_attrs_dropped)}},
	{false,
	 "Elastic APM: %v agent sockets registered with, %v refused; %v "
	 "stack-trace correlations sent, %v dropped",
	 {V(apm_channels), V(apm_sockets_refused), V(apm_messages_sent),
	  V(apm_messages_dropped)}},
	{false,
	 "runtimes: %v Python or Java processes (%v with their own offsets, "
	 "%v unknown versions), %v samples with Python or Java frames, %v "
	 "unreadable frames, %v unreadable code objects or methods; %v JIT "
	 "frames named, %v bad JIT map entries, %v JIT files refused, %v JIT "
	 "entries over the memory budget",
	 {V(interp_processes), V(interp_debug_offsets),
	  V(interp_unknown_versions), V(interp_samples), V(interp_frame_errors),
	  V(interp_code_errors), V(jit_frames), V(jit_bad_entries),
	  V(jit_files_refused), V(jit_over_budget)}},
};

static uint64_t value_of(const struct otelprof_stats *st,
			 const struct summary_value *v)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < v->n; i++) {
		uint64_t x;

		memcpy(&x, (const char *)st + v->off[i], sizeof(x));
		sum += x;
	}
	return v->div > 1 ? sum / v->div : sum;
}

static unsigned count_values(const struct summary_line *l)
{
	unsigned n = 0;

	while (n < SUMMARY_MAX_VALUES && l->v[n].n)
		n++;
	return n;
}

/* The text with each %v replaced by the next of vals. */
static void put_line(FILE *out, const char *text, const uint64_t *vals,
		     unsigned nvals)
{
	unsigned k = 0;

	for (const char *c = text; *c; c++) {
		if (c[0] == '%' && c[1] == 'v' && k < nvals) {
			fprintf(out, "%llu", (unsigned long long)vals[k++]);
			c++;
		} else {
			fputc(*c, out);
		}
	}
}

void stats_summary_print(FILE *out, const struct otelprof_stats *st)
{
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		const struct summary_line *l = &lines[i];
		uint64_t vals[SUMMARY_MAX_VALUES];
		unsigned n = count_values(l);
		bool any = l->always;

		for (unsigned k = 0; k < n; k++)
			any |= (vals[k] = value_of(st, &l->v[k])) != 0;
		if (!any)
			continue;
		fputs("otelprof: ", out);
		put_line(out, l->text, vals, n);
		fputc('\n', out);
	}
}
