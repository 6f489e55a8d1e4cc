/* SPDX-License-Identifier: Apache-2.0 */
/* Opening the file behind another process's mapping, safely. */
#ifndef OTELPROF_PROCESS_MAPPED_FILE_H
#define OTELPROF_PROCESS_MAPPED_FILE_H

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/proc_maps.h"

/* The mapping is not a regular file (a device, FIFO, socket, or a file on
 * FUSE): refused without opening it, and counted. */
#define MAPPED_FILE_REFUSED (-EPERM)

/*
 * Open (O_RDONLY | O_NONBLOCK) the file mapped at m in process pid. First
 * through /proc/PID/map_files/START-END, which names exactly the mapped
 * inode even when it was deleted or lives in another mount namespace; else
 * by its path resolved inside the process's root with RESOLVE_IN_ROOT, so
 * a hostile container's symlinks cannot lead outside it. Either is opened
 * O_PATH first (no driver code runs, nothing blocks), must be a regular
 * file with the mapping's inode, and only then is that inode reopened for
 * reading. Returns an fd or a negative errno (MAPPED_FILE_REFUSED).
 */
int mapped_file_open(pid_t pid, const struct proc_mapping *m);

#endif
