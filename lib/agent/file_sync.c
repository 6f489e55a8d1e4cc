// SPDX-License-Identifier: Apache-2.0
/*
 * What the stages keep of each file, when the file cache has read a file's
 * symbols (inline, or on the loader thread and taken since) or is about to
 * free it. The agent is the cache's only listener; the steps run here, in
 * this order:
 *
 *   read     1. symbolizer  symbols, names, lines (lib/symbolize/, done
 *                           by the cache before it reports)
 *            2. unwinder    the file's unwind table, built from the same
 *                           fd and installed into the kernel (lib/unwind/)
 *   loading     unwinder    pending (no table before symbols)
 *   freed    1. unwinder    its rows leave the kernel
 *            2. symbolizer  symbols freed (by the cache after it reports)
 *   before   process table  files its recently active processes map are
 *   evicting                stamped as used then (eviction order)
 *
 * The processes that map a file read since learn it from the process
 * table's change reports (process_sync.c: PROCESS_FILES_READY).
 */
#include "agent/agent.h"

static void on_ready(void *ctx, struct elf_file *f, int fd, const void *mem,
		     size_t len)
{
	struct otelprof *p = ctx;

	process_unwind_file_ready(&p->unwinder, f, fd, mem, len);
}

static void on_loading(void *ctx, struct elf_file *f)
{
	struct otelprof *p = ctx;

	process_unwind_file_loading(&p->unwinder, f);
}

static void on_free(void *ctx, struct elf_file *f)
{
	struct otelprof *p = ctx;

	process_unwind_file_freed(&p->unwinder, f);
}

static void before_evict(void *ctx)
{
	struct otelprof *p = ctx;

	process_table_stamp_files(&p->procs);
}

void agent_file_sync_start(struct otelprof *p)
{
	struct file_cache_listener l = {p, on_ready, on_loading, on_free,
					before_evict};

	file_cache_set_listener(&p->files, &l);
}
