// SPDX-License-Identifier: Apache-2.0
/* `otelprof top` and `convert` on hostile files: the protobuf and OTLP/JSON
 * decoders, every index of the dictionary, the rankings and the three
 * writers. No crash, no hang, bounded memory. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "convert.h"
#include "otlp_input.h"
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
	otlp_docs_free(&docs);
	return 0;
}
