// SPDX-License-Identifier: Apache-2.0
#include "context/process_context.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/apm_channel.h"
#include "process_context.pb-c.h"
#include "util/utf8.h"

void process_context_free(struct process_context *c)
{
	for (size_t i = 0; i < c->nattrs; i++) {
		free(c->attrs[i].key);
		free(c->attrs[i].str);
	}
	free(c->attrs);
	for (size_t i = 0; i < c->nkeys; i++)
		free(c->keys[i]);
	free(c->keys);
	free(c->socket_path);
	memset(c, 0, sizeof(*c));
}

/* A copy of a string from the other process, or NULL if unusable. */
static char *checked_strdup(const char *s, size_t n)
{
	char *r;

	if (!s || !n || n > PCTX_MAX_STRING || memchr(s, 0, n) ||
	    !utf8_valid(s, n))
		return NULL;
	r = malloc(n + 1);
	if (!r)
		return NULL;
	memcpy(r, s, n);
	r[n] = '\0';
	return r;
}

/* Replace attribute key (a later value of the same key wins). */
static int put_attr(struct process_context *c, const char *key, size_t klen,
		    const char *str, size_t slen, int64_t ival)
{
	char *k = checked_strdup(key, klen), *v = NULL;
	struct pctx_attr *a = NULL;

	if (!k || (str && !(v = checked_strdup(str, slen)))) {
		free(k);
		c->skipped++;
		return 0;
	}
	for (size_t i = 0; i < c->nattrs; i++)
		if (!strcmp(c->attrs[i].key, k))
			a = &c->attrs[i];
	if (a) {
		free(a->key);
		free(a->str);
	} else {
		struct pctx_attr *nv;

		if (c->nattrs >= PCTX_MAX_ATTRS) {
			free(k);
			free(v);
			c->skipped++;
			return 0;
		}
		nv = realloc(c->attrs, (c->nattrs + 1) * sizeof(*nv));
		if (!nv) {
			free(k);
			free(v);
			return -ENOMEM;
		}
		c->attrs = nv;
		a = &c->attrs[c->nattrs++];
	}
	a->key = k;
	a->str = v;
	a->i = ival;
	return 0;
}

bool pctx_key_observer_owned(const char *key)
{
	/* Namespaces the profiler (or the host-side pipeline: k8sattributes,
	 * resourcedetection) derives from what it observes; a process can
	 * claim anything, so its claims there are never taken. */
	static const char *const owned[] = {
		"container.", "process.", "host.", "thread.",
		"k8s.",	      "cloud.",	  "os.",   "device.",
	};

	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
		if (!strncmp(key, owned[i], strlen(owned[i])))
			return true;
	return false;
}

static int resource_attr(struct process_context *c,
			 const Otelprof__Pctx__KeyValue *kv)
{
	const Otelprof__Pctx__AnyValue *v = kv->value;
	char buf[64];

	if (!kv->key || !v) {
		c->skipped++;
		return 0;
	}
	if (pctx_key_observer_owned(kv->key)) {
		c->denied++;
		return 0;
	}
	switch (v->value_case) {
	case OTELPROF__PCTX__ANY_VALUE__VALUE_STRING_VALUE:
		if (!v->string_value)
			break;
		return put_attr(c, kv->key, strlen(kv->key), v->string_value,
				strlen(v->string_value), 0);
	case OTELPROF__PCTX__ANY_VALUE__VALUE_INT_VALUE:
		return put_attr(c, kv->key, strlen(kv->key), NULL, 0,
				v->int_value);
	case OTELPROF__PCTX__ANY_VALUE__VALUE_BOOL_VALUE:
		snprintf(buf, sizeof(buf), "%s",
			 v->bool_value ? "true" : "false");
		return put_attr(c, kv->key, strlen(kv->key), buf, strlen(buf),
				0);
	case OTELPROF__PCTX__ANY_VALUE__VALUE_DOUBLE_VALUE:
		snprintf(buf, sizeof(buf), "%.17g", v->double_value);
		return put_attr(c, kv->key, strlen(kv->key), buf, strlen(buf),
				0);
	default:
		break; /* arrays and bytes: not resource attributes we carry */
	}
	c->skipped++;
	return 0;
}

static int key_map(struct process_context *c, const Otelprof__Pctx__AnyValue *v)
{
	const Otelprof__Pctx__ArrayValue *a;
	size_t n;

	if (!v ||
	    v->value_case != OTELPROF__PCTX__ANY_VALUE__VALUE_ARRAY_VALUE ||
	    !v->array_value) {
		c->skipped++;
		return 0;
	}
	a = v->array_value;
	n = a->n_values < PCTX_MAX_KEYS ? a->n_values : PCTX_MAX_KEYS;
	if (a->n_values > PCTX_MAX_KEYS)
		c->skipped++;
	c->keys = calloc(n ? n : 1, sizeof(*c->keys));
	if (!c->keys)
		return -ENOMEM;
	c->nkeys = n;
	for (size_t i = 0; i < n; i++) {
		const Otelprof__Pctx__ScalarValue *s = a->values[i];

		if (s &&
		    s->value_case ==
			    OTELPROF__PCTX__SCALAR_VALUE__VALUE_STRING_VALUE &&
		    s->string_value)
			c->keys[i] = checked_strdup(s->string_value,
						    strlen(s->string_value));
		if (!c->keys[i])
			c->skipped++; /* that index decodes to nothing */
	}
	return 0;
}

