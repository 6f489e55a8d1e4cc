// SPDX-License-Identifier: Apache-2.0
/*
 * The thread and process context publishers (publisher.c, proc_ctx.c) as
 * a JNI library for CtxJava.java: Java threads whose samples carry HotSpot
 * frames and OTEP 4947 attributes together. jni.h is not needed: a JNI
 * native method is a C function of this name and these arguments (JNIEnv
 * pointer, class, jint = int32_t), exported.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "otel_ctx.h"

static const char *const key_map[] = {"http.route", "http.request.method",
				      "tenant.id"};

/* Each thread's record (the valid-flag strategy: published once). */
static __thread struct otel_thread_ctx_record record;

OTELCTX_API int32_t Java_CtxJava_publishProcess(void *env, void *cls)
{
	static struct proc_ctx pc = {.kind = PROC_CTX_MEMFD};
	static const struct proc_ctx_kv res[] = {
		{"service.name", "otelprof-ctx-java"},
	};

	(void)env;
	(void)cls;
	return proc_ctx_publish(&pc, res, 1, key_map, 3);
}

/* Thread i's context: trace id 16 bytes of i + 1, span id 8 bytes of
 * 0x80 + i, http.route "/route-<i>" and tenant.id "tenant-<i>". */
OTELCTX_API void Java_CtxJava_setContext(void *env, void *cls, int32_t i)
{
	uint8_t attrs[64];
	char route[24], tenant[24];
	struct otelctx_value v;
	size_t n = 0, len;

	(void)env;
	(void)cls;
	memset(&v, 0, sizeof(v));
	memset(v.trace_id, i + 1, sizeof(v.trace_id));
	memset(v.span_id, 0x80 + i, sizeof(v.span_id));
	snprintf(route, sizeof(route), "/route-%d", (int)i);
	snprintf(tenant, sizeof(tenant), "tenant-%d", (int)i);
	len = strlen(route);
	attrs[n++] = 0; /* http.route */
	attrs[n++] = (uint8_t)len;
	memcpy(attrs + n, route, len);
	n += len;
	len = strlen(tenant);
	attrs[n++] = 2; /* tenant.id */
	attrs[n++] = (uint8_t)len;
	memcpy(attrs + n, tenant, len);
	n += len;
	v.attrs = attrs;
	v.attrs_len = (uint16_t)n;
	otelctx_valid_publish(&record, &v);
}
