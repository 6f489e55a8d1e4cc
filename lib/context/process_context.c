// SPDX-License-Identifier: Apache-2.0
#include "context/process_context.h"

#include <errno.h>
#include <inttypes.h>
#include <pb_decode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/apm_channel.h"
#include "process_context.pb.h"
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

/*
 * Decoding with nanopb, every field a callback (process_context.options):
 * no heap and no object tree whatever the payload holds (protobuf-c built
 * one: a hostile 64 KiB payload of empty attributes was 32,781 allocations,
 * 3.6 MB and 7 ms per decode), a string over PCTX_MAX_STRING skipped
 * alone, and of a oneof's members the last on the wire wins (each
 * member's callback overwrites the value), as protobuf says.
 */
enum value_kind {
	VALUE_NONE,
	VALUE_STRING,
	VALUE_BOOL,
	VALUE_INT,
	VALUE_DOUBLE,
	VALUE_ARRAY,
	VALUE_OTHER
};

/* The payload being decoded, for wire_is_string. */
struct payload {
	const uint8_t *lo, *hi;
};

/* One AnyValue or ScalarValue. */
struct value {
	const struct payload *p;
	bool present; /* the field was there (it may have held nothing) */
	enum value_kind kind;
	size_t n; /* string bytes in s */
	int64_t i;
	double d;
	bool b;
	/* VALUE_ARRAY: the ArrayValue's bytes, read once the key is known
	 * (it may follow the value): a copy of a memory-buffer stream reads
	 * the same bytes again. */
	pb_istream_t array;
	char s[PCTX_MAX_STRING + 1];
};

struct key_value {
	const struct payload *p;
	bool has_key; /* a key within PCTX_MAX_STRING */
	size_t klen;
	char key[PCTX_MAX_STRING + 1];
	struct value v;
};

struct decode {
	struct payload p;
	struct process_context *out;
	int err;	/* -ENOMEM: stop */
	bool keys_over; /* the key map ran past PCTX_MAX_KEYS (counted) */
};

/*
 * Was the field on the wire length-delimited (a string, bytes or a
 * message)? A callback is not told, and a field whose wire type does not
 * match its declaration is an unknown field to protobuf (and was to
 * protobuf-c here), skipped. nanopb hands a callback a length-delimited
 * field as a stream over the payload itself, and a varint or fixed-size
 * one as a stream over a copy on its own stack (pb_decode.c,
 * decode_callback_field): where the stream reads from tells them apart.
 * (A nanopb that read scalars in place would drop every int and bool:
 * test_context fails then, loudly.)
 */
static bool wire_is_string(const pb_istream_t *st, const struct payload *p)
{
	const uint8_t *at = st->state;

	return at >= p->lo && at <= p->hi;
}

/* A string field of at most PCTX_MAX_STRING bytes into buf, NUL-ended;
 * a longer one is left unread (nanopb skips the rest) and *n set past
 * the limit. */
static bool read_string(pb_istream_t *st, char *buf, size_t *n)
{
	*n = st->bytes_left;
	if (*n > PCTX_MAX_STRING)
		return true;
	if (!pb_read(st, (pb_byte_t *)buf, *n))
		return false;
	buf[*n] = '\0';
	return true;
}

static bool value_string(pb_istream_t *st, const pb_field_t *f, void **arg)
{
	struct value *v = *arg;

	(void)f;
	if (!wire_is_string(st, v->p))
		return true; /* another wire type: an unknown field */
	if (!read_string(st, v->s, &v->n))
		return false;
	v->kind = v->n > PCTX_MAX_STRING ? VALUE_OTHER : VALUE_STRING;
	return true;
}

/* bool_value and int_value: both varints (the same tags in AnyValue and
 * ScalarValue). */
static bool value_varint(pb_istream_t *st, const pb_field_t *f, void **arg)
{
	struct value *v = *arg;
	uint64_t x;

	if (wire_is_string(st, v->p))
		return true;
	if (!pb_decode_varint(st, &x))
		return false;
	if (f->tag == otelprof_pctx_AnyValue_bool_value_tag) {
		v->kind = VALUE_BOOL;
		v->b = x != 0;
	} else {
		v->kind = VALUE_INT;
		v->i = (int64_t)x;
	}
	return true;
}

