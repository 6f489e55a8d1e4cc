/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Off-CPU recording (opt-in): loads ebpf/offcpu.bpf.c beside the CPU
 * sampler, sharing its unwind tables, ring buffer and counters, and
 * attaches it to the sched_switch raw tracepoint. Never opened when
 * off_cpu_threshold is 0: then no scheduler program exists at all.
 */
#ifndef OTELPROF_SAMPLE_OFFCPU_SAMPLER_H
#define OTELPROF_SAMPLE_OFFCPU_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "sample/bpf_sampler.h"
#include "util/errmsg.h"

struct offcpu_sampler;

/* threshold: probability that a switch-out is recorded, in (0, 1].
 * attach false: loaded only, until offcpu_sampler_set_enabled. */
int offcpu_sampler_open(struct bpf_sampler *s, double threshold,
			uint32_t target_tgid, bool attach,
			struct offcpu_sampler **out, struct errmsg *err);
/* Attach (on) or detach the tracepoint, as probabilistic profiling turns
 * sampling on and off; a no-op for NULL, or once detached for good.
 * 0 or a negative errno. */
int offcpu_sampler_set_enabled(struct offcpu_sampler *o, bool on);
/* No new records (the tracepoint detached), for good. */
void offcpu_sampler_detach(struct offcpu_sampler *o);
void offcpu_sampler_close(struct offcpu_sampler *o);

#endif
