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
/* The ring buffer's size: kb if set, else AGENT_RINGBUF_WINDOW_MS of 1 KiB
 * samples from every CPU at hz, within [1, 2] MiB; a power of two.
 * The window is the drain's latency, not a backlog: the BPF side wakes the
 * drain at every 64 KiB and its longest hold is ~20 ms, so 250 ms is a
 * 10x margin. A longer window only grew with CPUs, busy or idle: 64 MiB
 * of ring (and of our RSS, once its pages are read) at 48 CPUs. 2 MiB
 * holds 287 ms of 383-byte samples (the mean measured) from 192 CPUs at
 * 99 Hz; 1 MiB holds more samples than 2 MiB did when every record
 * carried a 1 KiB kernel stack array. */
#define AGENT_RINGBUF_WINDOW_MS 250u
#define AGENT_RINGBUF_MIN_BYTES (1u << 20)
#define AGENT_RINGBUF_MAX_BYTES (2u << 20)
/* The live rate's default ceiling (max_frequency_hz 0): what a ring of
 * ringbuf_bytes holds a window of, at most this. */
#define AGENT_DEFAULT_CEILING_HZ 256u
uint32_t agent_ringbuf_bytes(uint32_t kb, uint32_t hz, int ncpu);
/* The rate whose window of samples from ncpu CPUs fills ringbuf_bytes. */
uint32_t agent_ringbuf_hz(uint32_t ringbuf_bytes, int ncpu);

#endif
