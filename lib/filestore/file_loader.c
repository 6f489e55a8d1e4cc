// SPDX-License-Identifier: Apache-2.0
#include "filestore/file_loader.h"
#include "elf/debug_info.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
	if (cancel && atomic_load(cancel))
		return;
	if (!r->load_err && r->sym.has_dwarf)
		r->dwarf = dwarf_lines_open(fd, acct);
	if (cancel && atomic_load(cancel))
		return;
	if (elf_htlhash_fd(fd, r->htlhash))
		r->htlhash[0] = '\0';
}

void file_loader_init(struct file_loader *l)
{
	memset(l, 0, sizeof(*l));
	l->notify_fd = -1;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
}

static void *loader_main(void *arg)
{
	struct file_loader *l = arg;

	pthread_mutex_lock(&l->lock);
	for (;;) {
		struct file_load_job *j;
		uint64_t t0;

		while (!l->todo && !l->stop)
			pthread_cond_wait(&l->cond, &l->lock);
		if (l->stop)
			break;
		j = l->todo;
		l->todo = j->next;
		if (!l->todo)
			l->todo_tail = NULL;
		j->next = NULL;
		pthread_mutex_unlock(&l->lock);
		/* Only the job's own memory (and the file's account, which
		 * is atomic) is touched here. */
		t0 = mono_ns();
		file_load_run(&j->r, j->fd, j->path, j->root_fd, j->acct,
			      &l->cancel);
		j->ns = mono_ns() - t0;
		pthread_mutex_lock(&l->lock);
		j->next = l->done;
		l->done = j;
		if (l->notify_fd >= 0) {
			uint64_t one = 1;

			if (write(l->notify_fd, &one, sizeof(one)) < 0) {
				/* full: the reader is woken already */
			}
		}
		/* A load's scratch sits in this thread's arena: give it
		 * back once the queue is empty. */
		if (!l->todo) {
			pthread_mutex_unlock(&l->lock);
			malloc_trim(0);
			pthread_mutex_lock(&l->lock);
		}
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

int file_loader_start(struct file_loader *l, int notify_fd)
{
	int e;

	if (l->started)
		return 0;
	l->notify_fd = notify_fd;
	l->stop = false;
	atomic_store(&l->cancel, false);
	e = pthread_create(&l->thread, NULL, loader_main, l);
	if (e)
		return -e;
	l->started = true;
	return 0;
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

	if (!l->started)
		return -ENODEV;
	pthread_mutex_lock(&l->lock);
	if (l->jobs >= FILE_LOADER_MAX_JOBS) {
		l->queue_full++;
		pthread_mutex_unlock(&l->lock);
		return -EAGAIN;
	}
	pthread_mutex_unlock(&l->lock);
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
	pthread_mutex_lock(&l->lock);
	/* First come, first loaded. */
	if (l->todo_tail)
		l->todo_tail->next = j;
	else
		l->todo = j;
	l->todo_tail = j;
	l->jobs++;
	l->submitted++;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

struct file_load_job *file_loader_take_done(struct file_loader *l)
{
	struct file_load_job *j, *rev = NULL;

	if (!l->started)
		return NULL;
	pthread_mutex_lock(&l->lock);
	j = l->done;
	l->done = NULL;
	/* In the order they finished. */
	while (j) {
		struct file_load_job *next = j->next;

		j->next = rev;
		rev = j;
		l->jobs--;
		j = next;
	}
	pthread_mutex_unlock(&l->lock);
	return rev;
}

bool file_loader_busy(struct file_loader *l)
{
	bool busy;

	if (!l->started)
		return false;
	pthread_mutex_lock(&l->lock);
	busy = l->jobs > 0;
	pthread_mutex_unlock(&l->lock);
	return busy;
}

struct file_load_job *file_loader_stop(struct file_loader *l)
{
	struct file_load_job *all, *j;

	if (!l->started)
		return NULL;
	atomic_store(&l->cancel, true);
	pthread_mutex_lock(&l->lock);
	l->stop = true;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->thread, NULL);
	l->started = false;
	/* Finished and never started ones alike. */
	all = l->done;
	for (j = all; j && j->next; j = j->next)
		;
	if (j)
		j->next = l->todo;
	else
		all = l->todo;
	l->todo = l->todo_tail = l->done = NULL;
	l->jobs = 0;
	l->notify_fd = -1;
	return all;
}
