/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OTELPROF_CLI_TOP_H
#define OTELPROF_CLI_TOP_H

#include <stdio.h>

#include "otlp_input.h"

/* Print the self and total rankings (limit rows each) of docs, restricted
 * to process pid when pid > 0. 0 or a negative errno. */
int top_report(const struct otlp_docs *docs, unsigned limit, int pid,
	       FILE *out);

#endif
