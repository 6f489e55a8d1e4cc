// SPDX-License-Identifier: Apache-2.0
/* otelprof: local recording and quick inspection through libotelprofiler. */
#include "cli.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "otelprofiler.h"

static void usage(FILE *f)
{
	fprintf(f, "usage:\n"
		   "  otelprof record --duration SECONDS --frequency HZ "
		   "--output FILE [--pid PID] [--ringbuf-kb KB] [--btf FILE]\n"
		   "      [--symbol-budget-mb MB] [--file-budget-mb MB] "
		   "[--debuginfod[=URLS]] [--quiet]\n"
		   "  otelprof top FILE [--limit N] [--pid PID]\n"
		   "  otelprof convert FILE --format pprof|folded|otlp-json "
		   "[--output OUT] [--pid PID]\n"
		   "FILE: an OTLP profile (protobuf, as `record` writes) or "
		   "the Collector file exporter's OTLP/JSON lines\n"
		   "  otelprof version\n");
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
	struct record_args a = {.duration = 10,
				.frequency = OTELPROF_DEFAULT_FREQUENCY_HZ};
	unsigned long v;

	if (!getenv("OTELPROF_DEBUG"))
		libbpf_set_print(libbpf_quiet);

	for (int i = 0; i < argc; i++) {
		const char *o = argv[i],
			   *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--quiet")) {
			a.quiet = true;
			continue;
		}
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
		if (!strcmp(o, "--duration")) {
			if (parse_uint(val, 86400 * 365, &v) || !v)
				return bad(o, val);
			a.duration = (unsigned)v;
		} else if (!strcmp(o, "--frequency")) {
			if (parse_uint(val, 10000, &v) || !v)
				return bad(o, val);
			a.frequency = (unsigned)v;
		} else if (!strcmp(o, "--pid")) {
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
		} else if (!strcmp(o, "--output")) {
			a.output = val;
		} else if (!strcmp(o, "--btf")) {
			a.btf = val;
		} else {
			fprintf(stderr, "otelprof: unknown option %s\n", o);
			usage(stderr);
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
		if (!val) {
			fprintf(stderr, "otelprof: %s needs a value\n", o);
			return 2;
		}
		if (!strcmp(o, "--limit")) {
			if (parse_uint(val, 100000, &v) || !v)
				return bad(o, val);
			a.limit = (unsigned)v;
		} else if (!strcmp(o, "--pid")) {
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
		if (!val) {
			fprintf(stderr, "otelprof: %s needs a value\n", o);
			return 2;
		}
		if (!strcmp(o, "--format")) {
			if (!strcmp(val, "pprof"))
				a.format = CONVERT_PPROF;
			else if (!strcmp(val, "folded"))
				a.format = CONVERT_FOLDED;
			else if (!strcmp(val, "otlp-json"))
				a.format = CONVERT_OTLP_JSON;
			else
				return bad(o, val);
		} else if (!strcmp(o, "--output")) {
			a.output = val;
		} else if (!strcmp(o, "--pid")) {
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

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "record"))
		return main_record(argc - 2, argv + 2);
	if (!strcmp(argv[1], "top"))
		return main_top(argc - 2, argv + 2);
	if (!strcmp(argv[1], "convert"))
		return main_convert(argc - 2, argv + 2);
	if (!strcmp(argv[1], "version")) {
		printf("otelprof %s\n", otelprof_version());
		return 0;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "otelprof: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
