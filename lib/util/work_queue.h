/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Jobs run off the drain thread: a FIFO of jobs, worker threads that run
 * them one at a time, and the finished jobs kept until their owner takes
 * them (in the order they finished). Each finished job writes 1 to a
 * notify fd (an eventfd the drain thread polls), and a worker gives its
 * malloc arena back once the queue is empty: a job's scratch sits there
 * and glibc does not shrink it by itself. The file loader, the unwind
 * table builder and the debuginfod lookups share it; what a job is and
 * does is theirs.
 */
#ifndef OTELPROF_UTIL_WORK_QUEUE_H
#define OTELPROF_UTIL_WORK_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A job's link, embedded in the owner's job (work_queue_job). */
struct work_item {
	struct work_item *next;
};

/* The owner's job that item is the link of (NULL for NULL); item is
 * evaluated once. */
static inline void *work_item_owner(struct work_item *it, size_t offset)
{
	return it ? (char *)it - offset : NULL;
}
#define work_queue_job(item, type, member)                                     \
	((type *)work_item_owner((item), offsetof(type, member)))

/* Runs one job on worker number `worker` (0 .. nthreads - 1), without the
 * queue's lock: it touches only the job and what the owner made safe. */
typedef void (*work_run_fn)(void *ctx, unsigned worker, struct work_item *it);

#define WORK_QUEUE_MAX_THREADS 4u

struct work_queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct work_item *todo, *todo_tail; /* first in, first run */
	struct work_item *done, *done_tail; /* in the order they finished */
	uint32_t jobs;	   /* queued, running or finished, not yet taken */
	uint32_t max_jobs; /* 0: no bound */
	int notify_fd;	   /* not owned; -1: none */
	/* Set at stop, before the workers are joined: a job in progress
	 * may read it to end early. */
	atomic_bool stopping;
	bool started;
	work_run_fn run;
	void *ctx;
	/* Called at stop after the workers were told (NULL: none): wakes a
	 * job that waits on something else than the queue. */
	void (*wake)(void *ctx);
	struct work_queue_worker {
		struct work_queue *q;
		unsigned index;
		pthread_t thread;
	} workers[WORK_QUEUE_MAX_THREADS];
	unsigned nthreads;
};

/* max_jobs: refuse work_queue_submit past that many jobs (0: no bound). */
void work_queue_init(struct work_queue *q, uint32_t max_jobs);
/* Release the lock and condition (after work_queue_stop). */
void work_queue_destroy(struct work_queue *q);
/*
 * Start up to nthreads workers running run(ctx, worker, job). notify_fd
 * (not owned, may be -1) is written to when a job finished. Returns the
 * number of workers started (fewer if a thread could not be made), or
 * -errno if none could.
 */
int work_queue_start(struct work_queue *q, unsigned nthreads, work_run_fn run,
		     void *ctx, int notify_fd);
/* Would a job now be refused? (Check before making one.) */
bool work_queue_full(struct work_queue *q);
/* Queue it after the others. 0, -EAGAIN if full, -ENODEV if not started. */
int work_queue_submit(struct work_queue *q, struct work_item *it);
/* The finished jobs, a list through next in the order they finished. */
struct work_item *work_queue_take_done(struct work_queue *q);
/* Give taken jobs back, ahead of the finished ones (taken next time). */
void work_queue_put_back(struct work_queue *q, struct work_item *list);
/* A job queued, running, or finished and not taken. */
bool work_queue_busy(struct work_queue *q);
/* A job queued, or finished and not taken (one running is not counted). */
bool work_queue_waiting(struct work_queue *q);
/* Tell the workers to stop (a job in progress sees `stopping`), join them
 * and return every job not taken, finished or not, for the owner to
 * release. The queue may be started again. */
struct work_item *work_queue_stop(struct work_queue *q);

#endif
