// SPDX-License-Identifier: Apache-2.0
/* Process context (OTEP 4719, Elastic v1) readers and TLS locations. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "context/process_context.h"
#include "context/thread_attrs.h"
#include "context/tls_location.h"
#include "util/utf8.h"

/* ProcessContext{resource{service.name=checkout, service.version=1.2.3},
 * attributes{threadlocal.attribute_key_map=[http.route, user.id],
 * threadlocal.schema_version=tlsdesc_v1_dev}} */
static const uint8_t payload[] =
	"\x0a\x38\x0a\x1a\x0a\x0c\x73\x65\x72\x76\x69\x63\x65\x2e\x6e\x61\x6d"
	"\x65\x12\x0a\x0a\x08\x63\x68\x65\x63\x6b\x6f\x75\x74\x0a\x1a\x0a\x0f"
	"\x73\x65\x72\x76\x69\x63\x65\x2e\x76\x65\x72\x73\x69\x6f\x6e\x12\x07"
	"\x0a\x05\x31\x2e\x32\x2e\x33\x12\x3c\x0a\x1d\x74\x68\x72\x65\x61\x64"
	"\x6c\x6f\x63\x61\x6c\x2e\x61\x74\x74\x72\x69\x62\x75\x74\x65\x5f\x6b"
	"\x65\x79\x5f\x6d\x61\x70\x12\x1b\x2a\x19\x0a\x0c\x0a\x0a\x68\x74\x74"
	"\x70\x2e\x72\x6f\x75\x74\x65\x0a\x09\x0a\x07\x75\x73\x65\x72\x2e\x69"
	"\x64\x12\x2e\x0a\x1a\x74\x68\x72\x65\x61\x64\x6c\x6f\x63\x61\x6c\x2e"
	"\x73\x63\x68\x65\x6d\x61\x5f\x76\x65\x72\x73\x69\x6f\x6e\x12\x10\x0a"
	"\x0e\x74\x6c\x73\x64\x65\x73\x63\x5f\x76\x31\x5f\x64\x65\x76";

static const char *attr(const struct process_context *c, const char *k)
{
	for (size_t i = 0; i < c->nattrs; i++)
		if (!strcmp(c->attrs[i].key, k))
			return c->attrs[i].str;
	return NULL;
}

static void decodes_resource_and_key_map(void **state)
{
	struct process_context c;

	(void)state;
	assert_int_equal(
		process_context_decode(payload, sizeof(payload) - 1, &c), 0);
	assert_string_equal(attr(&c, "service.name"), "checkout");
	assert_string_equal(attr(&c, "service.version"), "1.2.3");
	assert_int_equal(c.nattrs, 2);
	assert_int_equal(c.nkeys, 2);
	assert_string_equal(c.keys[0], "http.route");
	assert_string_equal(c.keys[1], "user.id");
	process_context_free(&c);
	/* Every truncation is either rejected or decodes to less. */
	for (size_t n = 0; n < sizeof(payload) - 1; n++) {
		int err = process_context_decode(payload, n, &c);

		assert_true(err == 0 || err == -EINVAL);
		if (!err) {
			assert_true(c.nattrs <= 2);
			process_context_free(&c);
		}
	}
}

/* A protobuf writer for the payloads below: tag, varint, bytes. */
struct pb_out {
	uint8_t b[70000];
	size_t n;
};

