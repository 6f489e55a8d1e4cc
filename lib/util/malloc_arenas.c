// SPDX-License-Identifier: Apache-2.0
/*
 * One malloc arena. glibc gives each thread that allocates an arena of its
 * own; the file loaders build a file's tables in theirs, with the file's
 * read buffers and parse scratch between the long-lived rows, and freed
 * scratch between live chunks stays resident however often malloc_trim
 * runs. On the real-host bench (docs/performance.md) four arenas held
 * 79 MiB of the recorder's 97 MiB anonymous memory with 22 MiB of symbols;
 * one arena held 46 MiB in all with 36 MiB of symbols. Our threads
 * allocate off the sampling path, so the shared arena's lock costs little.
 * Process-wide, so the environment's own setting wins; in the Collector
 * (Go, which does not use malloc) it governs this library and its
 * dependencies alone.
 */
#include "util/malloc_arenas.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

bool malloc_arenas_limit(void)
{
	const char *t = getenv("GLIBC_TUNABLES");

	if (getenv("MALLOC_ARENA_MAX") || (t && strstr(t, "arena_max")))
		return false;
	return mallopt(M_ARENA_MAX, 1) == 1;
}
