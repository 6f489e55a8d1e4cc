/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Diagnostics for developers, on stderr, when OTELPROF_DEBUG is set. The
 * environment is read once: the checks sit on per-sample paths, and
 * getenv is not safe beside a host program's setenv on another thread.
 */
#ifndef OTELPROF_UTIL_DEBUG_LOG_H
#define OTELPROF_UTIL_DEBUG_LOG_H

#include <stdbool.h>

bool debug_enabled(void);
/* "otelprof: " + the message + a newline, when debug_enabled(). */
void debug_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
