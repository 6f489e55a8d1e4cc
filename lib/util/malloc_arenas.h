// SPDX-License-Identifier: Apache-2.0
#ifndef OTELPROF_UTIL_MALLOC_ARENAS_H
#define OTELPROF_UTIL_MALLOC_ARENAS_H

#include <stdbool.h>

/* Limit glibc's malloc to one arena for the process, before the library's
 * threads start, unless the environment already says how many
 * (MALLOC_ARENA_MAX, or arena_max in GLIBC_TUNABLES). True if set. */
bool malloc_arenas_limit(void);

#endif
