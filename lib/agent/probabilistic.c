// SPDX-License-Identifier: Apache-2.0
/*
 * Probabilistic profiling, with the reference profiler's meaning: at the
 * start of every interval a draw in [0, 100) below the threshold turns
 * sampling on for the interval; otherwise every CPU's perf event is
 * disabled, so the kernel takes no sample at all (nothing is dropped: there
 * is nothing). The interval is a timerfd the drain thread waits on.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "agent/agent.h"
#include "util/clock.h"

/* Uniform in [0, 100): rejection keeps the draw unbiased. */
static uint32_t draw_percent(void)
{
	static uint64_t fallback;
	uint32_t x;

	do {
		if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != sizeof(x)) {
			/* No entropy yet (early boot): splitmix64 of the
			 * clock, good enough for a coin. */
			uint64_t z =
				(fallback += 0x9e3779b97f4a7c15ull) ^ mono_ns();

			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
			z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
			x = (uint32_t)(z ^ (z >> 31));
		}
	} while (x >= 4294967200u); /* 100 * 42949672 */
	return x % 100;
}

static void draw(struct otelprof *p)
{
	struct agent_prob *pr = &p->prob;
	bool on = draw_percent() < pr->threshold;

	if (on)
		pr->intervals_on++;
	else
		pr->intervals_off++;
	if (on != pr->on) {
		bpf_sampler_set_enabled(p->sampler, on);
		/* Off-CPU recording follows: no switch-out is recorded in an
		 * off interval. */
		if (offcpu_sampler_set_enabled(p->offcpu, on))
			p->counters.offcpu_attach_errors++;
	}
	pr->on = on;
}

int agent_prob_start(struct otelprof *p, const struct otelprof_opts *o,
		     struct errmsg *err)
{
	struct agent_prob *pr = &p->prob;
	struct itimerspec its;
	int e;

	pr->threshold =
		o->probabilistic_threshold ? o->probabilistic_threshold : 100;
	pr->interval_ns = (uint64_t)(o->probabilistic_interval_ms
					     ? o->probabilistic_interval_ms
					     : 60000) *
			  1000000ull;
	pr->on = pr->threshold >= 100;
	if (pr->on)
		return 0; /* always on: the events were attached enabled */
	pr->timer_fd =
		timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (pr->timer_fd < 0) {
		e = -errno;
		return errmsg_set(err, e, "timerfd_create: %s", strerror(-e));
	}
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(pr->interval_ns / 1000000000ull);
	its.it_value.tv_nsec = (long)(pr->interval_ns % 1000000000ull);
	its.it_interval = its.it_value;
	if (timerfd_settime(pr->timer_fd, 0, &its, NULL)) {
		e = -errno;
		return errmsg_set(err, e, "timerfd_settime: %s", strerror(-e));
	}
	/* The events were attached disabled: the first interval starts now. */
	draw(p);
	return 0;
}

void agent_prob_tick(struct otelprof *p)
{
	uint64_t n = 0;

	if (p->prob.timer_fd < 0 ||
	    read(p->prob.timer_fd, &n, sizeof(n)) != sizeof(n) || !n)
		return;
	/* Ticks missed while the thread was held up (n > 1) start one
	 * interval now, not several at once. */
	if (!atomic_load(&p->stopping))
		draw(p);
}

void agent_prob_free(struct otelprof *p)
{
	if (p->prob.timer_fd >= 0)
		close(p->prob.timer_fd);
	p->prob.timer_fd = -1;
}
