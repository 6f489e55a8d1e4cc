/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The report page: one HTML file with its style, script and data inlined
 * (no network). The data is the aggregated tree as JSON in a
 * <script type="application/json"> element ('<' escaped, so no input can
 * close it); the hand-written script (cli/report_page/) renders it.
 */
#ifndef OTELPROF_CLI_REPORT_HTML_H
#define OTELPROF_CLI_REPORT_HTML_H

#include <stdbool.h>
#include <stdio.h>

#include "report_cost.h"
#include "report_tree.h"

struct report_meta {
	const char *title;
	bool diff;
	const char *const *files[2]; /* input paths per side */
	size_t nfiles[2];
	struct report_coeffs coeffs;
};

/* 0, or -EIO when out reports an error. */
int report_html_write(FILE *out, const struct report_tree *t,
		      const struct report_meta *m);

/* Write s as a JSON string (quoted), safe inside a <script> element. */
void report_json_str(FILE *out, const char *s);

#endif
