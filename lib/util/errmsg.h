/* SPDX-License-Identifier: Apache-2.0 */
/* Bounded formatting of human-readable error messages. */
#ifndef OTELPROF_UTIL_ERRMSG_H
#define OTELPROF_UTIL_ERRMSG_H

#include <stdarg.h>
#include <stddef.h>

struct errmsg {
	char *buf;
	size_t len;
};

/* Writes a formatted message (truncated, always NUL-terminated) and
 * returns err unchanged so callers can `return errmsg_set(e, -EX, ...)`. */
int errmsg_set(struct errmsg *e, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