static bool value_double(pb_istream_t *st, const pb_field_t *f, void **arg)
{
	struct value *v = *arg;

	(void)f;
	if (wire_is_string(st, v->p) || st->bytes_left != 8)
		return true;
	if (!pb_decode_fixed64(st, &v->d))
		return false;
	v->kind = VALUE_DOUBLE;
	return true;
}

static bool value_array(pb_istream_t *st, const pb_field_t *f, void **arg)
{
	struct value *v = *arg;

	(void)f;
	if (!wire_is_string(st, v->p))
		return true;
	v->kind = VALUE_ARRAY;
	v->array = *st; /* left unread here: skipped by nanopb */
	return true;
}

static bool value_other(pb_istream_t *st, const pb_field_t *f, void **arg)
{
	struct value *v = *arg;

	(void)f;
	if (!wire_is_string(st, v->p))
		return true;
	v->kind = VALUE_OTHER; /* bytes: not a value we carry */
	return true;
}

#define VALUE_CB(fn, v)                                                        \
	{                                                                      \
		.funcs.decode = (fn), .arg = (v)                               \
	}

static bool decode_any_value(pb_istream_t *st, const pb_field_t *f, void **arg)
{
	struct value *v = *arg;
	otelprof_pctx_AnyValue m = {
		.string_value = VALUE_CB(value_string, v),
		.bool_value = VALUE_CB(value_varint, v),
		.int_value = VALUE_CB(value_varint, v),
		.double_value = VALUE_CB(value_double, v),
		.array_value = VALUE_CB(value_array, v),
		.bytes_value = VALUE_CB(value_other, v),
	};

	(void)f;
	if (!wire_is_string(st, v->p))
		return true;
	v->present = true;
	v->kind = VALUE_NONE;
	return pb_decode(st, otelprof_pctx_AnyValue_fields, &m);
}

static bool decode_key(pb_istream_t *st, const pb_field_t *f, void **arg)
{
	struct key_value *kv = *arg;

	(void)f;
	if (!wire_is_string(st, kv->p))
		return true;
	if (!read_string(st, kv->key, &kv->klen))
		return false;
	kv->has_key = kv->klen <= PCTX_MAX_STRING;
	return true;
}

static bool decode_key_value(pb_istream_t *st, const struct payload *p,
			     struct key_value *kv)
{
	otelprof_pctx_KeyValue m = {
		.key = VALUE_CB(decode_key, kv),
		.value = VALUE_CB(decode_any_value, &kv->v),
	};

	/* Not the whole struct: its buffers are written before use. */
	kv->p = kv->v.p = p;
	kv->has_key = kv->v.present = false;
	kv->v.kind = VALUE_NONE;
	return pb_decode(st, otelprof_pctx_KeyValue_fields, &m);
}

static int resource_attr(struct process_context *c, const struct key_value *kv)
{
	const struct value *v = &kv->v;
	char buf[64];

	if (!kv->has_key || !v->present) {
		c->skipped++;
		return 0;
	}
	if (pctx_key_observer_owned(kv->key)) {
		c->denied++;
		return 0;
	}
	switch (v->kind) {
	case VALUE_STRING:
		return put_attr(c, kv->key, kv->klen, v->s, v->n, 0);
	case VALUE_INT:
		return put_attr(c, kv->key, kv->klen, NULL, 0, v->i);
	case VALUE_BOOL:
		snprintf(buf, sizeof(buf), "%s", v->b ? "true" : "false");
		return put_attr(c, kv->key, kv->klen, buf, strlen(buf), 0);
	case VALUE_DOUBLE:
		snprintf(buf, sizeof(buf), "%.17g", v->d);
		return put_attr(c, kv->key, kv->klen, buf, strlen(buf), 0);
	default:
		break; /* arrays and bytes: not resource attributes we carry */
	}
	c->skipped++;
	return 0;
}

