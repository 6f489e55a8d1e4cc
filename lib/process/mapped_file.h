/* SPDX-License-Identifier: Apache-2.0 */
/* Opening the file behind another process's mapping, safely. */
#ifndef OTELPROF_PROCESS_MAPPED_FILE_H
#define OTELPROF_PROCESS_MAPPED_FILE_H

#include <stdint.h>
#include <sys/types.h>

#include "process/proc_maps.h"

/*
 * Open (O_RDONLY) the file mapped at m in process pid. First through
 * /proc/PID/map_files/START-END, which names exactly the mapped inode even
 * when it was deleted or lives in another mount namespace; else by its path
 * resolved inside the process's root with RESOLVE_IN_ROOT, so a hostile
 * container's symlinks cannot lead outside it. The opened file must be a
 * regular file with the mapping's inode. Returns an fd or a negative errno.
 */
int mapped_file_open(pid_t pid, const struct proc_mapping *m);

#endif
