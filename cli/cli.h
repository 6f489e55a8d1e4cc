/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OTELPROF_CLI_H
#define OTELPROF_CLI_H

#include <stdbool.h>

struct record_args {
	unsigned duration;
	unsigned frequency;
	int pid;
	unsigned ringbuf_kb; /* 0: the library's default */
	unsigned symbol_budget_mb, file_budget_mb; /* 0: the library's */
	const char *output;
	const char *btf;	/* kernel BTF file, NULL: the kernel's own */
	const char *debuginfod; /* server URLs, NULL: off */
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

int cmd_record(const struct record_args *a);
int cmd_convert(const struct convert_args *a);
int cmd_top(const struct top_args *a);

#endif
