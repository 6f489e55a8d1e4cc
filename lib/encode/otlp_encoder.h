/* SPDX-License-Identifier: Apache-2.0 */
/* Serialization of a profile_builder window as OTLP ProfilesData bytes. */
#ifndef OTELPROF_ENCODE_OTLP_ENCODER_H
#define OTELPROF_ENCODE_OTLP_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "encode/profile_builder.h"

struct otlp_window {
	uint64_t
		start_unix_ns; /* Profile.time_unix_nano (clamped to samples) */
	uint64_t end_unix_ns;
	uint64_t period_ns; /* 1e9 / frequency */
	const char *scope_name;
	const char *scope_version;
	const char *host_name; /* resource of a window without samples */
};

/* Encode b (one ResourceProfiles per process, one Profile each; a window
 * without samples gives one host ResourceProfiles with an empty Profile)
 * into a malloc'ed buffer. Only referenced strings and attributes are
 * written. b is not const: the value-type strings are interned into it
 * here (only windows with samples need them). 0 or a negative errno. */
int otlp_encode(struct profile_builder *b, const struct otlp_window *w,
		uint8_t **out, size_t *out_len);

#endif
