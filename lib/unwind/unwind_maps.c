// SPDX-License-Identifier: Apache-2.0
#include "unwind/unwind_maps.h"

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
}

void unwind_maps_free(struct unwind_maps *um)
{
	free(um->free_ids);
	um->free_ids = NULL;
	um->nfree = 0;
}

static int alloc_id(struct unwind_maps *um, uint32_t *id)
{
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

/* Returns false when the row cannot be represented (stored INVALID). */
static bool to_bpf_row(const struct unwind_row *in,
		       struct otelprof_bpf_row *out)
{
	uint8_t base = in->cfa_base, fp = in->fp_rule;
	bool uses_off = base == UNWIND_CFA_SP || base == UNWIND_CFA_FP;

	memset(out, 0, sizeof(*out));
	out->pc = (uint32_t)in->pc;
	if (uses_off && (in->cfa_offset % 8 || in->cfa_offset / 8 > INT16_MAX ||
			 in->cfa_offset / 8 < INT16_MIN))
		base = UNWIND_CFA_INVALID;
	if (fp == UNWIND_FP_CFA_OFFSET &&
	    (in->fp_offset % 8 || in->fp_offset / 8 > INT8_MAX ||
	     in->fp_offset / 8 < INT8_MIN))
		base = UNWIND_CFA_INVALID;
	if (base == UNWIND_CFA_INVALID) {
		out->rules = UNWIND_CFA_INVALID;
		return in->cfa_base == UNWIND_CFA_INVALID;
	}
	out->cfa_off8 = uses_off ? (int16_t)(in->cfa_offset / 8) : 0;
	out->fp_off8 =
		fp == UNWIND_FP_CFA_OFFSET ? (int8_t)(in->fp_offset / 8) : 0;
	out->rules = (uint8_t)(base | fp << 4);
	return true;
}

int unwind_maps_create_array(const struct unwind_table *t, int *map_fd,
			     uint32_t *nrows, uint64_t *unrepresentable)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts,
		    .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	struct otelprof_bpf_row *rows;
	size_t len, page = (size_t)sysconf(_SC_PAGESIZE);
	uint32_t n = 0;
	int fd, err;

	*map_fd = -1;
	*nrows = 0;
	if (!t->nrows)
		return -ENOENT;
	/* The BPF row keeps 32 bits of pc: code above 4 GiB of vaddr is
	 * left out (those frames fall back to frame pointers). */
	while (n < t->nrows && t->rows[n].pc <= UINT32_MAX)
		n++;
	if (!n)
		return -ERANGE;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "otelprof_rows",
			    sizeof(uint32_t), sizeof(struct otelprof_bpf_row),
			    n, &opts);
	if (fd < 0)
		return -errno;
	/* Written through a shared mapping: a batch update copies and
	 * checks every 8-byte row on its own (half the cost of a build). */
	len = ((size_t)n * sizeof(*rows) + page - 1) / page * page;
	rows = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (rows == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!to_bpf_row(&t->rows[i], &rows[i]))
			(*unrepresentable)++;
	munmap(rows, len);
	*map_fd = fd;
	*nrows = n;
	return 0;
}

int unwind_maps_register(struct unwind_maps *um, int map_fd, uint32_t nrows,
			 uint32_t *id)
{
	int err = alloc_id(um, id);

	if (err) {
		*id = 0;
		um->load_errors++;
		return err;
	}
	if (bpf_map_update_elem(um->files_fd, id, &map_fd, BPF_ANY)) {
		err = -errno;
		release_id(um, *id);
		*id = 0;
		um->load_errors++;
		return err;
	}
	um->files++;
	um->rows += nrows;
	um->bytes += (uint64_t)nrows * sizeof(struct otelprof_bpf_row);
	return 0;
}

int unwind_maps_add_file(struct unwind_maps *um, const struct unwind_table *t,
			 uint32_t *id, uint32_t *nrows, int *map_fd)
{
	uint64_t unrep = 0;
	int err;

	*id = 0;
	err = unwind_maps_create_array(t, map_fd, nrows, &unrep);
	um->rows_unrepresentable += unrep;
	if (err) {
		um->load_errors++;
		return err;
	}
	err = unwind_maps_register(um, *map_fd, *nrows, id);
	if (err) {
		close(*map_fd);
		*map_fd = -1;
		*nrows = 0;
	}
	return err;
}

void unwind_maps_remove_file(struct unwind_maps *um, uint32_t id,
			     uint64_t nrows)
{
	if (!id)
		return;
	if (!bpf_map_delete_elem(um->files_fd, &id)) {
		um->files--;
		um->rows -= nrows;
		um->bytes -= nrows * sizeof(struct otelprof_bpf_row);
		release_id(um, id);
	}
}

int unwind_maps_read_row(int map_fd, uint32_t idx, struct otelprof_bpf_row *row)
{
	return bpf_map_lookup_elem(map_fd, &idx, row) ? -errno : 0;
}

int unwind_maps_set_process(struct unwind_maps *um, uint32_t pid,
			    const struct otelprof_bpf_proc *proc)
{
	if (bpf_map_update_elem(um->procs_fd, &pid, proc, BPF_ANY)) {
		um->procs_errors++;
		return -errno;
	}
	um->procs_set++;
	return 0;
}

void unwind_maps_remove_process(struct unwind_maps *um, uint32_t pid)
{
	bpf_map_delete_elem(um->procs_fd, &pid);
}
