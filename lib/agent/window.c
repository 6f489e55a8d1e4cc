// SPDX-License-Identifier: Apache-2.0
#include "agent/window.h"
#include "util/clock.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "encode/otlp_encoder.h"

static void set_err(struct otelprof *p, const char *fmt, const char *arg)
{
	snprintf(p->errbuf, sizeof(p->errbuf), fmt, arg);
}

int deliver_window(struct otelprof *p, uint8_t **data, size_t *size)
{
	struct profile_builder *full;
	struct otlp_window w;
	uint64_t now, samples, period_ns;
	bool stopped;
	int e;

	/* Swap windows: the drain thread fills the other one meanwhile. */
	pthread_mutex_lock(&p->state_lock);
	stopped = p->stopped;
	process_table_begin_pass(&p->procs);
	if (!stopped)
		bpf_sampler_consume(p->sampler);
	full = &p->windows[p->cur];
	p->cur ^= 1;
	e = pb_reset(&p->windows[p->cur]);
	stack_cache_clear(&p->stack_cache);
	stack_symbolizer_new_window(&p->symbolizer);
	now = clock_ns(CLOCK_REALTIME);
	agent_sweep_if_due(p);
	p->boot_to_unix_ns = agent_boot_to_unix_offset();
	w.start_unix_ns = p->window_start_unix_ns;
	w.end_unix_ns = now;
	p->window_start_unix_ns = now;
	period_ns = 1000000000ull / p->frequency_hz;
	pthread_mutex_unlock(&p->state_lock);

	if (e) {
		set_err(p, "%s", "out of memory resetting a window");
		goto out;
	}
	samples = full->total_samples;
	/* A recording that saw nothing still ends with one valid profile
	 * (the host's, without samples); other empty polls hand out nothing. */
	if (!samples && (!stopped || p->handed_out))
		goto out;
	/* Samples carry the period of the rate they were taken at; this
	 * one is for a window without samples. */
	w.period_ns = period_ns;
	w.scope_name = "libotelprofiler";
	w.scope_version = OTELPROF_VERSION_STRING;
	w.host_name = p->host_name;
	e = otlp_encode(full, &w, data, size);
	if (e) {
		set_err(p, "encoding failed: %s", strerror(-e));
		goto out;
	}
	pthread_mutex_lock(&p->state_lock);
	p->counters.samples_encoded += samples;
	p->counters.bytes_encoded += *size;
	p->counters.polls++;
	p->handed_out = true;
	pthread_mutex_unlock(&p->state_lock);
	e = samples > INT32_MAX ? INT32_MAX : (int)samples;
out:
	pb_reset(full);
	/* The window's tables were just freed: glibc keeps freed heap in its
	 * arenas unless asked, and an always-on agent should not sit on it
	 * between polls. */
	malloc_trim(0);
	return e;
}
