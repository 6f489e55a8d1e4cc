/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a whole /proc (or /sys) file, bounded: its size comes from the
 * kernel or from another process, so it is capped by the caller. */
#ifndef OTELPROF_PROCESS_PROC_FILE_H
#define OTELPROF_PROCESS_PROC_FILE_H

#include <stddef.h>

/* Read a whole (small) /proc file, bounded by max bytes; NUL-terminated.
 * Returns the length or a negative errno. */
long proc_read_file(const char *path, char **out, size_t max);

#endif
