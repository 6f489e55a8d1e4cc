/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel side of the unwind tables: one BPF array per ELF file in the
 * `unwind_files` hash-of-maps (sized to that file, so memory follows what
 * is loaded), and one entry per process in `unwind_procs`.
 */
#ifndef OTELPROF_UNWIND_UNWIND_MAPS_H
#define OTELPROF_UNWIND_UNWIND_MAPS_H

#include <stdint.h>

#include "profiler_types.h"
#include "unwind/unwind_table.h"

struct unwind_maps {
	int files_fd; /* BPF_MAP_TYPE_ARRAY_OF_MAPS: file id -> rows array */
	int procs_fd; /* BPF_MAP_TYPE_HASH: pid -> struct otelprof_bpf_proc */
	uint32_t next_id;   /* ids never used yet start here */
	uint32_t *free_ids; /* recycled ids */
	uint32_t nfree;
	uint64_t files, rows, bytes; /* currently loaded */
	uint64_t load_errors, procs_set, procs_errors;
	uint64_t rows_unrepresentable; /* stored as INVALID */
};

void unwind_maps_init(struct unwind_maps *um, int files_fd, int procs_fd);
void unwind_maps_free(struct unwind_maps *um);
/* Make t's kernel array (BPF_F_MMAPABLE, filled through a mapping):
 * *map_fd, *nrows; rows that do not fit are stored INVALID and added to
 * *unrepresentable. Touches no shared state (the build worker calls it).
 * 0 or -errno. */
int unwind_maps_create_array(const struct unwind_table *t, int *map_fd,
			     uint32_t *nrows, uint64_t *unrepresentable);
/* Publish an array from unwind_maps_create_array under a new file id
 * (*id). The caller keeps map_fd either way. 0 or -errno. */
int unwind_maps_register(struct unwind_maps *um, int map_fd, uint32_t nrows,
			 uint32_t *id);
/* Both of the above: copy t into a new kernel array; *id gets its key, *map_fd
 * the array's fd (the caller closes it). 0 or -errno. */
int unwind_maps_add_file(struct unwind_maps *um, const struct unwind_table *t,
			 uint32_t *id, uint32_t *nrows, int *map_fd);
/* Row idx of a file's kernel array. 0 or -errno. */
int unwind_maps_read_row(int map_fd, uint32_t idx,
			 struct otelprof_bpf_row *row);
void unwind_maps_remove_file(struct unwind_maps *um, uint32_t id,
			     uint64_t nrows);
int unwind_maps_set_process(struct unwind_maps *um, uint32_t pid,
			    const struct otelprof_bpf_proc *proc);
void unwind_maps_remove_process(struct unwind_maps *um, uint32_t pid);

#endif
