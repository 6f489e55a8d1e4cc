// SPDX-License-Identifier: Apache-2.0
#include "usage.h"

#include <string.h>

#include "report_cost.h"
#include "report_tree.h"

#define STR_(x) #x
#define STR(x)	STR_(x)

static const char record_help[] =
	"usage: otelprof record [options]\n"
	"Sample every CPU (or one process) and write one OTLP profiles file.\n"
	"Runs until Ctrl-C or SIGTERM unless --duration is given; the file is\n"
	"written either way.\n"
	"\n"
	"  -o, --output FILE         the OTLP protobuf file to write "
	"(required)\n"
	"  -d, --duration SECONDS    stop after SECONDS (default: until a "
	"signal)\n"
	"  -F, --frequency HZ        samples per second per CPU (default 19)\n"
	"  -p, --pid PID             only this process (default: all)\n"
	"  -a, --all-cpus            every process on every CPU (the "
	"default)\n"
	"      --report HTML         also write the HTML report of the "
	"recording\n"
	"      --btf FILE            kernel BTF when /sys/kernel/btf/vmlinux "
	"is missing\n"
	"      --ringbuf-kb KB       ring buffer size\n"
	"      --symbol-budget-mb MB, --file-budget-mb MB  symbol memory "
	"budgets\n"
	"      --debuginfod[=URLS]   fetch missing debug info "
	"($DEBUGINFOD_URLS)\n"
	"      --probabilistic-threshold N, --probabilistic-interval SECONDS\n"
	"                            sample only in intervals a draw below N "
	"(1..100)\n"
	"                            turns on (default 100: always; 60 s)\n"
	"      --env-vars NAMES      these environment variables "
	"(comma-separated) on\n"
	"                            each process's resource\n"
	"      --off-cpu-threshold P  also record off-CPU time: the "
	"probability\n"
	"                            in [0, 1] that a switch-out is recorded "
	"(0: off)\n"
	"      --apm-agents          answer Elastic APM agents with the "
	"stack-trace\n"
	"                            ids of their transactions (default: "
	"off, as\n"
	"                            the host's own profiler answers them)\n"
	"      --quiet               no progress or summary on stderr\n"
	"  -h, --help                this help\n"
	"\n"
	"example:\n"
	"  sudo otelprof record -F 99 -p 1234 -o app.otlp --report app.html\n";

static const char top_help[] =
	"usage: otelprof top FILE [options]\n"
	"The functions with the largest self and total share of samples.\n"
	"\n"
	"  -n, --limit N   rows per ranking (default 20)\n"
	"  -p, --pid PID   only this process\n"
	"  -h, --help      this help\n"
	"\n"
	"example:\n"
	"  otelprof top host.otlp -n 30\n";

static const char convert_help[] =
	"usage: otelprof convert FILE --format pprof|folded|otlp-json "
	"[options]\n"
	"Write the profile in another format.\n"
	"\n"
	"  -f, --format FMT   pprof (go tool pprof, Pyroscope, Parca), folded\n"
	"                     (flamegraph.pl, speedscope) or otlp-json\n"
	"  -o, --output FILE  where to write (default: stdout)\n"
	"  -p, --pid PID      only this process\n"
	"  -h, --help         this help\n"
	"\n"
	"example:\n"
	"  otelprof convert host.otlp -f pprof -o host.pb\n";

/* Printed, not a constant: the defaults come from report_cost.h and
 * report_tree.h. */
static void report_help(FILE *f)
{
	fprintf(f,
		"usage: otelprof report [options] FILE... -o REPORT.html\n"
		"       otelprof report --diff BASE NEW -o DIFF.html\n"
		"One self-contained HTML page (no network): flamegraph and "
		"icicle,\n"
		"search, top functions with cost and CO2, filters by "
		"resource,\n"
		"thread, frame type, time, trace/span and context attributes;\n"
		"with --diff the change from BASE to NEW. See docs/report.md.\n"
		"\n"
		"  -o, --output FILE            the HTML file to write "
		"(required)\n"
		"      --diff                   exactly two FILEs: BASE then "
		"NEW\n"
		"  -p, --pid PID                only this process\n"
		"  -t, --title TEXT             the page's title\n"
		"      --watts-per-core W       per busy core, default %g\n"
		"      --pue RATIO              data centre PUE, default %g\n"
		"      --co2-kg-per-kwh KG      grid intensity, default %g\n"
		"      --cost-per-core-hour C   default %g (USD)\n"
		"      --max-nodes N            call-tree nodes kept (default "
		"%u)\n"
		"      --max-groups N           sample groups kept (default "
		"%u)\n"
		"      --quiet                  no summary on stderr\n"
		"  -h, --help                   this help\n"
		"FILE: OTLP protobuf (what record writes) or the Collector "
		"file\n"
		"exporter's output (OTLP/JSON lines or proto).\n"
		"\n"
		"examples:\n"
		"  otelprof report host.otlp -o host.html\n"
		"  otelprof report --diff before.otlp after.otlp -o "
		"diff.html\n",
		REPORT_DEFAULT_WATTS_PER_CORE, REPORT_DEFAULT_PUE,
		REPORT_DEFAULT_CO2_KG_PER_KWH,
		REPORT_DEFAULT_COST_PER_CORE_HOUR, REPORT_MAX_NODES,
		REPORT_MAX_GROUPS);
}

static const char version_help[] = "usage: otelprof version\n";

static const struct {
	const char *name, *help; /* help NULL: printed by report_help */
} helps[] = {
	{"record", record_help},   {"top", top_help},
	{"convert", convert_help}, {"report", NULL},
	{"version", version_help},
};

void usage_all(FILE *f)
{
	fputs("usage: otelprof COMMAND [options]   (otelprof help COMMAND, "
	      "otelprof COMMAND -h)\n"
	      "  record    sample the host or a process into an OTLP file\n"
	      "  report    an HTML flamegraph/top/diff/cost page from OTLP "
	      "files\n"
	      "  top       the top functions, as text\n"
	      "  convert   to pprof, folded stacks or OTLP/JSON\n"
	      "  version   print the version\n"
	      "FILE: an OTLP profile (protobuf, as `record` writes) or the "
	      "Collector file exporter's output (OTLP/JSON lines or proto)\n"
	      "example:\n"
	      "  sudo otelprof record -F 99 -o host.otlp   # Ctrl-C stops\n"
	      "  otelprof report host.otlp -o host.html\n",
	      f);
}

int usage_command(FILE *f, const char *cmd)
{
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++)
		if (!strcmp(cmd, helps[i].name)) {
			if (helps[i].help)
				fputs(helps[i].help, f);
			else
				report_help(f);
			return 0;
		}
	return -1;
}
