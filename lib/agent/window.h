/* SPDX-License-Identifier: Apache-2.0 */
/* Handing a window out: swap in the empty one, encode the full one. */
#ifndef OTELPROF_AGENT_WINDOW_H
#define OTELPROF_AGENT_WINDOW_H

#include <stddef.h>
#include <stdint.h>

struct otelprof;

/* Read what the ring buffer holds into the current window (on the
 * caller's thread), swap windows under state_lock and encode the full one
 * outside it, so the drain thread is never blocked by encoding. Caller
 * holds poll_lock. Returns the number of samples (capped at INT32_MAX),
 * 0 with *data NULL if there is nothing to hand out, or -errno with
 * p->errbuf set. */
int deliver_window(struct otelprof *p, uint8_t **data, size_t *size);

#endif
