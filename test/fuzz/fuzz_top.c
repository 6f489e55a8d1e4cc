// SPDX-License-Identifier: Apache-2.0
/* `otelprof top`, `convert` and `report` on hostile files: the protobuf and
 * OTLP/JSON decoders, every index of the dictionary, the rankings, the
 * three writers and the report's aggregation (small caps, so they are hit)
 * and page. No crash, no hang, bounded memory. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "convert.h"
#include "otlp_input.h"
#include "report_html.h"
#include "report_tree.h"
#include "top.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct otlp_docs docs;
	char err[256];

	if (!null)
		null = fopen("/dev/null", "w");
	if (!null || otlp_docs_parse(data, size, &docs, err, sizeof(err)))
		return 0;
	top_report(&docs, 20, 0, null);
	convert_docs(&docs, CONVERT_FOLDED, 0, null);
	convert_docs(&docs, CONVERT_PPROF, 0, null);
	convert_docs(&docs, CONVERT_OTLP_JSON, 0, null);
	{
		struct report_tree t;
		struct report_meta m = {.title = "fuzz",
					.diff = true,
					.coeffs = {7, 1.7, 0.4, 0.04}};

		if (!report_tree_init(&t, 64, 64)) {
			if (!report_tree_add(&t, &docs, 0, 0) &&
			    !report_tree_add(&t, &docs, 1, 0))
				report_html_write(null, &t, &m);
			report_tree_free(&t);
		}
	}
	otlp_docs_free(&docs);
	return 0;
}
