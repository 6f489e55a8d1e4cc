// SPDX-License-Identifier: Apache-2.0
/*
 * The per-file steps over the stages a file passes through (the order and
 * why: lib/agent/file_sync.c). Only the stages' own headers here, so that
 * tests and fuzz targets without the agent run the same steps.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/file_sync.h"

/* The budget is full: the next load evicts by last use, so the files of
 * recently active processes are stamped first. */
static void stamp_if_full(const struct file_stages *st)
{
	if (file_cache_full(st->symfiles))
		process_table_stamp_files(st->procs);
}

/* New file f, read by every stage. 0, or a negative errno: f was
 * discarded (-EAGAIN: the loader's queue is full, try later). */
static int read_new_file(const struct file_stages *st, struct file *f,
			 const struct file_added *a)
{
	int r;

	stamp_if_full(st);
	r = file_cache_file_added(st->symfiles, f, a);
	if (r < 0) {
		process_unwind_file_freed(st->unwinder, f);
		file_cache_file_freed(st->symfiles, f);
		file_table_discard(st->files, f);
		return r;
	}
	if (r > 0)
		process_unwind_file_loading(st->unwinder, f);
	else
		process_unwind_file_ready(st->unwinder, f, a->fd, a->mem,
					  a->len);
	return 0;
}

/* The vDSO (ours: the same kernel's image in every process). */
static struct file *vdso_file(const struct file_stages *st)
{
	struct file_id id = FILE_ID_VDSO;
	struct file *f = file_table_find(st->files, &id);
	struct file_added a = {-1, NULL, 0, -1};
	bool added;
	void *image;
	int err;

	if (f)
		return f;
	image = process_vdso_image(&a.len);
	a.mem = image;
	f = file_table_get_mem(st->files, &id, "[vdso]", &added, &err);
	if (f && added && read_new_file(st, f, &a))
		f = NULL;
	free(image);
	return f;
}

struct file *file_stages_resolve(const struct file_stages *st,
				 struct process *proc, struct proc_mapping *m)
{
	bool added = false;
	int fd, err = 0;

	if (m->file_tried)
		return m->file;
	m->file_tried = 1;
	if (m->kind == PROC_MAPPING_VDSO) {
		m->file = vdso_file(st);
		return m->file;
	}
	if (m->kind != PROC_MAPPING_FILE)
		return NULL;
	fd = process_mapping_open(st->procs, proc, m);
	if (fd < 0)
		return NULL;
	m->file = file_table_get_fd(st->files, fd, m->path, proc->pid,
				    proc->serial, &added, &err);
	if (m->file && added) {
		struct file_added a = {fd, NULL, 0, -1};

		a.root_fd = process_root_open(st->procs, proc);
		err = read_new_file(st, m->file, &a);
		if (err)
			m->file = NULL;
		if (a.root_fd >= 0)
			close(a.root_fd);
	}
	if (err == -EAGAIN) {
		/* The loader's queue is full: again in a later pass. */
		m->file_tried = 0;
		process_table_defer_loads(st->procs, proc);
	}
	close(fd);
	return m->file;
}

void file_stages_resolve_all(const struct file_stages *st, struct process *proc)
{
	for (size_t i = 0; i < proc->maps.n; i++) {
		struct proc_mapping *m = &proc->maps.v[i];

		if (m->file_tried)
			continue;
		/* The pass's slice is spent: the rest in a later pass
		 * (process_table_resume_loads). */
		if (m->kind == PROC_MAPPING_FILE &&
		    process_table_slice_over(st->procs)) {
			process_table_defer_loads(st->procs, proc);
			return;
		}
		file_stages_resolve(st, proc, m);
	}
}

bool file_stages_reload(const struct file_stages *st, struct process *proc,
			const struct proc_mapping *m, struct elf_file *file)
{
	int fd, root_fd, err;

	if (!file_cache_reload_due(file))
		return false;
	fd = process_mapping_open(st->procs, proc, m);
	if (fd < 0)
		return false;
	root_fd = process_root_open(st->procs, proc);
	stamp_if_full(st);
	err = file_cache_reload(st->symfiles, file, fd, m->path, root_fd);
	if (root_fd >= 0)
		close(root_fd);
	close(fd);
	return !err;
}

bool file_stages_lines(const struct file_stages *st, struct process *proc,
		       const struct proc_mapping *m, struct elf_file *file,
		       bool go)
{
	int fd, err;

	if (!file_cache_lines_due(file, go))
		return false;
	fd = process_mapping_open(st->procs, proc, m);
	if (fd < 0)
		return false;
	stamp_if_full(st);
	err = file_cache_load_lines(st->symfiles, file, fd, go);
	close(fd);
	return !err;
}

void file_stages_forget_gone(const struct file_stages *st)
{
	struct file *f;

	while ((f = file_table_take_gone(st->files))) {
		process_unwind_file_freed(st->unwinder, f);
		file_cache_file_freed(st->symfiles, f);
		file_table_release(st->files, f);
	}
}

int file_stages_take_loads(const struct file_stages *st)
{
	struct file *f;
	int fd, n = 0;

	file_cache_finish_lookups(st->symfiles);
	while ((f = file_cache_take_load(st->symfiles, &fd))) {
		process_unwind_file_ready(st->unwinder, f, fd, NULL, 0);
		file_mark_changed(f);
		n++;
	}
	return n;
}
