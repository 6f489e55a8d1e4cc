/* SPDX-License-Identifier: Apache-2.0 */
/* The end-of-recording summary of `otelprof record`, from otelprof_stats. */
#ifndef OTELPROF_CLI_STATS_SUMMARY_H
#define OTELPROF_CLI_STATS_SUMMARY_H

#include <stdio.h>

#include "otelprofiler.h"

/* The summary lines, each printed when any of its counters is non-zero
 * (the user-stack line always). */
void stats_summary_print(FILE *out, const struct otelprof_stats *st);

#endif
