/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel side of the unwind tables. Rows live in chunks: BPF arrays
 * (BPF_F_MMAPABLE, written and read through a shared mapping) stored in
 * the `unwind_files` array-of-maps under a chunk id. Small files' tables
 * are packed into shared chunks at offsets this allocator hands out, so
 * adding one is a copy into memory, with no syscall and no RCU grace
 * period (each array-of-maps update waits for one: 6-18 ms); only a new
 * chunk costs one. A big file's table gets a chunk of its own, sized to
 * it (built on the worker). One fd per chunk, not per file. Each process's
 * executable mappings go into `unwind_procs`. Without kernel maps
 * (files_fd < 0: tests, tools) chunks are plain memory, laid out the same,
 * so the userspace walk reads rows one way only.
 */
#ifndef OTELPROF_UNWIND_UNWIND_MAPS_H
#define OTELPROF_UNWIND_UNWIND_MAPS_H

#include <stdbool.h>
#include <stdint.h>

#include "profiler_types.h"
#include "unwind/unwind_table.h"

/* Shared chunks grow with need: the first holds UNWIND_SHARED_FIRST_ROWS
 * rows (512 KiB: a small host's whole set of small files), each next one
 * twice the last, up to UNWIND_SHARED_CHUNK_ROWS (2 MiB), so a small host
 * does not hold 2 MiB of empty rows and a big one adds few chunks (each
 * costs an RCU grace period). Tables of at least UNWIND_OWN_CHUNK_ROWS
 * rows get a chunk of their own. */
#define UNWIND_SHARED_FIRST_ROWS (64u << 10)
#define UNWIND_SHARED_CHUNK_ROWS (256u << 10)
#define UNWIND_OWN_CHUNK_ROWS	 (32u << 10)

struct unwind_extent {
	uint32_t off, len;
};

struct unwind_chunk {
	int fd;
	struct unwind_packed_row *rows; /* the array, mapped shared */
	size_t map_len;
	uint32_t nrows;		    /* capacity */
	uint32_t used;		    /* rows handed out */
	bool shared;		    /* packs several files */
	struct unwind_extent *free; /* shared: free extents, by offset */
	uint32_t nfree, capfree;
};

/* What the kernel-side tables count (for otelprof_stats). */
struct unwind_maps_counters {
	uint64_t files, rows; /* tables loaded; rows in use */
	uint64_t bytes;	      /* kernel memory of the chunks */
	uint64_t big_refused; /* big_mappings did not fit: first ones only */
	uint64_t load_errors, procs_errors;
	/* stored as INVALID, or left out (code above 4 GiB of vaddr) */
	uint64_t rows_unrepresentable;
};

struct unwind_maps {
	int files_fd; /* BPF_MAP_TYPE_ARRAY_OF_MAPS: chunk id -> rows array */
	int procs_fd; /* BPF_MAP_TYPE_HASH: pid -> struct otelprof_bpf_proc */
	struct unwind_chunk **chunks; /* by id, OTELPROF_MAX_UNWIND_FILES */
	uint32_t next_id;	      /* ids never used yet start here */
	uint32_t *free_ids;	      /* recycled ids */
	uint32_t nfree;
	/* big_mappings: all executable mappings of processes with more
	 * than fit in their unwind_procs entry; extents as in a chunk. */
	int big_fd;
	struct otelprof_bpf_mapping *big; /* mapped shared */
	struct unwind_chunk big_ext;	  /* free extents (rows unused) */
	struct unwind_maps_counters counters;
};

/* Where a file's table is in the kernel. */
struct unwind_slot {
	uint32_t id;   /* chunk id, 0: none */
	uint32_t base; /* first row in the chunk */
	uint32_t nrows;
	uint32_t index_rows; /* the page index, just before base */
};

void unwind_maps_init(struct unwind_maps *um, int files_fd, int procs_fd);
/* Unmap and close every chunk (the kernel frees them with the outer map
 * or on close). */
void unwind_maps_free(struct unwind_maps *um);
/* Make t's own chunk (for big tables): *map_fd, *nrows and the page index
 * before them, *index_rows; rows that do not
 * fit are stored INVALID, rows of code above 4 GiB of vaddr left out, and
 * both added to *unrepresentable (all rows if none fits: -ERANGE).
 * Touches no shared state (the build worker calls it). 0 or -errno. */
int unwind_maps_create_array(const struct unwind_table *t, int *map_fd,
			     uint32_t *nrows, uint32_t *index_rows,
			     uint64_t *unrepresentable);
/* Publish a chunk from unwind_maps_create_array as the table of one file.
 * Takes map_fd (closed on failure). 0 or -errno. */
int unwind_maps_register(struct unwind_maps *um, int map_fd, uint32_t nrows,
			 uint32_t index_rows, struct unwind_slot *slot);
/* Copy t into the kernel: packed into a shared chunk, or its own chunk
 * when big; rows it cannot hold are counted in rows_unrepresentable, as
 * above. 0 or -errno. */
int unwind_maps_add_file(struct unwind_maps *um, const struct unwind_table *t,
			 struct unwind_slot *slot);
/* Chunk id, whose rows (c->rows[0 .. c->nrows)) are read through its
 * mapping, no syscall; NULL if there is none. Not const: it is the walk's
 * handle for a file's rows (unwind_walk.h UNWIND_ROWS), which in the
 * kernel is a map pointer. */
struct unwind_chunk *unwind_maps_chunk(struct unwind_maps *um, uint32_t id);
void unwind_maps_remove_file(struct unwind_maps *um, struct unwind_slot *slot);
/* Use the big_mappings array (fd of OTELPROF_BIG_MAPPINGS entries).
 * 0 or -errno (then big processes keep their first mappings only;
 * counted in big_refused). */
int unwind_maps_set_big(struct unwind_maps *um, int fd);
/* n entries of big_mappings for one process: *base, and where to write
 * them. NULL if they do not fit. */
struct otelprof_bpf_mapping *unwind_maps_big_alloc(struct unwind_maps *um,
						   uint32_t n, uint32_t *base);
void unwind_maps_big_free(struct unwind_maps *um, uint32_t base, uint32_t n);
int unwind_maps_set_process(struct unwind_maps *um, uint32_t pid,
			    const struct otelprof_bpf_proc *proc);
void unwind_maps_remove_process(struct unwind_maps *um, uint32_t pid);

#endif
