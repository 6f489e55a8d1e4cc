// SPDX-License-Identifier: Apache-2.0
/*
 * OTEP 4947 thread-context publisher. The same source is built once per TLS
 * access model (context.mk): TLSDESC and legacy general-dynamic shared
 * libraries, an initial-exec shared library, and linked into an executable
 * that exports the symbol itself (local-exec). OTELCTX_VARIANT names the
 * build.
 *
 * The record a thread points to is only ever written by that thread; a
 * sampling profiler reads it while the thread is interrupted, so compiler
 * fences (no CPU barriers) order the writes, as the OTEP asks.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "otel_ctx.h"

#ifndef OTELCTX_VARIANT
#error "build with -DOTELCTX_VARIANT=\"name\""
#endif

/* The TLS symbol readers look for in .dynsym (STT_TLS, 8 bytes). */
OTELCTX_API __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;

static void fence(void)
{
	atomic_signal_fence(memory_order_seq_cst);
}

static void store_ptr(struct otel_thread_ctx_record *rec)
{
	fence();
	*(struct otel_thread_ctx_record *volatile *)&otel_thread_ctx_v1 = rec;
	fence();
}

static void store_valid(struct otel_thread_ctx_record *rec, uint8_t valid)
{
	fence();
	*(volatile uint8_t *)&rec->valid = valid;
	fence();
}

static void fill(struct otel_thread_ctx_record *rec,
		 const struct otelctx_value *v)
{
	uint16_t n = v->attrs_len;

	if (n > OTELCTX_ATTRS_MAX)
		n = OTELCTX_ATTRS_MAX;
	memcpy(rec->trace_id, v->trace_id, sizeof(rec->trace_id));
	memcpy(rec->span_id, v->span_id, sizeof(rec->span_id));
	rec->trace_flags = v->trace_flags;
	rec->attrs_data_size = n;
	if (n)
		memcpy(rec->attrs_data, v->attrs, n);
}

OTELCTX_API const char *otelctx_variant(void)
{
	return OTELCTX_VARIANT;
}

OTELCTX_API void **otelctx_slot(void)
{
	return (void **)&otel_thread_ctx_v1;
}

/* Pointer strategy: fill a record nobody can see, then point to it. */
OTELCTX_API void otelctx_ptr_publish(struct otel_thread_ctx_record *rec,
				     const struct otelctx_value *v)
{
	/* Reusing the visible record: detach it while it is rewritten. */
	if (otel_thread_ctx_v1 == rec)
		store_ptr(NULL);
	store_valid(rec, 0);
	fill(rec, v);
	store_valid(rec, 1);
	store_ptr(rec);
}

OTELCTX_API void otelctx_ptr_clear(void)
{
	store_ptr(NULL);
}

/* Valid-flag strategy: one fixed record per thread, pointed to once. */
OTELCTX_API void otelctx_valid_publish(struct otel_thread_ctx_record *rec,
				       const struct otelctx_value *v)
{
	store_valid(rec, 0);
	if (otel_thread_ctx_v1 != rec)
		store_ptr(rec);
	fill(rec, v);
	store_valid(rec, 1);
}

/* Leaves the stale ids in the record: only valid says they are not live. */
OTELCTX_API void otelctx_valid_clear(struct otel_thread_ctx_record *rec)
{
	store_valid(rec, 0);
}
