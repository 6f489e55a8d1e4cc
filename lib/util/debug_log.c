// SPDX-License-Identifier: Apache-2.0
#include "util/debug_log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool enabled;

static void read_env(void)
{
	enabled = getenv("OTELPROF_DEBUG") != NULL;
}

bool debug_enabled(void)
{
	pthread_once(&once, read_env);
	return enabled;
}

void debug_log(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (!debug_enabled())
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One write per line: lines of several threads do not interleave. */
	fprintf(stderr, "otelprof: %s\n", line);
}
