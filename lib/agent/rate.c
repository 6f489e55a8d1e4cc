// SPDX-License-Identifier: Apache-2.0
/*
 * The sampling rate at run time (otelprof_set_frequency): every CPU's perf
 * event gets the new period in place, and the agent remembers when the rate
 * changed, so that each sample is weighted by the rate it was taken at (the
 * encoder gives each rate its own Profile with its period).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/options.h"
#include "util/clock.h"

void agent_rate_init(struct otelprof *p, const struct otelprof_opts *o,
		     uint32_t ringbuf_bytes, int ncpu)
{
	struct agent_rate *r = &p->rate;

	memset(r, 0, sizeof(*r));
	r->max_hz = o->max_frequency_hz ? o->max_frequency_hz
					: agent_ringbuf_hz(ringbuf_bytes, ncpu);
	if (r->max_hz < p->frequency_hz)
		r->max_hz = p->frequency_hz;
	r->at[0].since_boot_ns = 0;
	r->at[0].hz = p->frequency_hz;
	r->n = 1;
}

uint64_t agent_period_at(const struct otelprof *p, uint64_t ts)
{
	const struct agent_rate *r = &p->rate;
	uint32_t i = r->n;

	/* Newest first: nearly every sample is after the last change. */
	while (i > 1 && r->at[i - 1].since_boot_ns > ts)
		i--;
	return 1000000000ull / r->at[i - 1].hz;
}

int agent_set_frequency(struct otelprof *p, uint32_t hz)
{
	struct agent_rate *r = &p->rate;
	int e;

	pthread_mutex_lock(&p->state_lock);
	if (p->stopped || atomic_load(&p->stopping)) {
		pthread_mutex_unlock(&p->state_lock);
		snprintf(p->errbuf, sizeof(p->errbuf),
			 "the profiler is stopped");
		return -EINVAL;
	}
	if (!hz || hz > r->max_hz) {
		pthread_mutex_unlock(&p->state_lock);
		snprintf(p->errbuf, sizeof(p->errbuf),
			 "frequency %u Hz is out of range (1..%u: the ceiling, "
			 "otelprof_opts.max_frequency_hz)",
			 hz, r->max_hz);
		return -EINVAL;
	}
	if (hz == p->frequency_hz) {
		pthread_mutex_unlock(&p->state_lock);
		return 0;
	}
	e = bpf_sampler_set_period(p->sampler, 1000000000ull / hz);
	if (e) {
		pthread_mutex_unlock(&p->state_lock);
		snprintf(p->errbuf, sizeof(p->errbuf),
			 "changing the perf events' period failed: %s "
			 "(the rate stays %u Hz)",
			 strerror(-e), p->frequency_hz);
		return e;
	}
	/* After the last CPU took it: a sample of the old rate is older; one
	 * of the new rate comes a new period after its CPU's ioctl, later
	 * than this unless the ioctls took longer than that period. */
	if (r->n == AGENT_RATE_HISTORY) {
		memmove(&r->at[0], &r->at[1], sizeof(r->at[0]) * (r->n - 1));
		r->n--;
	}
	r->at[r->n].since_boot_ns = boot_ns();
	r->at[r->n].hz = hz;
	r->n++;
	r->changes++;
	p->frequency_hz = hz;
	pthread_mutex_unlock(&p->state_lock);
	return 0;
}
