/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OTLP/JSON (the Collector's file exporter: one ExportProfilesServiceRequest
 * per line) to and from the protobuf-c ProfilesData tree, with jansson.
 */
#ifndef OTELPROF_CLI_OTLP_JSON_H
#define OTELPROF_CLI_OTLP_JSON_H

#include <stddef.h>
#include <stdio.h>

#include "otlp_profiles.pb-c.h"

/* One JSON document (no trailing data). The tree is freed with
 * otelprof__otlp__profiles_data__free_unpacked(pd, NULL). NULL if the text
 * is not an OTLP profiles JSON object (then *err, if given, says why). */
Otelprof__Otlp__ProfilesData *otlp_json_decode(const char *text, size_t len,
					       char *err, size_t errlen);

/* Write pd as one line of OTLP/JSON (newline-terminated). 0 or -errno. */
int otlp_json_write(const Otelprof__Otlp__ProfilesData *pd, FILE *out);

#endif