int process_context_decode(const uint8_t *buf, size_t len,
			   struct process_context *out)
{
	Otelprof__Pctx__ProcessContext *pc;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (len > PCTX_MAX_PAYLOAD)
		return -E2BIG;
	/* protobuf-c checks every length against the buffer; our schema is
	 * not recursive, so nesting is bounded too. */
	pc = otelprof__pctx__process_context__unpack(NULL, len, buf);
	if (!pc)
		return -EINVAL;
	if (pc->resource)
		for (size_t i = 0; !err && i < pc->resource->n_attributes; i++)
			if (pc->resource->attributes[i])
				err = resource_attr(
					out, pc->resource->attributes[i]);
	for (size_t i = 0; !err && i < pc->n_attributes; i++) {
		const Otelprof__Pctx__KeyValue *kv = pc->attributes[i];

		if (kv && kv->key &&
		    !strcmp(kv->key, "threadlocal.attribute_key_map") &&
		    !out->keys)
			err = key_map(out, kv->value);
	}
	otelprof__pctx__process_context__free_unpacked(pc, NULL);
	if (err)
		process_context_free(out);
	return err;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

int process_context_read(uint64_t start, uint64_t end, mem_read_fn rd,
			 void *rd_ctx, struct process_context *out)
{
	uint8_t h[PCTX_HEADER_SIZE], h2[PCTX_HEADER_SIZE], *payload = NULL;
	int err = -EAGAIN;

	if (end < start || end - start < PCTX_HEADER_SIZE)
		return -EINVAL;
	for (int attempt = 0; attempt < PCTX_READ_ATTEMPTS; attempt++) {
		uint64_t ts, ptr;
		uint32_t size;
		struct process_context c;

		err = rd(rd_ctx, start, h, sizeof(h));
		if (err)
			break;
		if (memcmp(h, "OTEL_CTX", 8) || le32(h + 8) != PCTX_VERSION) {
			err = -EINVAL;
			break;
		}
		size = le32(h + 12);
		ts = le64(h + 16);
		ptr = le64(h + 24);
		if (!ts) {
			err = -EAGAIN; /* the publisher is mid-update */
			continue;
		}
		if (ts == out->published_at_ns) {
			err = -EALREADY;
			break;
		}
		if (size > PCTX_MAX_PAYLOAD) {
			err = -E2BIG;
			break;
		}
		payload = realloc(payload, size ? size : 1);
		if (!payload) {
			err = -ENOMEM;
			break;
		}
		err = size ? rd(rd_ctx, ptr, payload, size) : 0;
		if (err)
			break;
		/* Torn read: the publisher changed it while we copied. */
		err = rd(rd_ctx, start, h2, sizeof(h2));
		if (err)
			break;
		if (memcmp(h, h2, sizeof(h))) {
			err = -EAGAIN;
			continue;
		}
		err = process_context_decode(payload, size, &c);
		if (err)
			break;
		c.published_at_ns = ts;
		process_context_free(out);
		*out = c;
		break;
	}
	free(payload);
	return err;
}

/* One u32-length-prefixed string of Elastic's storage at *off. */
static int elastic_string(const uint8_t *buf, size_t len, size_t *off,
			  const uint8_t **s, uint32_t *n)
{
	if (len - *off < 4)
		return -EINVAL;
	*n = le32(buf + *off);
	*off += 4;
	if (*n > len - *off)
		return -EINVAL;
	*s = buf + *off;
	*off += *n;
	return 0;
}

int elastic_storage_decode(const uint8_t *buf, size_t len,
			   struct process_context *out)
{
	const uint8_t *name, *env, *sock;
	uint32_t nname, nenv, nsock;
	size_t off = 2; /* u16 minor version */
	int err;

	memset(out, 0, sizeof(*out));
	if (len < 2)
		return -EINVAL;
	if (elastic_string(buf, len, &off, &name, &nname) ||
	    elastic_string(buf, len, &off, &env, &nenv) ||
	    elastic_string(buf, len, &off, &sock, &nsock))
		return -EINVAL;
	/* Where stack-trace ids go back to the agent (apm_channel.c); a
	 * path we would not follow is dropped here, counted as skipped. */
	if (nsock && apm_socket_path_ok((const char *)sock, nsock)) {
		out->socket_path = malloc(nsock + 1);
		if (out->socket_path) {
			memcpy(out->socket_path, sock, nsock);
			out->socket_path[nsock] = '\0';
		}
	} else if (nsock) {
		out->skipped++;
	}
	err = put_attr(out, "service.name", 12, (const char *)name, nname, 0);
	if (!err && nenv)
		err = put_attr(out, "deployment.environment.name", 27,
			       (const char *)env, nenv, 0);
	if (err)
		process_context_free(out);
	return err;
}

int elastic_storage_read(uint64_t storage_addr, mem_read_fn rd, void *rd_ctx,
			 struct process_context *out)
{
	uint8_t buf[ELASTIC_STORAGE_BYTES];
	uint64_t ptr;
	size_t n = sizeof(buf);
	int err = rd(rd_ctx, storage_addr, &ptr, 8);

	if (err)
		return err;
	if (!ptr)
		return -EAGAIN; /* the agent has not published yet */
	/* Read what is there, up to 4 KiB; a short tail near the end of a
	 * mapping is read in smaller steps. */
	while (n >= 64 && rd(rd_ctx, ptr, buf, n))
		n /= 2;
	if (n < 64)
		return -EFAULT;
	return elastic_storage_decode(buf, n, out);
}
