/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OTELPROF_CLI_CONVERT_H
#define OTELPROF_CLI_CONVERT_H

#include <stdio.h>

#include "otlp_input.h"

enum convert_format {
	CONVERT_PPROF,
	CONVERT_FOLDED,
	CONVERT_OTLP_JSON,
};

/* Write docs (restricted to process pid when pid > 0) in format f. */
int convert_docs(const struct otlp_docs *docs, enum convert_format f, int pid,
		 FILE *out);

#endif
