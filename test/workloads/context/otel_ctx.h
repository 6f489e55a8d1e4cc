// SPDX-License-Identifier: Apache-2.0
/*
 * Test publishers of thread context (OTEP 4947), process context (OTEP 4719)
 * and Elastic v1 trace correlation, written from the specs for the
 * integration tests of libotelprofiler (docs/context-publishing.md).
 */
#ifndef OTEL_CTX_TEST_H
#define OTEL_CTX_TEST_H

#include <stddef.h>
#include <stdint.h>

#define OTELCTX_API __attribute__((visibility("default")))

/* OTEP 4947 Thread-Local Context Record: packed, native endianness. */
#define OTELCTX_RECORD_MAX  640
#define OTELCTX_HEADER_SIZE 28
#define OTELCTX_ATTRS_MAX   (OTELCTX_RECORD_MAX - OTELCTX_HEADER_SIZE)

struct otel_thread_ctx_record {
	uint8_t trace_id[16];		       /* @0 */
	uint8_t span_id[8];		       /* @16 */
	uint8_t valid;			       /* @24: only 1 is valid */
	uint8_t trace_flags;		       /* @25 */
	uint16_t attrs_data_size;	       /* @26 */
	uint8_t attrs_data[OTELCTX_ATTRS_MAX]; /* @28: {key, len, value[len]} */
} __attribute__((packed, aligned(8)));

_Static_assert(sizeof(struct otel_thread_ctx_record) == OTELCTX_RECORD_MAX &&
		       offsetof(struct otel_thread_ctx_record, valid) == 24 &&
		       offsetof(struct otel_thread_ctx_record, attrs_data) ==
			       OTELCTX_HEADER_SIZE,
	       "record layout");

/* What a publisher is asked to publish. */
struct otelctx_value {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t trace_flags;
	uint16_t attrs_len;
	const uint8_t *attrs; /* already encoded attrs_data */
};

/*
 * The publisher library (publisher.c), one build per TLS model. Two
 * strategies, as the OTEP allows (a thread uses one, never both):
 * - pointer: records are filled while not visible, then the TLS pointer is
 *   swapped to them; clearing stores NULL;
 * - valid flag: the TLS pointer is set once to the thread's own record;
 *   updates go valid = 0, write, valid = 1; clearing stores valid = 0.
 */
OTELCTX_API const char *otelctx_variant(void);
OTELCTX_API void **otelctx_slot(void);
OTELCTX_API void otelctx_ptr_publish(struct otel_thread_ctx_record *rec,
				     const struct otelctx_value *v);
OTELCTX_API void otelctx_ptr_clear(void);
OTELCTX_API void otelctx_valid_publish(struct otel_thread_ctx_record *rec,
				       const struct otelctx_value *v);
OTELCTX_API void otelctx_valid_clear(struct otel_thread_ctx_record *rec);

/* Elastic v1 per-thread record (universal profiling integration). */
struct elastic_tls_record {
	uint16_t minor;		   /* @0: 1 */
	uint8_t valid;		   /* @2 */
	uint8_t trace_present;	   /* @3 */
	uint8_t trace_flags;	   /* @4 */
	uint8_t trace_id[16];	   /* @5 */
	uint8_t span_id[8];	   /* @21 */
	uint8_t transaction_id[8]; /* @29 */
} __attribute__((packed, aligned(8)));

/* 37 bytes of fields; aligned(8) pads the size to 40. */
_Static_assert(offsetof(struct elastic_tls_record, trace_id) == 5 &&
		       offsetof(struct elastic_tls_record, span_id) == 21 &&
		       offsetof(struct elastic_tls_record, transaction_id) ==
			       29,
	       "elastic layout");

/* elastic_publisher.c (elastic-jvmti-linux-x64.so). */
OTELCTX_API void **elastic_slot(void);
OTELCTX_API int elastic_publish_process(const char *service_name,
					const char *environment,
					const char *socket_path);
OTELCTX_API void elastic_thread_attach(struct elastic_tls_record *rec);
OTELCTX_API void elastic_set(struct elastic_tls_record *rec,
			     const uint8_t trace_id[16],
			     const uint8_t span_id[8],
			     const uint8_t transaction_id[8], uint8_t flags);
OTELCTX_API void elastic_clear(struct elastic_tls_record *rec);
OTELCTX_API void elastic_invalidate(struct elastic_tls_record *rec);

/* Process context (proc_ctx.c, linked into the workloads). */
enum proc_ctx_kind {
	PROC_CTX_NONE,
	PROC_CTX_MEMFD,
	PROC_CTX_ANON,	     /* MAP_PRIVATE | MAP_ANONYMOUS: [anon:OTEL_CTX] */
	PROC_CTX_ANON_SHMEM, /* MAP_SHARED | MAP_ANONYMOUS: [anon_shmem:...] */
};

struct proc_ctx_kv {
	const char *key;
	const char *value;
};

struct proc_ctx {
	enum proc_ctx_kind kind;
	void *map;
	unsigned long map_len;
	int named;    /* prctl(PR_SET_VMA_ANON_NAME) succeeded */
	int no_prctl; /* never call it: a memfd is found by its name only */
	uint64_t published_at_ns; /* CLOCK_BOOTTIME */
};

/*
 * Publishes (first call) or updates (later calls) the process context with
 * these resource attributes, plus threadlocal.schema_version and
 * threadlocal.attribute_key_map in ProcessContext.attributes.
 * Returns 0 or -errno.
 */
int proc_ctx_publish(struct proc_ctx *pc, const struct proc_ctx_kv *resource,
		     int nresource, const char *const *key_map, int nkeys);

#endif
