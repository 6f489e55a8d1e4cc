/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Glue between what userspace knows (files, processes) and the BPF
 * unwinder: builds a file's unwind table when the file is first seen,
 * mirrors every process's executable mappings into the kernel, and unwinds
 * the stack copies of samples the kernel could not unwind itself.
 */
#ifndef OTELPROF_UNWIND_PROCESS_UNWIND_H
#define OTELPROF_UNWIND_PROCESS_UNWIND_H

#include <stdint.h>

#include "process/process_table.h"
#include "profiler_types.h"
#include "unwind/unwind_maps.h"

struct process_unwind {
	struct unwind_maps maps;
	struct process_table *procs;
	uint64_t tables_built, table_errors, cfi_bytes, build_ns;
	uint64_t copies_unwound, copy_frames;
	uint64_t table_memory; /* userspace copies of the rows */
};

/* Installs the file_cache and process_table hooks. With files_fd and
 * procs_fd < 0 tables are built for userspace use only (tests, tools). */
void process_unwind_init(struct process_unwind *pu, struct process_table *t,
			 struct file_cache *files, int files_fd, int procs_fd);

/*
 * Unwind a OTELPROF_SAMPLE_F_STACK_COPY sample of process p in userspace
 * with the same step code as the kernel. Writes up to max frames (pcs,
 * leaf first) and returns their count; *flags gets
 * OTELPROF_SAMPLE_F_COMPLETE / _TRUNCATED.
 */
uint32_t process_unwind_copy(struct process_unwind *pu, struct process *p,
			     const struct otelprof_sample_event *e,
			     uint64_t *frames, uint32_t max, uint32_t *flags,
			     uint64_t now_ns);

#endif
