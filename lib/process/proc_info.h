/* SPDX-License-Identifier: Apache-2.0 */
/* Small per-process facts from /proc: start time, comm, exe, container id. */
#ifndef OTELPROF_PROCESS_PROC_INFO_H
#define OTELPROF_PROCESS_PROC_INFO_H

#include <stddef.h>
#include <stdint.h>

#define CONTAINER_ID_LEN 64

/* Field 22 (starttime, clock ticks since boot) of a /proc/PID/stat text.
 * The comm field may contain spaces and parentheses: parse after the last
 * ')'. Returns 0 or -EINVAL. */
int proc_stat_parse_starttime(const char *text, size_t len, uint64_t *out);

/* Field 2 (comm) of a /proc/PID/stat text: between the first '(' and the
 * last ')', cut at 15 bytes (the kernel's TASK_COMM_LEN - 1), into
 * out[16]. Returns 0 or -EINVAL. */
int proc_stat_parse_comm(const char *text, size_t len, char out[16]);

/* Container id from the text of /proc/PID/cgroup (v1 or v2): the last
 * 64-hex-digit token of any cgroup path (docker-<id>.scope,
 * cri-containerd-<id>.scope, crio-<id>, /docker/<id>, kubepods/.../<id>).
 * Writes a NUL-terminated lower-case id into out[CONTAINER_ID_LEN + 1] and
 * returns 0, or -ENOENT when the process is not in a container. */
int proc_cgroup_parse_container_id(const char *text, size_t len,
				   char out[CONTAINER_ID_LEN + 1]);

#endif
