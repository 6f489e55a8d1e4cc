/* SPDX-License-Identifier: Apache-2.0 */
/*
 * UTF-8 checks for strings that reach OTLP. Protobuf `string` fields must be
 * valid UTF-8, but symbol names, thread names (any process can prctl its
 * comm) and file paths are arbitrary bytes chosen by whoever made them.
 */
#ifndef OTELPROF_UTIL_UTF8_H
#define OTELPROF_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Whether s[0..len) is well-formed UTF-8 (no overlong forms, surrogates or
 * code points above U+10FFFF). */
bool utf8_valid(const char *s, size_t len);

/* A malloc'ed copy of s[0..len) with every byte that is not part of a
 * well-formed sequence replaced by U+FFFD; its length in *out_len. NULL on
 * out of memory. */
char *utf8_sanitize(const char *s, size_t len, size_t *out_len);

#endif