static void put_varint(struct pb_out *o, uint64_t v)
{
	do {
		o->b[o->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void put_ld(struct pb_out *o, unsigned field, const void *p, size_t n)
{
	put_varint(o, field << 3 | 2);
	put_varint(o, n);
	memcpy(o->b + o->n, p, n);
	o->n += n;
}

static void put_sub(struct pb_out *o, unsigned field, const struct pb_out *sub)
{
	put_ld(o, field, sub->b, sub->n);
}

/* KeyValue{key, value: AnyValue of the given bytes}, value first if asked. */
static void put_kv(struct pb_out *o, const char *key, size_t klen,
		   const struct pb_out *any, bool value_first)
{
	static struct pb_out kv;

	kv.n = 0;
	if (value_first)
		put_sub(&kv, 2, any);
	put_ld(&kv, 1, key, klen);
	if (!value_first)
		put_sub(&kv, 2, any);
	put_sub(o, 1, &kv);
}

static struct pb_out *any_string(const char *s, size_t n)
{
	static struct pb_out a;

	a.n = 0;
	put_ld(&a, 1, s, n);
	return &a;
}

/* What the decoder makes of payloads a publisher may get wrong, or a
 * process may forge: each value alone is skipped (counted), the rest
 * kept; nothing on the heap grows with the payload. */
static void decodes_hostile_payloads(void **state)
{
	static struct pb_out res, ctx, any, arr, sc;
	static char big[PCTX_MAX_STRING + 2];
	struct process_context c;

	(void)state;
	/* A value over PCTX_MAX_STRING, a key with a NUL in it, a string
	 * then an int for one oneof (the last wins), a bool sent as bytes
	 * (another wire type: an unknown field, so no value), and a good
	 * one. */
	memset(big, 'x', sizeof(big));
	res.n = 0;
	put_kv(&res, "service.name", 12, any_string(big, sizeof(big)), false);
	put_kv(&res, "a\0b", 3, any_string("v", 1), false);
	any.n = 0;
	put_ld(&any, 1, "text", 4);
	put_varint(&any, 3 << 3 | 0);
	put_varint(&any, 42);
	put_kv(&res, "n", 1, &any, false);
	any.n = 0;
	put_ld(&any, 2, "\x01", 1);
	put_kv(&res, "b", 1, &any, false);
	put_kv(&res, "service.version", 15, any_string("1.0", 3), true);
	any.n = 0;
	put_varint(&any, 2 << 3 | 0);
	put_varint(&any, 1);
	put_kv(&res, "flag", 4, &any, false);
	any.n = 0;
	put_varint(&any, 4 << 3 | 1);
	memcpy(any.b + any.n, "\0\0\0\0\0\0\xf8\x3f", 8); /* 1.5 */
	any.n += 8;
	put_kv(&res, "ratio", 5, &any, false);
	ctx.n = 0;
	put_sub(&ctx, 1, &res);
	assert_int_equal(process_context_decode(ctx.b, ctx.n, &c), 0);
	assert_int_equal(c.nattrs, 4);
	assert_string_equal(attr(&c, "flag"), "true");
	assert_string_equal(attr(&c, "ratio"), "1.5");
	assert_null(attr(&c, "service.name"));
	assert_null(attr(&c, "a"));
	assert_null(attr(&c, "b"));
	assert_string_equal(attr(&c, "service.version"), "1.0");
	for (size_t i = 0; i < c.nattrs; i++)
		if (!strcmp(c.attrs[i].key, "n"))
			assert_true(!c.attrs[i].str && c.attrs[i].i == 42);
	assert_int_equal(c.skipped, 3);
	process_context_free(&c);

	/* The key map with its value before its key, 300 entries: the first
	 * PCTX_MAX_KEYS kept, the rest counted once. */
	arr.n = 0;
	for (int i = 0; i < 300; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%d", i);
		sc.n = 0;
		put_ld(&sc, 1, k, strlen(k));
		put_sub(&arr, 1, &sc);
	}
	any.n = 0;
	put_sub(&any, 5, &arr);
	ctx.n = 0;
	{
		static struct pb_out attrs;

		attrs.n = 0;
		put_kv(&attrs, "threadlocal.attribute_key_map", 29, &any, true);
		/* put_kv wrote field 1; context attributes are field 2 */
		attrs.b[0] = 2 << 3 | 2;
		memcpy(ctx.b, attrs.b, attrs.n);
		ctx.n = attrs.n;
	}
	assert_int_equal(process_context_decode(ctx.b, ctx.n, &c), 0);
	assert_int_equal(c.nkeys, PCTX_MAX_KEYS);
	assert_string_equal(c.keys[0], "k0");
	assert_string_equal(c.keys[PCTX_MAX_KEYS - 1], "k255");
	assert_int_equal(c.skipped, 1);
	process_context_free(&c);

	/* 64 KiB of empty attributes: all skipped, none kept. */
	res.n = 0;
	while (res.n + 2 <= PCTX_MAX_PAYLOAD - 4) {
		res.b[res.n++] = 1 << 3 | 2;
		res.b[res.n++] = 0;
	}
	ctx.n = 0;
	put_sub(&ctx, 1, &res);
	assert_true(ctx.n <= PCTX_MAX_PAYLOAD);
	assert_int_equal(process_context_decode(ctx.b, ctx.n, &c), 0);
	assert_int_equal(c.nattrs, 0);
	assert_int_equal(c.skipped, res.n / 2);
	process_context_free(&c);
	/* Over the payload limit: refused before decoding. */
	assert_int_equal(
		process_context_decode(ctx.b, PCTX_MAX_PAYLOAD + 1, &c),
		-E2BIG);
}

/* A fake address space: header at 0x1000, payload at 0x2000. */
struct fake {
	uint8_t hdr[32];
	const uint8_t *payload;
	size_t payload_len;
	int reads;
	int bump_ts_on_read; /* a publisher updating under us */
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake *f = ctx;

	f->reads++;
	if (addr == 0x1000 && len == 32) {
		memcpy(buf, f->hdr, 32);
		if (f->bump_ts_on_read) {
			f->bump_ts_on_read--;
			f->hdr[16]++;
		}
		return 0;
	}
	if (addr == 0x2000 && len <= f->payload_len) {
		memcpy(buf, f->payload, len);
		return 0;
	}
	return -EFAULT;
}

static void fake_init(struct fake *f, uint64_t ts)
{
	uint32_t v = 2, n = sizeof(payload) - 1;
	uint64_t ptr = 0x2000;

	memset(f, 0, sizeof(*f));
	memcpy(f->hdr, "OTEL_CTX", 8);
	memcpy(f->hdr + 8, &v, 4);
	memcpy(f->hdr + 12, &n, 4);
	memcpy(f->hdr + 16, &ts, 8);
	memcpy(f->hdr + 24, &ptr, 8);
	f->payload = payload;
	f->payload_len = n;
}

static void reads_header_protocol(void **state)
{
	struct process_context c;
	struct fake f;

	(void)state;
	memset(&c, 0, sizeof(c));
	fake_init(&f, 0); /* update in progress */
	assert_int_equal(
		process_context_read(0x1000, 0x2000, fake_read, &f, &c),
		-EAGAIN);
	assert_int_equal(c.published_at_ns, 0);

	fake_init(&f, 77);
	assert_int_equal(
		process_context_read(0x1000, 0x2000, fake_read, &f, &c), 0);
	assert_int_equal(c.published_at_ns, 77);
	assert_string_equal(attr(&c, "service.name"), "checkout");
	/* Same timestamp: nothing to do. */
	assert_int_equal(
		process_context_read(0x1000, 0x2000, fake_read, &f, &c),
		-EALREADY);

	/* Torn read: the timestamp changes between the two header reads;
	 * the reader retries and ends with the newer publication. */
	fake_init(&f, 100);
	f.bump_ts_on_read = 1;
	assert_int_equal(
		process_context_read(0x1000, 0x2000, fake_read, &f, &c), 0);
	assert_int_equal(c.published_at_ns, 101);
	/* A publisher that never settles: give up for now, keep the old. */
	fake_init(&f, 200);
	f.bump_ts_on_read = 1000;
	assert_int_equal(
		process_context_read(0x1000, 0x2000, fake_read, &f, &c),
		-EAGAIN);
	assert_int_equal(c.published_at_ns, 101);

	/* Wrong signature or version, oversized payload, bad pointer. */
	fake_init(&f, 300);
	f.hdr[0] = 'X';
	assert_int_equal(
		process_context_read(0x1000, 0x2000, fake_read, &f, &c),
		-EINVAL);
	fake_init(&f, 300);
	f.hdr[8] = 3;
	assert_int_equal(
		process_context_read(0x1000, 0x2000, fake_read, &f, &c),
		-EINVAL);
	fake_init(&f, 300);
	f.hdr[14] = 0x10; /* 1 MiB */
	assert_int_equal(
		process_context_read(0x1000, 0x2000, fake_read, &f, &c),
		-E2BIG);
	fake_init(&f, 300);
	f.hdr[25] = 0x40;
	assert_int_equal(
		process_context_read(0x1000, 0x2000, fake_read, &f, &c),
		-EFAULT);
	/* A mapping too small for the header. */
	assert_int_equal(
		process_context_read(0x1000, 0x1010, fake_read, &f, &c),
		-EINVAL);
	assert_int_equal(c.published_at_ns, 101);
	process_context_free(&c);
}

static void decodes_elastic_storage(void **state)
{
	static const uint8_t ok[] = "\x01\x00"
				    "\x03\x00\x00\x00svc"
				    "\x04\x00\x00\x00prod"
				    "\x05\x00\x00\x00/sock";
	static const uint8_t bad_utf8[] = "\x01\x00"
					  "\x02\x00\x00\x00\xff\xfe"
					  "\x00\x00\x00\x00"
					  "\x00\x00\x00\x00";
	struct process_context c;

	(void)state;
	assert_int_equal(elastic_storage_decode(ok, sizeof(ok) - 1, &c), 0);
	assert_string_equal(attr(&c, "service.name"), "svc");
	assert_string_equal(attr(&c, "deployment.environment.name"), "prod");
	assert_string_equal(c.socket_path, "/sock");
	process_context_free(&c);
	{
		/* A socket path out of the process's root is not kept. */
		static const uint8_t up[] = "\x01\x00"
					    "\x03\x00\x00\x00svc"
					    "\x00\x00\x00\x00"
					    "\x0a\x00\x00\x00/a/../sock";

		assert_int_equal(elastic_storage_decode(up, sizeof(up) - 1, &c),
				 0);
		assert_null(c.socket_path);
		assert_int_equal(c.skipped, 1);
		process_context_free(&c);
	}
	/* Lengths past the end are rejected, at every truncation. */
	for (size_t n = 0; n < sizeof(ok) - 1; n++)
		assert_int_equal(elastic_storage_decode(ok, n, &c), -EINVAL);
	/* Invalid UTF-8 never reaches OTLP strings: skipped and counted. */
	assert_int_equal(
		elastic_storage_decode(bad_utf8, sizeof(bad_utf8) - 1, &c), 0);
	assert_null(attr(&c, "service.name"));
	assert_true(c.skipped > 0);
	process_context_free(&c);
}

static void validates_utf8(void **state)
{
	(void)state;
	assert_true(utf8_valid("abc", 3));
	assert_true(utf8_valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9));
	assert_false(utf8_valid("\xc0\xaf", 2));	 /* overlong */
	assert_false(utf8_valid("\xed\xa0\x80", 3));	 /* surrogate */
	assert_false(utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
	assert_false(utf8_valid("\xe2\x82", 2));	 /* truncated */
}

static void tls_locations(void **state)
{
	struct tls_ctx_symbol s;
	struct otelprof_tls_loc loc;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.access = TLS_ACCESS_LOCAL_EXEC;
	s.le_offset = -24;
	assert_int_equal(tls_location_of(&s, 0x555500000000, true, &loc), 0);
	assert_int_equal(loc.kind, OTELPROF_TLS_TP_OFFSET);
	assert_int_equal(loc.tp_offset, -24);
	/* Local-exec only means something in the executable itself. */
	assert_int_equal(tls_location_of(&s, 0, false, &loc), -ENOENT);
	s.le_offset = 16; /* above the thread pointer: not x86_64 */
	assert_int_equal(tls_location_of(&s, 0, true, &loc), -ENOENT);

	s.access = TLS_ACCESS_TLSDESC;
	s.got_vaddr = 0x4010;
	assert_int_equal(tls_location_of(&s, 0x7f0000000000, false, &loc), 0);
	assert_int_equal(loc.kind, OTELPROF_TLS_DESC);
	assert_int_equal(loc.addr, 0x7f0000004010);
	s.access = TLS_ACCESS_DTPMOD;
	s.st_value = 0x60;
	assert_int_equal(tls_location_of(&s, 0x7f0000000000, false, &loc), 0);
	assert_int_equal(loc.kind, OTELPROF_TLS_DTPMOD_GOT);
	assert_int_equal(loc.offset, 0x60);
	s.access = TLS_ACCESS_TPOFF;
	assert_int_equal(tls_location_of(&s, 0x7f0000000000, false, &loc), 0);
	assert_int_equal(loc.kind, OTELPROF_TLS_TPOFF_GOT);
	/* A hostile file's addresses that leave user space. */
	s.got_vaddr = 0xffffffffffff0000ull;
	assert_int_equal(tls_location_of(&s, 0x7f0000000000, false, &loc),
			 -ENOENT);
}

static void decodes_thread_attributes(void **state)
{
	static char k0[] = "http.route", k1[] = "user.id";
	char *const keys[] = {k0, NULL, k1};
	/* route, a key without a name, user, route again (dropped: first
	 * wins), invalid UTF-8, an unknown index, then a truncated entry. */
	static const uint8_t data[] = "\x00\x05/pay!"
				      "\x01\x01x"
				      "\x02\x02"
				      "42"
				      "\x00\x01y"
				      "\x02\x01\xff"
				      "\x09\x01z"
				      "\x02\x09short";
	struct thread_attr a[THREAD_ATTRS_MAX];
	uint64_t dropped = 0;
	size_t n;

	(void)state;
	n = thread_attrs_decode(data, sizeof(data) - 1, keys, 3, a,
				THREAD_ATTRS_MAX, &dropped);
	assert_int_equal(n, 2);
	assert_string_equal(a[0].key, "http.route");
	assert_string_equal(a[0].value, "/pay!");
	assert_string_equal(a[1].key, "user.id");
	assert_string_equal(a[1].value, "42");
	assert_int_equal(dropped, 5);
	/* No key map (no process context yet): everything dropped. */
	dropped = 0;
	assert_int_equal(thread_attrs_decode(data, sizeof(data) - 1, NULL, 0, a,
					     THREAD_ATTRS_MAX, &dropped),
			 0);
	assert_int_equal(dropped, 7);
	/* A value of 255 bytes, the most an entry can say. */
	{
		uint8_t big[2 + 255];

		big[0] = 0;
		big[1] = 255;
		memset(big + 2, 'v', 255);
		dropped = 0;
		assert_int_equal(thread_attrs_decode(big, sizeof(big), keys, 3,
						     a, 1, &dropped),
				 1);
		assert_int_equal(strlen(a[0].value), 255);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decodes_resource_and_key_map),
		cmocka_unit_test(decodes_hostile_payloads),
		cmocka_unit_test(reads_header_protocol),
		cmocka_unit_test(decodes_elastic_storage),
		cmocka_unit_test(validates_utf8),
		cmocka_unit_test(tls_locations),
		cmocka_unit_test(decodes_thread_attributes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
