/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiles files the CLI reads: one serialized OTLP ProfilesData (what
 * `otelprof record` writes, also an ExportProfilesServiceRequest), or the
 * Collector file exporter's output: OTLP/JSON, one request per line, or
 * `format: proto`, each request preceded by its 4-byte big-endian size.
 */
#ifndef OTELPROF_CLI_OTLP_INPUT_H
#define OTELPROF_CLI_OTLP_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "otlp_profiles.pb-c.h"

#define OTLP_INPUT_MAX_BYTES (1u << 30)

struct otlp_docs {
	Otelprof__Otlp__ProfilesData **v;
	size_t n;
};

/* Parse buf (length-prefixed protobuf messages when the sizes tile it,
 * else JSON lines when it starts with '{', else one protobuf message). 0,
 * or a negative errno with a message in err. */
int otlp_docs_parse(const uint8_t *buf, size_t len, struct otlp_docs *out,
		    char *err, size_t errlen);
/* Read a regular file (at most OTLP_INPUT_MAX_BYTES) and parse it. */
int otlp_docs_read(const char *path, struct otlp_docs *out, char *err,
		   size_t errlen);
void otlp_docs_free(struct otlp_docs *d);

/* Resource attribute value of key (plain key or key_strindex form). */
const Otelprof__Otlp__AnyValue *
otlp_resource_attr(const Otelprof__Otlp__ProfilesData *pd,
		   const Otelprof__Otlp__ResourceProfiles *rp, const char *key);
/* A string from the dictionary's table; "" when out of range. */
const char *otlp_str(const Otelprof__Otlp__ProfilesDictionary *d, int64_t i);

#endif
