// SPDX-License-Identifier: Apache-2.0
#include "unwind/unwind_maps.h"
#include "unwind/row_index.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void unwind_maps_init(struct unwind_maps *um, int files_fd, int procs_fd)
{
	memset(um, 0, sizeof(*um));
	um->files_fd = files_fd;
	um->procs_fd = procs_fd;
	um->next_id = 1; /* 0 means "no table" in a mapping */
	um->big_fd = -1;
}

static void chunk_destroy(struct unwind_chunk *c)
{
	if (c->rows)
		munmap(c->rows, c->map_len);
	if (c->fd >= 0)
		close(c->fd);
	free(c->free);
	free(c);
}

void unwind_maps_free(struct unwind_maps *um)
{
	for (uint32_t id = 1; um->chunks && id < um->next_id; id++)
		if (um->chunks[id])
			chunk_destroy(um->chunks[id]);
	free(um->chunks);
	um->chunks = NULL;
	if (um->big)
		munmap(um->big, OTELPROF_BIG_MAPPINGS * sizeof(*um->big));
	um->big = NULL;
	free(um->big_ext.free);
	memset(&um->big_ext, 0, sizeof(um->big_ext));
	free(um->free_ids);
	um->free_ids = NULL;
	um->nfree = 0;
}

static int alloc_id(struct unwind_maps *um, uint32_t *id)
{
	if (!um->chunks) {
		um->chunks =
			calloc(OTELPROF_MAX_UNWIND_FILES, sizeof(*um->chunks));
		if (!um->chunks)
			return -ENOMEM;
	}
	if (um->nfree) {
		*id = um->free_ids[--um->nfree];
		return 0;
	}
	if (um->next_id >= OTELPROF_MAX_UNWIND_FILES)
		return -ENOSPC;
	*id = um->next_id++;
	return 0;
}

static void release_id(struct unwind_maps *um, uint32_t id)
{
	/* free_ids never holds more than OTELPROF_MAX_UNWIND_FILES ids. */
	if (!um->free_ids) {
		um->free_ids = calloc(OTELPROF_MAX_UNWIND_FILES,
				      sizeof(*um->free_ids));
		if (!um->free_ids)
			return; /* the id is lost, nothing worse */
	}
	um->free_ids[um->nfree++] = id;
}

static size_t rows_bytes(uint32_t nrows)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return ((size_t)nrows * sizeof(struct unwind_packed_row) + page - 1) /
	       page * page;
}

static int create_rows_array(uint32_t nrows)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts,
		    .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "otelprof_rows",
				sizeof(uint32_t),
				sizeof(struct unwind_packed_row), nrows, &opts);

	return fd < 0 ? -errno : fd;
}

/* Map fd (nrows rows) and publish it under a new id: the one array-of-maps
 * update, and so the one grace period, a chunk costs. Takes fd. */
static int add_chunk(struct unwind_maps *um, int fd, uint32_t nrows,
		     bool shared, uint32_t *id)
{
	struct unwind_chunk *c = calloc(1, sizeof(*c));
	int err;

	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	c->nrows = nrows;
	c->shared = shared;
	c->map_len = rows_bytes(nrows);
	/* fd < 0: no kernel (tests, tools): the chunk is plain memory, read
	 * by the same walk. */
	c->rows = fd >= 0 ? mmap(NULL, c->map_len, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, 0)
			  : mmap(NULL, c->map_len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->rows == MAP_FAILED) {
		err = -errno;
		c->rows = NULL;
		chunk_destroy(c);
		return err;
	}
	if (shared) {
		c->free = malloc(sizeof(*c->free));
		if (!c->free) {
			chunk_destroy(c);
			return -ENOMEM;
		}
		c->free[0].off = 0;
		c->free[0].len = nrows;
		c->nfree = c->capfree = 1;
	}
	err = alloc_id(um, id);
	if (err) {
		chunk_destroy(c);
		return err;
	}
	if (fd >= 0 && bpf_map_update_elem(um->files_fd, id, &fd, BPF_ANY)) {
		err = -errno;
		release_id(um, *id);
		chunk_destroy(c);
		return err;
	}
	um->chunks[*id] = c;
	um->counters.bytes += c->map_len;
	return 0;
}

