/* SPDX-License-Identifier: Apache-2.0 */
/* struct otelprof_opts as a caller of any version passes it: validated and
 * copied field by field up to its sz. */
#ifndef OTELPROF_AGENT_OPTIONS_H
#define OTELPROF_AGENT_OPTIONS_H

#include <stdint.h>

#include "otelprofiler.h"
#include "profiler_types.h"
#include "util/errmsg.h"

#define AGENT_MAX_FREQUENCY_HZ 10000u
/* Probabilistic intervals: the reference accepts 1 to 5 minutes; from 1 s
 * here, so that short recordings (and tests) can use it. */
#define AGENT_MIN_PROB_INTERVAL_MS 1000u
#define AGENT_MAX_PROB_INTERVAL_MS 300000u

/* in may be NULL (all defaults); o is zeroed first. 0 or -errno with err
 * set. */
int agent_parse_opts(const struct otelprof_opts *in, struct otelprof_opts *o,
		     struct errmsg *err);
/* The ring buffer's size: kb if set, else from the rate and CPU count;
 * a power of two. */
uint32_t agent_ringbuf_bytes(uint32_t kb, uint32_t hz, int ncpu);

#endif
