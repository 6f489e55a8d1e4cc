// SPDX-License-Identifier: Apache-2.0
#include "filestore/file_loader.h"
#include "elf/debug_info.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void file_load_run(struct file_load_result *r, int fd, const char *path,
		   int root_fd, struct mem_account *acct,
		   const atomic_bool *cancel)
{
	memset(r, 0, sizeof(*r));
	r->load_err = elf_symbols_load_fd(fd, &r->sym, acct);
	if (r->load_err == -ENOMEM || (cancel && atomic_load(cancel)))
		return;
	/* Malformed in whole (not an ELF we can read) or in part (broken
	 * section table or symbol entries: what was readable is kept). */
	if (!r->load_err)
		r->debug_source = debug_info_attach(&r->sym, fd, path, root_fd);
	/* DWARF (the whole file in memory) is opened when a frame of the
	 * file first needs a line (file_cache_load_lines). */
	if (cancel && atomic_load(cancel))
		return;
	if (elf_htlhash_fd(fd, r->htlhash))
		r->htlhash[0] = '\0';
}

void file_loader_init(struct file_loader *l)
{
	memset(l, 0, sizeof(*l));
	work_queue_init(&l->queue, FILE_LOADER_MAX_JOBS);
}

static void run_load(void *ctx, unsigned worker, struct work_item *it)
{
	struct file_loader *l = ctx;
	struct file_load_job *j = file_load_job_of(it);
	uint64_t t0 = mono_ns();

	(void)worker;
	/* Only the job's own memory (and the file's account, which is
	 * atomic) is touched here. */
	file_load_run(&j->r, j->fd, j->path, j->root_fd, j->acct,
		      &l->queue.stopping);
	j->ns = mono_ns() - t0;
}

int file_loader_start(struct file_loader *l, int notify_fd)
{
	int n = work_queue_start(&l->queue, 1, run_load, l, notify_fd);

	return n < 0 ? n : 0;
}

void file_loader_job_free(struct file_load_job *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	if (j->root_fd >= 0)
		close(j->root_fd);
	free(j->path);
	free(j);
}

int file_loader_submit(struct file_loader *l, struct elf_file *file,
		       struct mem_account *acct, int fd, const char *path,
		       int root_fd)
{
	struct file_load_job *j;
	int e;

	if (!l->queue.started)
		return -ENODEV;
	if (work_queue_full(&l->queue)) {
		l->queue_full++;
		return -EAGAIN;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->file = file;
	j->acct = acct;
	j->root_fd = -1;
	j->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (root_fd >= 0)
		j->root_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
	j->path = strdup(path ? path : "");
	if (j->fd < 0 || (root_fd >= 0 && j->root_fd < 0) || !j->path) {
		file_loader_job_free(j);
		return -ENOMEM;
	}
	/* First come, first loaded. */
	e = work_queue_submit(&l->queue, &j->item);
	if (e) {
		file_loader_job_free(j);
		return e;
	}
	l->submitted++;
	return 0;
}

struct work_item *file_loader_take_done(struct file_loader *l)
{
	return work_queue_take_done(&l->queue);
}

bool file_loader_busy(struct file_loader *l)
{
	return work_queue_busy(&l->queue);
}

struct work_item *file_loader_stop(struct file_loader *l)
{
	return work_queue_stop(&l->queue);
}
