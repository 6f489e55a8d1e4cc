// SPDX-License-Identifier: Apache-2.0
/*
 * What the stages keep of each file, when the file table (lib/files/)
 * adds a file or is about to free one. The agent is the table's only
 * listener, and the file store's; the steps run here, in this
 * order, because it matters:
 *
 *   added    1. file store   its symbols, names, lines (lib/filestore/
 *                            file_cache.c), inline or, for a big file,
 *                            on the loader thread
 *            2. unwinder     its unwind table, built from the same fd and
 *                            loaded into the kernel (lib/unwind/): it
 *                            needs the symbols' load segments; a file read
 *                            on the loader stays pending until step 3
 *   read     3. unwinder     (loader thread done) the table, as in 2; the
 *                            processes mapping it are told afterwards
 *                            (process_sync.c, PROCESS_FILES_READY)
 *   freed    1. unwinder     its rows leave the kernel
 *            2. file store   what it kept goes
 *   before   process table   the files its recently active processes
 *   evicting                 map are stamped used (eviction order)
 *
 * Files are added while a stage resolves a mapping
 * (process_mapping_file): the report is made there, before the lookup
 * returns, with the verified fd, valid until the report is handled.
 */
#include "agent/agent.h"

static int on_added(void *ctx, struct file *f, const struct file_added *a)
{
	struct otelprof *p = ctx;
	int r = file_cache_file_added(&p->symfiles, f, a);

	if (r < 0)
		return r; /* the file is dropped again: on_free */
	if (r > 0)
		process_unwind_file_loading(&p->unwinder, f);
	else
		process_unwind_file_ready(&p->unwinder, f, a->fd, a->mem,
					  a->len);
	return 0;
}

static void on_free(void *ctx, struct file *f)
{
	struct otelprof *p = ctx;

	process_unwind_file_freed(&p->unwinder, f);
	file_cache_file_freed(&p->symfiles, f);
}

static void on_read(void *ctx, struct file *f, int fd)
{
	struct otelprof *p = ctx;

	process_unwind_file_ready(&p->unwinder, f, fd, NULL, 0);
	file_mark_changed(f);
}

static void before_evict(void *ctx)
{
	struct otelprof *p = ctx;

	process_table_stamp_files(&p->procs);
}

void agent_file_sync_start(struct otelprof *p)
{
	struct file_table_listener l = {p, on_added, on_free};
	struct file_cache_listener cl = {p, on_read, before_evict};

	file_table_set_listener(&p->files, &l);
	file_cache_set_listener(&p->symfiles, &cl);
}

int agent_finish_files(struct otelprof *p)
{
	process_unwind_take_wakeup(&p->unwinder);
	/* Files read on the loader thread: step 3 for each, then the
	 * processes that map them. */
	if (file_cache_finish_loads(&p->symfiles) > 0) {
		process_table_files_changed(&p->procs);
		agent_sync_processes(p);
	}
	return process_unwind_finish_builds(&p->unwinder);
}

bool agent_files_busy(struct otelprof *p)
{
	return process_unwind_busy(&p->unwinder) ||
	       file_cache_loads_busy(&p->symfiles);
}