static void drop_chunk(struct unwind_maps *um, uint32_t id)
{
	struct unwind_chunk *c = um->chunks[id];

	if (c->fd >= 0)
		bpf_map_delete_elem(um->files_fd, &id);
	um->chunks[id] = NULL;
	um->counters.bytes -= c->map_len;
	chunk_destroy(c);
	release_id(um, id);
}

/* First fit among the free extents of c. */
static bool extent_alloc(struct unwind_chunk *c, uint32_t n, uint32_t *off)
{
	for (uint32_t i = 0; i < c->nfree; i++) {
		if (c->free[i].len < n)
			continue;
		*off = c->free[i].off;
		c->free[i].off += n;
		c->free[i].len -= n;
		if (!c->free[i].len) {
			memmove(&c->free[i], &c->free[i + 1],
				(c->nfree - i - 1) * sizeof(*c->free));
			c->nfree--;
		}
		c->used += n;
		return true;
	}
	return false;
}

/* Give [off, off + n) back, merged with its neighbours. */
static void extent_free(struct unwind_chunk *c, uint32_t off, uint32_t n)
{
	uint32_t i = 0;

	while (i < c->nfree && c->free[i].off < off)
		i++;
	c->used -= n;
	if (i > 0 && c->free[i - 1].off + c->free[i - 1].len == off) {
		c->free[i - 1].len += n;
		if (i < c->nfree && off + n == c->free[i].off) {
			c->free[i - 1].len += c->free[i].len;
			memmove(&c->free[i], &c->free[i + 1],
				(c->nfree - i - 1) * sizeof(*c->free));
			c->nfree--;
		}
		return;
	}
	if (i < c->nfree && off + n == c->free[i].off) {
		c->free[i].off = off;
		c->free[i].len += n;
		return;
	}
	if (c->nfree == c->capfree) {
		uint32_t ncap = c->capfree * 2 + 4;
		struct unwind_extent *nv = realloc(c->free, ncap * sizeof(*nv));

		if (!nv)
			return; /* the rows are lost to reuse, nothing worse */
		c->free = nv;
		c->capfree = ncap;
	}
	memmove(&c->free[i + 1], &c->free[i],
		(c->nfree - i) * sizeof(*c->free));
	c->free[i].off = off;
	c->free[i].len = n;
	c->nfree++;
}

/* Rows of t a chunk can hold: a packed row keeps 32 bits of pc, so code
 * above 4 GiB of vaddr is left out (the walk takes the validated
 * frame-pointer fallback there; fill_rows counts them). */
static uint32_t representable_rows(const struct unwind_table *t)
{
	uint32_t n = 0;

	while (n < t->nrows && n < UINT32_MAX &&
	       t->rows[n].pc <= UNWIND_PACKED_MAX_PC)
		n++;
	return n;
}

/* Pack the first n rows of t; the rows it cannot pack, and the n..nrows
 * left out, are added to *unrepresentable. */
static void fill_rows(const struct unwind_table *t, uint32_t n,
		      struct unwind_packed_row *rows, uint64_t *unrepresentable)
{
	*unrepresentable += t->nrows - n;
	for (uint32_t i = 0; i < n; i++)
		if (!unwind_row_pack(&t->rows[i], &rows[i]))
			(*unrepresentable)++;
}

/* The page index, then the rows: ix + n rows from out. */
static void fill_table(const struct unwind_table *t, uint32_t n, uint32_t ix,
		       uint8_t shift, struct unwind_packed_row *out,
		       uint64_t *unrepresentable)
{
	if (ix)
		unwind_row_index_fill(t, n, shift, out, ix);
	fill_rows(t, n, out + ix, unrepresentable);
}

