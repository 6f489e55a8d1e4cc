// SPDX-License-Identifier: Apache-2.0
/* otelprof: local recording and quick inspection through libotelprofiler. */
#include "cli.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "otelprofiler.h"
#include "report_cost.h"
#include "usage.h"

/* o is the short or the long spelling of an option. */
static bool opt_is(const char *o, const char *short_opt, const char *long_opt)
{
	return (short_opt && !strcmp(o, short_opt)) || !strcmp(o, long_opt);
}

static bool is_help(const char *o)
{
	return opt_is(o, "-h", "--help");
}

static int parse_double(const char *s, double max, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= 0) || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int bad(const char *opt, const char *val)
{
	fprintf(stderr, "otelprof: invalid value for %s: '%s'\n", opt,
		val ? val : "");
	return 2;
}

/* libbpf's messages go through its process-wide print callback, which
 * only the program may set: the library leaves it alone. The CLI reports
 * one line per error (the library's message, verifier verdict included)
 * and shows libbpf's own lines only when debugging. */
static int libbpf_quiet(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

static int main_record(int argc, char **argv)
{
	/* duration 0: until Ctrl-C or SIGTERM, as perf record */
	struct record_args a = {.frequency = OTELPROF_DEFAULT_FREQUENCY_HZ};
	unsigned long v;

	if (!getenv("OTELPROF_DEBUG"))
		libbpf_set_print(libbpf_quiet);

	for (int i = 0; i < argc; i++) {
		const char *o = argv[i],
			   *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (is_help(o)) {
			usage_command(stdout, "record");
			return 0;
		}
		if (!strcmp(o, "--quiet")) {
			a.quiet = true;
			continue;
		}
		if (!strcmp(o, "--apm-agents")) {
			a.apm_agents = true;
			continue;
		}
		if (opt_is(o, "-a", "--all-cpus"))
			continue; /* the default: perf's spelling accepted */
		/* Off unless asked: the servers given, or those of
		 * $DEBUGINFOD_URLS. */
		if (!strcmp(o, "--debuginfod")) {
			a.debuginfod = getenv("DEBUGINFOD_URLS");
			if (!a.debuginfod || !*a.debuginfod) {
				fprintf(stderr,
					"otelprof: --debuginfod needs servers: "
					"--debuginfod=URLS or "
					"$DEBUGINFOD_URLS\n");
				return 2;
			}
			continue;
		}
		if (!strncmp(o, "--debuginfod=", 13)) {
			a.debuginfod = o + 13;
			if (!*a.debuginfod)
				return bad("--debuginfod", a.debuginfod);
			continue;
		}
		if (!val) {
			fprintf(stderr, "otelprof: %s needs a value\n", o);
			return 2;
		}
		if (opt_is(o, "-d", "--duration")) {
			if (parse_uint(val, 86400 * 365, &v) || !v)
				return bad(o, val);
			a.duration = (unsigned)v;
		} else if (opt_is(o, "-F", "--frequency")) {
			if (parse_uint(val, 10000, &v) || !v)
				return bad(o, val);
			a.frequency = (unsigned)v;
		} else if (opt_is(o, "-p", "--pid")) {
			if (parse_uint(val, INT_MAX, &v) || !v)
				return bad(o, val);
			a.pid = (int)v;
		} else if (!strcmp(o, "--ringbuf-kb")) {
			if (parse_uint(val, 1u << 20, &v) || !v)
				return bad(o, val);
			a.ringbuf_kb = (unsigned)v;
		} else if (!strcmp(o, "--symbol-budget-mb")) {
			if (parse_uint(val, 1u << 20, &v) || !v)
				return bad(o, val);
			a.symbol_budget_mb = (unsigned)v;
		} else if (!strcmp(o, "--file-budget-mb")) {
			if (parse_uint(val, 1u << 20, &v) || !v)
				return bad(o, val);
			a.file_budget_mb = (unsigned)v;
		} else if (!strcmp(o, "--probabilistic-threshold")) {
			if (parse_uint(val, 100, &v) || !v)
				return bad(o, val);
			a.prob_threshold = (unsigned)v;
		} else if (!strcmp(o, "--probabilistic-interval")) {
			if (parse_uint(val, 300, &v) || !v)
				return bad(o, val);
			a.prob_interval_s = (unsigned)v;
		} else if (!strcmp(o, "--env-vars")) {
			a.env_vars = val;
		} else if (opt_is(o, "-o", "--output")) {
			a.output = val;
		} else if (!strcmp(o, "--report")) {
			a.report = val;
		} else if (!strcmp(o, "--btf")) {
			a.btf = val;
		} else if (!strcmp(o, "--off-cpu-threshold")) {
			char *end;

			/* A probability: NaN and out of range are refused. */
			a.off_cpu = strtod(val, &end);
			if (end == val || *end ||
			    !(a.off_cpu >= 0.0 && a.off_cpu <= 1.0))
				return bad(o, val);
		} else {
			fprintf(stderr, "otelprof: unknown option %s\n", o);
			usage_command(stderr, "record");
			return 2;
		}
		i++;
	}
	if (!a.output) {
		fprintf(stderr, "otelprof: record needs --output FILE\n");
		return 2;
	}
	return cmd_record(&a);
}

static int main_top(int argc, char **argv)
{
	struct top_args a = {.limit = 20};
	unsigned long v;

	for (int i = 0; i < argc; i++) {
		const char *o = argv[i],
			   *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (o[0] != '-') {
			a.input = o;
			continue;
		}
		if (is_help(o)) {
			usage_command(stdout, "top");
			return 0;
		}
		if (!val) {
			fprintf(stderr, "otelprof: %s needs a value\n", o);
			return 2;
		}
		if (opt_is(o, "-n", "--limit")) {
			if (parse_uint(val, 100000, &v) || !v)
				return bad(o, val);
			a.limit = (unsigned)v;
		} else if (opt_is(o, "-p", "--pid")) {
			if (parse_uint(val, INT_MAX, &v))
				return bad(o, val);
			a.pid = (int)v;
		} else {
			fprintf(stderr, "otelprof: unknown option %s\n", o);
			return 2;
		}
		i++;
	}
	if (!a.input) {
		fprintf(stderr, "otelprof: top needs a FILE\n");
		return 2;
	}
	return cmd_top(&a);
}

static int main_convert(int argc, char **argv)
{
	struct convert_args a = {.format = -1};
	unsigned long v;

	for (int i = 0; i < argc; i++) {
		const char *o = argv[i],
			   *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (o[0] != '-') {
			a.input = o;
			continue;
		}
		if (is_help(o)) {
			usage_command(stdout, "convert");
			return 0;
		}
		if (!val) {
			fprintf(stderr, "otelprof: %s needs a value\n", o);
			return 2;
		}
		if (opt_is(o, "-f", "--format")) {
			if (!strcmp(val, "pprof"))
				a.format = CONVERT_PPROF;
			else if (!strcmp(val, "folded"))
				a.format = CONVERT_FOLDED;
			else if (!strcmp(val, "otlp-json"))
				a.format = CONVERT_OTLP_JSON;
			else
				return bad(o, val);
		} else if (opt_is(o, "-o", "--output")) {
			a.output = val;
		} else if (opt_is(o, "-p", "--pid")) {
			if (parse_uint(val, INT_MAX, &v))
				return bad(o, val);
			a.pid = (int)v;
		} else {
			fprintf(stderr, "otelprof: unknown option %s\n", o);
			return 2;
		}
		i++;
	}
	if (!a.input || a.format < 0) {
		fprintf(stderr, "otelprof: convert needs a FILE and --format "
				"pprof|folded|otlp-json\n");
		return 2;
	}
	return cmd_convert(&a);
}

static int main_report(int argc, char **argv)
{
	struct report_args a = {
		.watts_per_core = REPORT_DEFAULT_WATTS_PER_CORE,
		.pue = REPORT_DEFAULT_PUE,
		.co2_kg_per_kwh = REPORT_DEFAULT_CO2_KG_PER_KWH,
		.cost_per_core_hour = REPORT_DEFAULT_COST_PER_CORE_HOUR,
	};
	const char **inputs = calloc((size_t)argc + 1, sizeof(*inputs));
	unsigned long v;
	int e;

	if (!inputs)
		return 1;
	a.inputs = inputs;
	for (int i = 0; i < argc; i++) {
		const char *o = argv[i],
			   *val = i + 1 < argc ? argv[i + 1] : NULL;
		double *coef = NULL;

		if (o[0] != '-' || !strcmp(o, "-")) {
			inputs[a.ninputs++] = o;
			continue;
		}
		if (is_help(o)) {
			usage_command(stdout, "report");
			free(inputs);
			return 0;
		}
		if (!strcmp(o, "--diff")) {
			a.diff = true;
			continue;
		}
		if (!strcmp(o, "--quiet")) {
			a.quiet = true;
			continue;
		}
		if (!val) {
			fprintf(stderr, "otelprof: %s needs a value\n", o);
			free(inputs);
			return 2;
		}
		i++;
		if (opt_is(o, "-o", "--output")) {
			a.output = val;
		} else if (opt_is(o, "-t", "--title")) {
			a.title = val;
		} else if (opt_is(o, "-p", "--pid")) {
			if (parse_uint(val, INT_MAX, &v) || !v)
				goto bad_value;
			a.pid = (int)v;
		} else if (!strcmp(o, "--max-nodes") ||
			   !strcmp(o, "--max-groups")) {
			if (parse_uint(val, UINT32_MAX / 2, &v) || v < 16)
				goto bad_value;
			if (!strcmp(o, "--max-nodes"))
				a.max_nodes = v;
			else
				a.max_groups = v;
		} else if (!strcmp(o, "--watts-per-core")) {
			coef = &a.watts_per_core;
		} else if (!strcmp(o, "--pue")) {
			coef = &a.pue;
		} else if (!strcmp(o, "--co2-kg-per-kwh")) {
			coef = &a.co2_kg_per_kwh;
		} else if (!strcmp(o, "--cost-per-core-hour")) {
			coef = &a.cost_per_core_hour;
		} else {
			fprintf(stderr, "otelprof: unknown option %s\n", o);
			usage_command(stderr, "report");
			free(inputs);
			return 2;
		}
		if (coef && parse_double(val, 1e6, coef))
			goto bad_value;
		continue;
	bad_value:
		free(inputs);
		return bad(o, val);
	}
	if (!a.output || !a.ninputs || (a.diff && a.ninputs != 2)) {
		fprintf(stderr,
			"otelprof: report needs %s and -o FILE.html "
			"(otelprof report -h)\n",
			a.diff ? "exactly two FILEs (BASE NEW) with --diff"
			       : "a FILE");
		free(inputs);
		return 2;
	}
	e = cmd_report(&a);
	free(inputs);
	return e;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage_all(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "record"))
		return main_record(argc - 2, argv + 2);
	if (!strcmp(argv[1], "top"))
		return main_top(argc - 2, argv + 2);
	if (!strcmp(argv[1], "convert"))
		return main_convert(argc - 2, argv + 2);
	if (!strcmp(argv[1], "report"))
		return main_report(argc - 2, argv + 2);
	if (!strcmp(argv[1], "version")) {
		printf("otelprof %s\n", otelprof_version());
		return 0;
	}
	if (!strcmp(argv[1], "help")) {
		if (argc < 3) {
			usage_all(stdout);
			return 0;
		}
		if (usage_command(stdout, argv[2])) {
			fprintf(stderr, "otelprof: unknown command '%s'\n",
				argv[2]);
			usage_all(stderr);
			return 2;
		}
		return 0;
	}
	if (is_help(argv[1])) {
		usage_all(stdout);
		return 0;
	}
	fprintf(stderr, "otelprof: unknown command '%s'\n", argv[1]);
	usage_all(stderr);
	return 2;
}
