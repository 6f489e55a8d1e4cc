// SPDX-License-Identifier: Apache-2.0
#include "unwind_alone.h"

void unwind_alone_sync(struct process_unwind *pu)
{
	struct process_change c;
	struct process *p;

	while ((p = process_table_take_removed(pu->procs))) {
		process_unwind_forget(pu, p);
		process_table_release(pu->procs, p);
	}
	while ((p = process_table_take_changed(pu->procs, &c)))
		process_unwind_sync(pu, p);
}

static int file_added(void *ctx, struct file *f, const struct file_added *a)
{
	struct process_unwind *pu = ctx;
	int r = file_cache_file_added(pu->files, f, a);

	if (r < 0)
		return r;
	if (r > 0)
		process_unwind_file_loading(pu, f);
	else
		process_unwind_file_ready(pu, f, a->fd, a->mem, a->len);
	return 0;
}

static void file_freed(void *ctx, struct file *f)
{
	struct process_unwind *pu = ctx;

	process_unwind_file_freed(pu, f);
	file_cache_file_freed(pu->files, f);
}

static void file_read(void *ctx, struct file *f, int fd)
{
	process_unwind_file_ready(ctx, f, fd, NULL, 0);
	file_mark_changed(f);
}

static void before_evict(void *ctx)
{
	struct process_unwind *pu = ctx;

	process_table_stamp_files(pu->procs);
}

void unwind_alone_listen(struct process_unwind *pu)
{
	struct file_table_listener fl = {pu, file_added, file_freed};
	struct file_cache_listener cl = {pu, file_read, before_evict};

	file_table_set_listener(pu->procs->files, &fl);
	file_cache_set_listener(pu->files, &cl);
}
