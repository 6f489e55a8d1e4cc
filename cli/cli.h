/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OTELPROF_CLI_H
#define OTELPROF_CLI_H

#include <stdbool.h>
#include <stddef.h>

struct record_args {
	unsigned duration;
	unsigned frequency;
	int pid;
	unsigned ringbuf_kb; /* 0: the library's default */
	unsigned symbol_budget_mb, file_budget_mb; /* 0: the library's */
	const char *output;
	const char *btf;	/* kernel BTF file, NULL: the kernel's own */
	const char *debuginfod; /* server URLs, NULL: off */
	const char *report;	/* also write this HTML report, NULL: no */
	/* probabilistic profiling: 0 = the library's (always on) */
	unsigned prob_threshold, prob_interval_s;
	const char *env_vars; /* include_env_vars, NULL: none */
	double off_cpu;	      /* off-CPU threshold in [0, 1], 0: off */
	bool apm_agents;      /* answer Elastic APM agents (off by default) */
	bool quiet;
};

struct top_args {
	const char *input;
	unsigned limit;
	int pid; /* 0: all processes */
};

struct convert_args {
	const char *input;
	const char *output; /* NULL: stdout */
	int format;	    /* enum convert_format */
	int pid;	    /* 0: all processes */
};

struct report_args {
	const char **inputs; /* with diff: BASE then NEW */
	size_t ninputs;
	const char *output;
	const char *title; /* NULL: from the inputs */
	int pid;	   /* 0: all processes */
	bool diff;
	double watts_per_core, pue, co2_kg_per_kwh, cost_per_core_hour;
	unsigned long max_nodes, max_groups; /* 0: the defaults */
	bool quiet;
};

int cmd_report(const struct report_args *a);
/* `record --report`: the report of one recording with the defaults. */
int report_of_recording(const char *input, const char *output, bool quiet);
int cmd_record(const struct record_args *a);
int cmd_convert(const struct convert_args *a);
int cmd_top(const struct top_args *a);

#endif
