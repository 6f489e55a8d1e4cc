// SPDX-License-Identifier: Apache-2.0
/*
 * The work queue the file loader, the unwind table builder and the
 * debuginfod lookups share: jobs run first in, first out and come back in
 * the order they finished, a full queue refuses, stop hands back every job
 * not taken (finished or not) without waiting for queued ones, and each
 * finished job writes the notify fd.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "util/work_queue.h"

struct job {
	int id;
	unsigned worker;
	bool ran;
	struct work_item item;
};

/* What the jobs share with the test. */
struct bench {
	struct work_queue q;
	pthread_mutex_t lock;
	int order[64]; /* ids in the order they ran */
	int nrun;
	atomic_bool gate; /* true: jobs may finish */
	atomic_int running;
	int woken;
};

#define JOB(it) work_queue_job(it, struct job, item)

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* A job waits at the gate (or for stop), then notes that it ran. */
static void run(void *ctx, unsigned worker, struct work_item *it)
{
	struct bench *b = ctx;
	struct job *j = JOB(it);

	atomic_fetch_add(&b->running, 1);
	while (!atomic_load(&b->gate) && !atomic_load(&b->q.stopping))
		sleep_ms(1);
	j->worker = worker;
	j->ran = true;
	pthread_mutex_lock(&b->lock);
	b->order[b->nrun++] = j->id;
	pthread_mutex_unlock(&b->lock);
	atomic_fetch_sub(&b->running, 1);
}

static void wake(void *ctx)
{
	((struct bench *)ctx)->woken++;
}

static struct bench *bench_new(uint32_t max_jobs, bool gate)
{
	struct bench *b = calloc(1, sizeof(*b));

	assert_non_null(b);
	work_queue_init(&b->q, max_jobs);
	pthread_mutex_init(&b->lock, NULL);
	atomic_store(&b->gate, gate);
	return b;
}

static void bench_free(struct bench *b)
{
	work_queue_destroy(&b->q);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

static struct job *job_new(int id)
{
	struct job *j = calloc(1, sizeof(*j));

	assert_non_null(j);
	j->id = id;
	return j;
}

static int free_list(struct work_item *it)
{
	int n = 0;

	while (it) {
		struct job *j = JOB(it);

		it = it->next;
		free(j);
		n++;
	}
	return n;
}

/* Take finished jobs until n came (5 s at most), in the order taken. */
static struct work_item *take_n(struct work_queue *q, int n)
{
	struct work_item *all = NULL, **tail = &all;
	int got = 0;

	for (int tries = 0; got < n && tries < 5000; tries++) {
		struct work_item *it = work_queue_take_done(q);

		*tail = it;
		for (; it; it = it->next) {
			got++;
			tail = &it->next;
		}
		if (got < n)
			sleep_ms(1);
	}
	assert_int_equal(got, n);
	return all;
}

static void not_started_refuses(void **state)
{
	struct bench *b = bench_new(0, true);
	struct job *j = job_new(1);

	(void)state;
	assert_int_equal(work_queue_submit(&b->q, &j->item), -ENODEV);
	assert_null(work_queue_stop(&b->q));
	assert_false(work_queue_busy(&b->q));
	free(j);
	bench_free(b);
}

static void runs_in_order(void **state)
{
	struct bench *b = bench_new(0, true);
	struct work_item *it;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), i = 0;
	uint64_t notes = 0;

	(void)state;
	assert_true(efd >= 0);
	assert_int_equal(work_queue_start(&b->q, 1, run, b, efd), 1);
	for (int k = 0; k < 20; k++)
		assert_int_equal(work_queue_submit(&b->q, &job_new(k)->item),
				 0);
	it = take_n(&b->q, 20);
	for (struct work_item *x = it; x; x = x->next, i++) {
		assert_int_equal(JOB(x)->id, i); /* the order they finished */
		assert_true(JOB(x)->ran);
		assert_int_equal(b->order[i], i); /* the order they ran */
	}
	/* One note per finished job (an eventfd adds them up). */
	assert_int_equal(read(efd, &notes, sizeof(notes)), sizeof(notes));
	assert_int_equal(notes, 20);
	assert_false(work_queue_busy(&b->q));
	assert_int_equal(free_list(it), 20);
	assert_null(work_queue_stop(&b->q));
	close(efd);
	bench_free(b);
}

