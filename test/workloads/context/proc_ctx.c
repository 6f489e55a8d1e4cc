// SPDX-License-Identifier: Apache-2.0
/*
 * OTEP 4719 process-context publisher with a hand-written protobuf writer.
 * Publication: map (memfd, or anonymous private/shared), MADV_DONTFORK,
 * header fields, barrier, signature last, then name the mapping with
 * prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, ...) unconditionally (it fails
 * for memfd mappings and on kernels without CONFIG_ANON_VMA_NAME; readers
 * may still watch the call). Update: published_at_ns = 0, barrier, new
 * payload pointer and size, barrier, new published_at_ns, prctl again.
 *
 * Payload: ProcessContext { Resource resource = 1;
 *                           repeated KeyValue attributes = 2; }
 * The first payload of anonymous mappings follows the header; memfd
 * payloads and every update live on the heap (the header points to them).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "otel_ctx.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA	     0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

struct otel_ctx_header {
	char signature[8]; /* "OTEL_CTX", written last */
	uint32_t version;  /* 2 */
	uint32_t payload_size;
	uint64_t published_at_ns; /* 0 while an update is in progress */
	uint64_t payload;	  /* address in this process */
};

_Static_assert(sizeof(struct otel_ctx_header) == 32, "header layout");

/* ---- minimal protobuf writer ---- */
struct pb {
	uint8_t *p;
	size_t len, cap;
	int oom;
};

static void pb_raw(struct pb *b, const void *data, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		uint8_t *p;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n] = v & 0x7f;
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	pb_raw(b, tmp, n);
}

/* Field with wire type 2 (length-delimited). */
static void pb_bytes(struct pb *b, unsigned field, const void *data, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_raw(b, data, n);
}

static void pb_str(struct pb *b, unsigned field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

/* Appends inner as a sub-message and frees it. */
static void pb_msg(struct pb *b, unsigned field, struct pb *inner)
{
	if (inner->oom)
		b->oom = 1;
	pb_bytes(b, field, inner->p, inner->len);
	free(inner->p);
	memset(inner, 0, sizeof(*inner));
}

/* KeyValue { string key = 1; AnyValue value = 2; } with
 * AnyValue { string string_value = 1; ArrayValue array_value = 5; } */
static void kv_string(struct pb *out, unsigned field, const char *key,
		      const char *value)
{
	struct pb kv = {0}, any = {0};

	pb_str(&kv, 1, key);
	pb_str(&any, 1, value);
	pb_msg(&kv, 2, &any);
	pb_msg(out, field, &kv);
}

/* ArrayValue { repeated AnyValue values = 1; } */
static void kv_string_array(struct pb *out, unsigned field, const char *key,
			    const char *const *values, int n)
{
	struct pb kv = {0}, any = {0}, arr = {0};

	for (int i = 0; i < n; i++) {
		struct pb v = {0};

		pb_str(&v, 1, values[i]);
		pb_msg(&arr, 1, &v);
	}
	pb_str(&kv, 1, key);
	pb_msg(&any, 5, &arr);
	pb_msg(&kv, 2, &any);
	pb_msg(out, field, &kv);
}

static int encode(struct pb *out, const struct proc_ctx_kv *resource,
		  int nresource, const char *const *key_map, int nkeys)
{
	struct pb res = {0};

	/* Resource { repeated KeyValue attributes = 1; } */
	for (int i = 0; i < nresource; i++)
		kv_string(&res, 1, resource[i].key, resource[i].value);
	pb_msg(out, 1, &res);
	kv_string(out, 2, "threadlocal.schema_version", "tlsdesc_v1_dev");
	kv_string_array(out, 2, "threadlocal.attribute_key_map", key_map,
			nkeys);
	return out->oom ? -ENOMEM : 0;
}

/* ---- publication ---- */
static uint64_t boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void name_mapping(struct proc_ctx *pc)
{
	if (pc->no_prctl)
		return;
	pc->named =
		prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)pc->map,
		      pc->map_len, (unsigned long)"OTEL_CTX") == 0;
}

static int map_region(struct proc_ctx *pc, size_t len)
{
	void *m = MAP_FAILED;

	pc->map_len = len;
	if (pc->kind == PROC_CTX_MEMFD) {
		int fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);

		if (fd < 0)
			return -errno;
		if (ftruncate(fd, (off_t)len) == 0)
			m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE,
				 fd, 0);
		close(fd);
	} else {
		int flags = pc->kind == PROC_CTX_ANON_SHMEM ? MAP_SHARED
							    : MAP_PRIVATE;

		m = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 flags | MAP_ANONYMOUS, -1, 0);
	}
	if (m == MAP_FAILED)
		return -errno;
	if (madvise(m, len, MADV_DONTFORK)) {
		int e = -errno;

		munmap(m, len);
		return e;
	}
	pc->map = m;
	return 0;
}

int proc_ctx_publish(struct proc_ctx *pc, const struct proc_ctx_kv *resource,
		     int nresource, const char *const *key_map, int nkeys)
{
	struct otel_ctx_header *h;
	struct pb payload = {0};
	uint64_t now;
	void *where;
	int e;

	if (pc->kind == PROC_CTX_NONE)
		return -EINVAL;
	e = encode(&payload, resource, nresource, key_map, nkeys);
	if (e) {
		free(payload.p);
		return e;
	}
	if (!pc->map) {
		long page = sysconf(_SC_PAGESIZE);
		size_t len = ((sizeof(*h) + payload.len) / (size_t)page + 1) *
			     (size_t)page;

		e = map_region(pc, len);
		if (e) {
			free(payload.p);
			return e;
		}
		h = pc->map;
		if (pc->kind == PROC_CTX_MEMFD) {
			where = payload.p; /* stays allocated for readers */
		} else {
			where = h + 1;
			memcpy(where, payload.p, payload.len);
			free(payload.p);
		}
		h->version = 2;
		h->payload_size = (uint32_t)payload.len;
		h->payload = (uint64_t)(uintptr_t)where;
		pc->published_at_ns = boottime_ns();
		h->published_at_ns = pc->published_at_ns;
		atomic_thread_fence(memory_order_seq_cst);
		memcpy(h->signature, "OTEL_CTX", sizeof(h->signature));
		atomic_thread_fence(memory_order_seq_cst);
		name_mapping(pc);
		return 0;
	}
	/* Update: the old payload stays allocated (a reader may be on it). */
	h = pc->map;
	__atomic_store_n(&h->published_at_ns, 0, __ATOMIC_SEQ_CST);
	h->payload = (uint64_t)(uintptr_t)payload.p;
	h->payload_size = (uint32_t)payload.len;
	atomic_thread_fence(memory_order_seq_cst);
	now = boottime_ns();
	if (now == pc->published_at_ns)
		now++;
	pc->published_at_ns = now;
	__atomic_store_n(&h->published_at_ns, now, __ATOMIC_SEQ_CST);
	name_mapping(pc);
	return 0;
}