int unwind_maps_create_array(const struct unwind_table *t, int *map_fd,
			     uint32_t *nrows, uint32_t *index_rows,
			     uint64_t *unrepresentable)
{
	struct unwind_packed_row *rows;
	size_t len;
	uint32_t n, ix;
	uint8_t shift;
	int fd, err;

	*map_fd = -1;
	*nrows = 0;
	*index_rows = 0;
	if (!t->nrows)
		return -ENOENT;
	n = representable_rows(t);
	if (!n) {
		*unrepresentable += t->nrows;
		return -ERANGE;
	}
	ix = unwind_row_index_rows(t, n, &shift);
	fd = create_rows_array(ix + n);
	if (fd < 0)
		return fd;
	/* Written through a shared mapping: a batch update copies and
	 * checks every 8-byte row on its own (half the cost of a build). */
	len = rows_bytes(ix + n);
	rows = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (rows == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	fill_table(t, n, ix, shift, rows, unrepresentable);
	munmap(rows, len);
	*map_fd = fd;
	*nrows = n;
	*index_rows = ix;
	return 0;
}

int unwind_maps_register(struct unwind_maps *um, int map_fd, uint32_t nrows,
			 uint32_t index_rows, struct unwind_slot *slot)
{
	int err = add_chunk(um, map_fd, index_rows + nrows, false, &slot->id);

	if (err) {
		memset(slot, 0, sizeof(*slot));
		um->counters.load_errors++;
		return err;
	}
	slot->base = index_rows;
	slot->nrows = nrows;
	slot->index_rows = index_rows;
	um->counters.files++;
	um->counters.rows += index_rows + nrows;
	return 0;
}

/* The size of the next shared chunk: twice the biggest shared one held,
 * from UNWIND_SHARED_FIRST_ROWS up to UNWIND_SHARED_CHUNK_ROWS (see
 * unwind_maps.h). */
static uint32_t next_shared_rows(const struct unwind_maps *um)
{
	uint32_t rows = UNWIND_SHARED_FIRST_ROWS / 2;

	for (uint32_t id = 1; um->chunks && id < um->next_id; id++) {
		const struct unwind_chunk *c = um->chunks[id];

		if (c && c->shared && c->nrows > rows)
			rows = c->nrows;
	}
	rows *= 2;
	return rows < UNWIND_SHARED_CHUNK_ROWS ? rows
					       : UNWIND_SHARED_CHUNK_ROWS;
}

int unwind_maps_add_file(struct unwind_maps *um, const struct unwind_table *t,
			 struct unwind_slot *slot)
{
	uint64_t unrep = 0;
	uint32_t n, id, off = 0, ix;
	uint8_t shift;
	int err, fd;

	memset(slot, 0, sizeof(*slot));
	if (!t->nrows)
		return -ENOENT;
	n = representable_rows(t);
	if (!n) {
		um->counters.rows_unrepresentable += t->nrows;
		um->counters.load_errors++;
		return -ERANGE;
	}
	ix = unwind_row_index_rows(t, n, &shift);
	if (n >= UNWIND_OWN_CHUNK_ROWS && um->files_fd < 0) {
		err = add_chunk(um, -1, ix + n, false, &id);
		if (err) {
			um->counters.load_errors++;
			return err;
		}
		fill_table(t, n, ix, shift, um->chunks[id]->rows, &unrep);
		um->counters.rows_unrepresentable += unrep;
		*slot = (struct unwind_slot){
			.id = id, .base = ix, .nrows = n, .index_rows = ix};
		um->counters.files++;
		um->counters.rows += ix + n;
		return 0;
	}
	if (n >= UNWIND_OWN_CHUNK_ROWS) {
		uint32_t nrows, index_rows;

		err = unwind_maps_create_array(t, &fd, &nrows, &index_rows,
					       &unrep);
		um->counters.rows_unrepresentable += unrep;
		if (err) {
			um->counters.load_errors++;
			return err;
		}
		return unwind_maps_register(um, fd, nrows, index_rows, slot);
	}
	for (id = 1; um->chunks && id < um->next_id; id++) {
		struct unwind_chunk *c = um->chunks[id];

		if (c && c->shared && extent_alloc(c, ix + n, &off))
			break;
	}
	if (!um->chunks || id >= um->next_id) {
		uint32_t rows = next_shared_rows(um);

		fd = um->files_fd >= 0 ? create_rows_array(rows) : -1;
		if (fd < 0 && um->files_fd >= 0) {
			um->counters.load_errors++;
			return fd;
		}
		err = add_chunk(um, fd, rows, true, &id);
		if (err) {
			um->counters.load_errors++;
			return err;
		}
		extent_alloc(um->chunks[id], ix + n, &off);
	}
	fill_table(t, n, ix, shift, um->chunks[id]->rows + off, &unrep);
	um->counters.rows_unrepresentable += unrep;
	slot->id = id;
	slot->base = off + ix;
	slot->nrows = n;
	slot->index_rows = ix;
	um->counters.files++;
	um->counters.rows += ix + n;
	return 0;
}

void unwind_maps_remove_file(struct unwind_maps *um, struct unwind_slot *slot)
{
	struct unwind_chunk *c;

	if (!slot->id || !um->chunks || !(c = um->chunks[slot->id]))
		return;
	um->counters.files--;
	um->counters.rows -= slot->index_rows + slot->nrows;
	if (!c->shared) {
		drop_chunk(um, slot->id);
	} else {
		extent_free(c, slot->base - slot->index_rows,
			    slot->index_rows + slot->nrows);
		/* An empty shared chunk goes unless it is the only one. */
		if (!c->used) {
			bool other = false;

			for (uint32_t id = 1; id < um->next_id && !other; id++)
				other = id != slot->id && um->chunks[id] &&
					um->chunks[id]->shared;
			if (other)
				drop_chunk(um, slot->id);
		}
	}
	memset(slot, 0, sizeof(*slot));
}

struct unwind_chunk *unwind_maps_chunk(struct unwind_maps *um, uint32_t id)
{
	if (!id || id >= OTELPROF_MAX_UNWIND_FILES || !um->chunks)
		return NULL;
	return um->chunks[id];
}

int unwind_maps_set_big(struct unwind_maps *um, int fd)
{
	size_t len = OTELPROF_BIG_MAPPINGS * sizeof(*um->big);
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (m == MAP_FAILED) {
		um->counters.big_refused++;
		return -errno;
	}
	um->big_ext.free = malloc(sizeof(*um->big_ext.free));
	if (!um->big_ext.free) {
		um->counters.big_refused++;
		munmap(m, len);
		return -ENOMEM;
	}
	um->big_ext.free[0].off = 0;
	um->big_ext.free[0].len = OTELPROF_BIG_MAPPINGS;
	um->big_ext.nfree = um->big_ext.capfree = 1;
	um->big_ext.nrows = OTELPROF_BIG_MAPPINGS;
	um->big_fd = fd;
	um->big = m;
	return 0;
}

struct otelprof_bpf_mapping *unwind_maps_big_alloc(struct unwind_maps *um,
						   uint32_t n, uint32_t *base)
{
	if (!um->big || !n || !extent_alloc(&um->big_ext, n, base)) {
		um->counters.big_refused++;
		return NULL;
	}
	return um->big + *base;
}

void unwind_maps_big_free(struct unwind_maps *um, uint32_t base, uint32_t n)
{
	if (um->big && n)
		extent_free(&um->big_ext, base, n);
}

int unwind_maps_set_process(struct unwind_maps *um, uint32_t pid,
			    const struct otelprof_bpf_proc *proc)
{
	if (bpf_map_update_elem(um->procs_fd, &pid, proc, BPF_ANY)) {
		um->counters.procs_errors++;
		return -errno;
	}
	return 0;
}

void unwind_maps_remove_process(struct unwind_maps *um, uint32_t pid)
{
	bpf_map_delete_elem(um->procs_fd, &pid);
}