static void full_queue_refuses(void **state)
{
	struct bench *b = bench_new(2, false);
	struct job *extra = job_new(3);

	(void)state;
	assert_int_equal(work_queue_start(&b->q, 1, run, b, -1), 1);
	assert_false(work_queue_full(&b->q));
	assert_int_equal(work_queue_submit(&b->q, &job_new(1)->item), 0);
	assert_int_equal(work_queue_submit(&b->q, &job_new(2)->item), 0);
	/* Queued, running and finished-not-taken jobs all count. */
	assert_true(work_queue_full(&b->q));
	assert_int_equal(work_queue_submit(&b->q, &extra->item), -EAGAIN);
	atomic_store(&b->gate, true);
	assert_int_equal(free_list(take_n(&b->q, 2)), 2);
	assert_false(work_queue_full(&b->q));
	assert_int_equal(work_queue_submit(&b->q, &extra->item), 0);
	assert_int_equal(free_list(take_n(&b->q, 1)), 1);
	assert_null(work_queue_stop(&b->q));
	bench_free(b);
}

static void busy_and_waiting(void **state)
{
	struct bench *b = bench_new(0, false);

	(void)state;
	assert_int_equal(work_queue_start(&b->q, 1, run, b, -1), 1);
	assert_int_equal(work_queue_submit(&b->q, &job_new(1)->item), 0);
	while (!atomic_load(&b->running))
		sleep_ms(1);
	/* Running: busy, but nothing waits in the queue. */
	assert_true(work_queue_busy(&b->q));
	assert_false(work_queue_waiting(&b->q));
	atomic_store(&b->gate, true);
	while (b->nrun < 1 || atomic_load(&b->running))
		sleep_ms(1);
	for (int tries = 0; !work_queue_waiting(&b->q) && tries < 5000; tries++)
		sleep_ms(1);
	/* Finished, not taken: both. */
	assert_true(work_queue_busy(&b->q));
	assert_true(work_queue_waiting(&b->q));
	assert_int_equal(free_list(work_queue_take_done(&b->q)), 1);
	assert_false(work_queue_busy(&b->q));
	assert_false(work_queue_waiting(&b->q));
	assert_null(work_queue_stop(&b->q));
	bench_free(b);
}

static void put_back_comes_first(void **state)
{
	struct bench *b = bench_new(4, true);
	struct work_item *it, *rest;
	int id = 0;

	(void)state;
	assert_int_equal(work_queue_start(&b->q, 1, run, b, -1), 1);
	for (int k = 0; k < 3; k++)
		assert_int_equal(work_queue_submit(&b->q, &job_new(k)->item),
				 0);
	it = take_n(&b->q, 3);
	/* The first one used, the others given back: counted again. */
	rest = it->next;
	it->next = NULL;
	work_queue_put_back(&b->q, rest);
	assert_true(work_queue_busy(&b->q));
	assert_int_equal(work_queue_submit(&b->q, &job_new(3)->item), 0);
	assert_int_equal(work_queue_submit(&b->q, &job_new(4)->item), 0);
	assert_true(work_queue_full(&b->q));
	free_list(it);
	it = take_n(&b->q, 4);
	/* Given back ahead of the ones finished since. */
	for (struct work_item *x = it; x; x = x->next)
		assert_int_equal(JOB(x)->id, ++id);
	assert_int_equal(id, 4);
	free_list(it);
	assert_null(work_queue_stop(&b->q));
	bench_free(b);
}

static void stop_hands_back_pending(void **state)
{
	struct bench *b = bench_new(0, false);
	struct work_item *it;
	int ran = 0, n = 0;

	(void)state;
	b->q.wake = wake;
	assert_int_equal(work_queue_start(&b->q, 2, run, b, -1), 2);
	for (int k = 0; k < 6; k++)
		assert_int_equal(work_queue_submit(&b->q, &job_new(k)->item),
				 0);
	while (atomic_load(&b->running) < 2)
		sleep_ms(1);
	/* Two jobs wait at the gate until stopping; four never start. */
	it = work_queue_stop(&b->q);
	assert_int_equal(b->woken, 1);
	assert_false(b->q.started);
	assert_false(work_queue_busy(&b->q));
	for (struct work_item *x = it; x; x = x->next, n++) {
		ran += JOB(x)->ran;
		assert_true(!JOB(x)->ran || JOB(x)->worker < 2);
	}
	assert_int_equal(n, 6);
	assert_int_equal(ran, 2);
	free_list(it);
	/* It starts again after a stop. */
	atomic_store(&b->gate, true);
	assert_int_equal(work_queue_start(&b->q, 1, run, b, -1), 1);
	assert_int_equal(work_queue_submit(&b->q, &job_new(9)->item), 0);
	assert_int_equal(free_list(take_n(&b->q, 1)), 1);
	assert_null(work_queue_stop(&b->q));
	bench_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(not_started_refuses),
		cmocka_unit_test(runs_in_order),
		cmocka_unit_test(full_queue_refuses),
		cmocka_unit_test(busy_and_waiting),
		cmocka_unit_test(put_back_comes_first),
		cmocka_unit_test(stop_hands_back_pending),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
