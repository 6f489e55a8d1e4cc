// SPDX-License-Identifier: Apache-2.0
/*
 * `otelprof report`: one self-contained HTML page (flamegraph, top
 * functions, filters, diff, cost and CO2) from OTLP profiles files. Inputs
 * are read and folded one at a time and freed before the next, so memory is
 * the largest input plus the aggregate (whose caps bound it).
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output_file.h"
#include "report_cost.h"
#include "report_html.h"
#include "report_tree.h"

static int fold_file(struct report_tree *t, const char *path, int side, int pid)
{
	struct otlp_docs docs;
	char err[512];
	int e = otlp_docs_read(path, &docs, err, sizeof(err));

	if (e) {
		fprintf(stderr, "otelprof: cannot read %s: %s\n", path, err);
		return 1;
	}
	e = report_tree_add(t, &docs, side, pid);
	otlp_docs_free(&docs);
	if (e) {
		fprintf(stderr, "otelprof: %s: %s\n", path,
			e == -E2BIG ? "more distinct strings than the report "
				      "holds"
				    : strerror(-e));
		return 1;
	}
	return 0;
}

/* The page into out (opened before the inputs were read: a path that
 * cannot be written fails before the work). */
static int write_report(const struct report_tree *t,
			const struct report_meta *m, struct output_file *out,
			const char *path)
{
	char err[512];
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;
	int e;

	mem = open_memstream(&buf, &len);
	if (!mem) {
		output_abort(out);
		fprintf(stderr, "otelprof: %s\n", strerror(errno));
		return 1;
	}
	e = report_html_write(mem, t, m);
	if (fclose(mem) || e) {
		free(buf);
		output_abort(out);
		fprintf(stderr, "otelprof: cannot build the report\n");
		return 1;
	}
	e = output_commit(out, (const uint8_t *)buf, len, err, sizeof(err));
	free(buf);
	if (e) {
		fprintf(stderr, "otelprof: cannot write %s: %s\n", path, err);
		return 1;
	}
	return 0;
}

int cmd_report(const struct report_args *a)
{
	struct report_tree t;
	struct report_meta m = {
		.diff = a->diff,
		.coeffs = {a->watts_per_core, a->pue, a->co2_kg_per_kwh,
			   a->cost_per_core_hour},
	};
	struct output_file out;
	char title[512], err[512];
	int e;

	if (output_open(&out, a->output, err, sizeof(err))) {
		fprintf(stderr, "otelprof: %s\n", err);
		return 1;
	}
	if (report_tree_init(&t, a->max_nodes, a->max_groups)) {
		output_abort(&out);
		fprintf(stderr, "otelprof: out of memory\n");
		return 1;
	}
	if (a->diff) {
		m.files[0] = a->inputs;
		m.nfiles[0] = 1;
		m.files[1] = a->inputs + 1;
		m.nfiles[1] = 1;
	} else {
		m.files[0] = a->inputs;
		m.nfiles[0] = a->ninputs;
	}
	for (size_t i = 0; i < a->ninputs; i++) {
		e = fold_file(&t, a->inputs[i], a->diff ? (int)i : 0, a->pid);
		if (e) {
			report_tree_free(&t);
			output_abort(&out);
			return e;
		}
	}
	if (t.dropped)
		fprintf(stderr,
			"otelprof: %llu samples left out of the report: more "
			"than %zu call-tree nodes or %zu sample groups "
			"(--max-nodes, --max-groups; or report fewer files or "
			"one --pid)\n",
			(unsigned long long)t.dropped, t.max_nodes,
			t.max_groups);
	if (a->title) {
		m.title = a->title;
	} else {
		snprintf(title, sizeof(title), "%s%s%s", a->inputs[0],
			 a->diff ? " -> " : (a->ninputs > 1 ? " ..." : ""),
			 a->diff ? a->inputs[1] : "");
		m.title = title;
	}
	e = write_report(&t, &m, &out, a->output);
	if (!e && !a->quiet)
		fprintf(stderr,
			"otelprof: wrote %s (%llu samples, %zu functions, "
			"%zu call-tree nodes, %zu sample groups); open it in "
			"a browser\n",
			a->output,
			(unsigned long long)(t.side[0].samples +
					     t.side[1].samples),
			t.nfn, t.nnode, t.ngroup);
	report_tree_free(&t);
	return e;
}

int report_of_recording(const char *input, const char *output, bool quiet)
{
	const char *in[1] = {input};
	struct report_args a = {
		.inputs = in,
		.ninputs = 1,
		.output = output,
		.watts_per_core = REPORT_DEFAULT_WATTS_PER_CORE,
		.pue = REPORT_DEFAULT_PUE,
		.co2_kg_per_kwh = REPORT_DEFAULT_CO2_KG_PER_KWH,
		.cost_per_core_hour = REPORT_DEFAULT_COST_PER_CORE_HOUR,
		.quiet = quiet,
	};

	return cmd_report(&a);
}
