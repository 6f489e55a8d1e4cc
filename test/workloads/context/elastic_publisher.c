// SPDX-License-Identifier: Apache-2.0
/*
 * Elastic v1 trace-correlation publisher, as the Elastic APM Java agent's
 * native library does it (built as elastic-jvmti-linux-x64.so, TLSDESC):
 * a TLS pointer to a per-thread record and a global pointer to the
 * process storage (u16 minor, then u32-length-prefixed UTF-8 strings
 * service-name, service-environment, socket-path).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "otel_ctx.h"

OTELCTX_API __thread void *elastic_apm_profiling_correlation_tls_v1;
OTELCTX_API void *elastic_apm_profiling_correlation_process_storage_v1;

static void fence(void)
{
	atomic_signal_fence(memory_order_seq_cst);
}

static void store_valid(struct elastic_tls_record *rec, uint8_t valid)
{
	fence();
	*(volatile uint8_t *)&rec->valid = valid;
	fence();
}

OTELCTX_API void **elastic_slot(void)
{
	return &elastic_apm_profiling_correlation_tls_v1;
}

static uint8_t *put_str(uint8_t *p, const char *s)
{
	uint32_t n = (uint32_t)strlen(s);

	memcpy(p, &n, sizeof(n));
	memcpy(p + sizeof(n), s, n);
	return p + sizeof(n) + n;
}

/* The pointer is published only once the storage is complete. */
OTELCTX_API int elastic_publish_process(const char *service_name,
					const char *environment,
					const char *socket_path)
{
	size_t len = 2 + 12 + strlen(service_name) + strlen(environment) +
		     strlen(socket_path);
	uint8_t *buf = calloc(1, len), *p;
	uint16_t minor = 1;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, &minor, sizeof(minor));
	p = put_str(buf + 2, service_name);
	p = put_str(p, environment);
	put_str(p, socket_path);
	/* Another process reads this at any time: a real barrier. */
	__atomic_store_n(&elastic_apm_profiling_correlation_process_storage_v1,
			 buf, __ATOMIC_RELEASE);
	return 0;
}

/* Points the calling thread's TLS at its record, initialized: no trace. */
OTELCTX_API void elastic_thread_attach(struct elastic_tls_record *rec)
{
	memset(rec, 0, sizeof(*rec));
	rec->minor = 1;
	rec->valid = 1;
	fence();
	*(void *volatile *)&elastic_apm_profiling_correlation_tls_v1 = rec;
	fence();
}

OTELCTX_API void elastic_set(struct elastic_tls_record *rec,
			     const uint8_t trace_id[16],
			     const uint8_t span_id[8],
			     const uint8_t transaction_id[8], uint8_t flags)
{
	store_valid(rec, 0);
	rec->trace_present = 1;
	rec->trace_flags = flags;
	memcpy(rec->trace_id, trace_id, 16);
	memcpy(rec->span_id, span_id, 8);
	memcpy(rec->transaction_id, transaction_id, 8);
	store_valid(rec, 1);
}

/* A valid record without a trace. */
OTELCTX_API void elastic_clear(struct elastic_tls_record *rec)
{
	store_valid(rec, 0);
	rec->trace_present = 0;
	store_valid(rec, 1);
}

/* Mid-update as seen by a reader: trace_present and the stale ids stay. */
OTELCTX_API void elastic_invalidate(struct elastic_tls_record *rec)
{
	store_valid(rec, 0);
}
