/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Off-CPU recording (opt-in): loads ebpf/offcpu.bpf.c beside the CPU
 * sampler, sharing its unwind tables, ring buffer and counters, and
 * attaches it to the sched_switch raw tracepoint. Never opened when
 * off_cpu_threshold is 0: then no scheduler program exists at all.
 */
#ifndef OTELPROF_SAMPLE_OFFCPU_SAMPLER_H
#define OTELPROF_SAMPLE_OFFCPU_SAMPLER_H

#include <stdint.h>

#include "sample/bpf_sampler.h"
#include "util/errmsg.h"

struct offcpu_sampler;

/* threshold: probability that a switch-out is recorded, in (0, 1]. */
int offcpu_sampler_open(struct bpf_sampler *s, double threshold,
			uint32_t target_tgid, struct offcpu_sampler **out,
			struct errmsg *err);
/* No new records (the tracepoint detached). */
void offcpu_sampler_detach(struct offcpu_sampler *o);
void offcpu_sampler_close(struct offcpu_sampler *o);

#endif
