// SPDX-License-Identifier: Apache-2.0
#include "util/work_queue.h"

#include <errno.h>
#include <malloc.h>
#include <string.h>
#include <unistd.h>

void work_queue_init(struct work_queue *q, uint32_t max_jobs)
{
	memset(q, 0, sizeof(*q));
	q->max_jobs = max_jobs;
	q->notify_fd = -1;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
}

void work_queue_destroy(struct work_queue *q)
{
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
}

static void *worker_main(void *arg)
{
	struct work_queue_worker *w = arg;
	struct work_queue *q = w->q;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct work_item *it;

		while (!q->todo && !atomic_load(&q->stopping))
			pthread_cond_wait(&q->cond, &q->lock);
		if (atomic_load(&q->stopping))
			break;
		it = q->todo;
		q->todo = it->next;
		if (!q->todo)
			q->todo_tail = NULL;
		it->next = NULL;
		pthread_mutex_unlock(&q->lock);
		q->run(q->ctx, w->index, it);
		pthread_mutex_lock(&q->lock);
		if (q->done_tail)
			q->done_tail->next = it;
		else
			q->done = it;
		q->done_tail = it;
		/* Wake the drain thread: work may be waiting for this. */
		if (q->notify_fd >= 0) {
			uint64_t one = 1;

			if (write(q->notify_fd, &one, sizeof(one)) < 0) {
				/* full: the reader is woken already */
			}
		}
		if (!q->todo) {
			pthread_mutex_unlock(&q->lock);
			malloc_trim(0);
			pthread_mutex_lock(&q->lock);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int work_queue_start(struct work_queue *q, unsigned nthreads, work_run_fn run,
		     void *ctx, int notify_fd)
{
	int e = EINVAL;

	if (q->started)
		return (int)q->nthreads;
	if (nthreads > WORK_QUEUE_MAX_THREADS)
		nthreads = WORK_QUEUE_MAX_THREADS;
	q->run = run;
	q->ctx = ctx;
	q->notify_fd = notify_fd;
	atomic_store(&q->stopping, false);
	q->nthreads = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		struct work_queue_worker *w = &q->workers[i];

		w->q = q;
		w->index = i;
		e = pthread_create(&w->thread, NULL, worker_main, w);
		if (e)
			break;
		q->nthreads++;
	}
	if (!q->nthreads) {
		q->notify_fd = -1;
		return -e;
	}
	q->started = true;
	return (int)q->nthreads;
}

bool work_queue_full(struct work_queue *q)
{
	bool full;

	pthread_mutex_lock(&q->lock);
	full = q->max_jobs && q->jobs >= q->max_jobs;
	pthread_mutex_unlock(&q->lock);
	return full;
}

int work_queue_submit(struct work_queue *q, struct work_item *it)
{
	if (!q->started)
		return -ENODEV;
	pthread_mutex_lock(&q->lock);
	if (q->max_jobs && q->jobs >= q->max_jobs) {
		pthread_mutex_unlock(&q->lock);
		return -EAGAIN;
	}
	it->next = NULL;
	if (q->todo_tail)
		q->todo_tail->next = it;
	else
		q->todo = it;
	q->todo_tail = it;
	q->jobs++;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

struct work_item *work_queue_take_done(struct work_queue *q)
{
	struct work_item *list;

	pthread_mutex_lock(&q->lock);
	list = q->done;
	for (struct work_item *it = list; it; it = it->next)
		q->jobs--;
	q->done = q->done_tail = NULL;
	pthread_mutex_unlock(&q->lock);
	return list;
}

void work_queue_put_back(struct work_queue *q, struct work_item *list)
{
	struct work_item *last = list;
	uint32_t n = 1;

	if (!list)
		return;
	while (last->next) {
		last = last->next;
		n++;
	}
	pthread_mutex_lock(&q->lock);
	last->next = q->done;
	if (!q->done)
		q->done_tail = last;
	q->done = list;
	q->jobs += n;
	pthread_mutex_unlock(&q->lock);
}

bool work_queue_busy(struct work_queue *q)
{
	bool busy;

	pthread_mutex_lock(&q->lock);
	busy = q->jobs > 0;
	pthread_mutex_unlock(&q->lock);
	return busy;
}

bool work_queue_waiting(struct work_queue *q)
{
	bool waiting;

	pthread_mutex_lock(&q->lock);
	waiting = q->todo || q->done;
	pthread_mutex_unlock(&q->lock);
	return waiting;
}

struct work_item *work_queue_stop(struct work_queue *q)
{
	struct work_item *all;

	if (!q->started)
		return NULL;
	pthread_mutex_lock(&q->lock);
	atomic_store(&q->stopping, true);
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	if (q->wake)
		q->wake(q->ctx);
	for (unsigned i = 0; i < q->nthreads; i++)
		pthread_join(q->workers[i].thread, NULL);
	q->nthreads = 0;
	q->started = false;
	/* Finished and never started ones alike. */
	if (q->done_tail) {
		q->done_tail->next = q->todo;
		all = q->done;
	} else {
		all = q->todo;
	}
	q->todo = q->todo_tail = q->done = q->done_tail = NULL;
	q->jobs = 0;
	q->notify_fd = -1;
	return all;
}