static bool decode_resource_attr(pb_istream_t *st, const pb_field_t *f,
				 void **arg)
{
	struct decode *d = *arg;
	struct key_value kv;

	(void)f;
	if (!decode_key_value(st, &d->p, &kv))
		return false;
	d->err = resource_attr(d->out, &kv);
	return !d->err;
}

/* One entry of the key map: its index is its place in the array. */
static bool decode_key_map_entry(pb_istream_t *st, const pb_field_t *f,
				 void **arg)
{
	struct decode *d = *arg;
	struct process_context *c = d->out;
	struct value v = {.p = &d->p, .kind = VALUE_NONE};
	otelprof_pctx_ScalarValue m = {
		.string_value = VALUE_CB(value_string, &v),
		.bool_value = VALUE_CB(value_varint, &v),
		.int_value = VALUE_CB(value_varint, &v),
		.double_value = VALUE_CB(value_double, &v),
		.bytes_value = VALUE_CB(value_other, &v),
	};
	size_t i;

	(void)f;
	if (!pb_decode(st, otelprof_pctx_ScalarValue_fields, &m))
		return false;
	if (c->nkeys >= PCTX_MAX_KEYS) {
		if (!d->keys_over)
			c->skipped++;
		d->keys_over = true;
		return true;
	}
	i = c->nkeys++;
	if (v.kind == VALUE_STRING)
		c->keys[i] = checked_strdup(v.s, v.n);
	if (!c->keys[i])
		c->skipped++; /* that index decodes to nothing */
	return true;
}

static int key_map(struct decode *d, const struct value *v)
{
	struct process_context *c = d->out;
	pb_istream_t st = v->array;
	otelprof_pctx_ArrayValue m = {
		.values = VALUE_CB(decode_key_map_entry, d),
	};

	if (v->kind != VALUE_ARRAY) {
		c->skipped++;
		return 0;
	}
	c->keys = calloc(PCTX_MAX_KEYS, sizeof(*c->keys));
	if (!c->keys)
		return -ENOMEM;
	if (!pb_decode(&st, otelprof_pctx_ArrayValue_fields, &m))
		return -EINVAL;
	/* Sized for the most keys while decoding; kept for those read. */
	if (c->nkeys < PCTX_MAX_KEYS) {
		char **k = realloc(c->keys, (c->nkeys ? c->nkeys : 1) *
						    sizeof(*c->keys));

		if (k)
			c->keys = k;
	}
	return 0;
}

static bool decode_context_attr(pb_istream_t *st, const pb_field_t *f,
				void **arg)
{
	static const char map_key[] = "threadlocal.attribute_key_map";
	struct decode *d = *arg;
	struct key_value kv;

	(void)f;
	if (!decode_key_value(st, &d->p, &kv))
		return false;
	/* The first key map counts; other attributes are not ours. */
	if (kv.has_key && kv.klen == sizeof(map_key) - 1 &&
	    !memcmp(kv.key, map_key, kv.klen) && !d->out->keys)
		d->err = key_map(d, &kv.v);
	return !d->err;
}

int process_context_decode(const uint8_t *buf, size_t len,
			   struct process_context *out)
{
	struct decode d = {.p = {buf, buf + len}, .out = out};
	otelprof_pctx_ProcessContext m = {
		.resource.attributes = VALUE_CB(decode_resource_attr, &d),
		.attributes = VALUE_CB(decode_context_attr, &d),
	};
	pb_istream_t st;

	memset(out, 0, sizeof(*out));
	if (len > PCTX_MAX_PAYLOAD)
		return -E2BIG;
	/* nanopb checks every length against the buffer; the schema is not
	 * recursive, so nesting is bounded too. */
	st = pb_istream_from_buffer(buf, len);
	if (!pb_decode(&st, otelprof_pctx_ProcessContext_fields, &m)) {
		int err = d.err ? d.err : -EINVAL;

		process_context_free(out);
		return err;
	}
	return 0;
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
