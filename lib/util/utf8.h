/* SPDX-License-Identifier: Apache-2.0 */
/* OTLP strings must be valid UTF-8; bytes from other processes may not be. */
#ifndef OTELPROF_UTIL_UTF8_H
#define OTELPROF_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Well-formed UTF-8 (no overlongs, surrogates or code points > U+10FFFF)
 * without NUL bytes. */
bool utf8_valid(const char *s, size_t n);

#endif
