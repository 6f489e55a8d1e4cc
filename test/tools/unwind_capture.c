// SPDX-License-Identifier: Apache-2.0
/* The capture format (unwind_capture.h): bounded reader, writer. */
#include "unwind_capture.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rd {
	const uint8_t *p;
	size_t len, off;
	char *err;
	size_t errlen;
	bool failed;
};

static void fail(struct rd *r, const char *fmt, ...)
{
	va_list ap;

	if (r->failed)
		return;
	r->failed = true;
	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
}

static bool take(struct rd *r, void *out, size_t n, const char *what)
{
	if (r->failed)
		return false;
	if (r->len - r->off < n) {
		fail(r, "truncated at byte %zu: %s needs %zu bytes, %zu left",
		     r->off, what, n, r->len - r->off);
		return false;
	}
	if (out)
		memcpy(out, r->p + r->off, n);
	r->off += n;
	return true;
}

/* Little-endian whatever the host. */
static uint64_t get_le(struct rd *r, size_t n, const char *what)
{
	uint8_t b[8] = {0};
	uint64_t v = 0;

	if (!take(r, b, n, what))
		return 0;
	for (size_t i = n; i-- > 0;)
		v = v << 8 | b[i];
	return v;
}

#define U16(r, w) ((uint16_t)get_le((r), 2, (w)))
#define U32(r, w) ((uint32_t)get_le((r), 4, (w)))
#define U64(r, w) get_le((r), 8, (w))

/* n bytes as a NUL-terminated string; no NUL inside. */
static char *get_str(struct rd *r, size_t n, const char *what)
{
	char *s;

	if (r->failed || r->len - r->off < n) {
		take(r, NULL, n, what);
		return NULL;
	}
	if (memchr(r->p + r->off, 0, n)) {
		fail(r, "%s at byte %zu holds a NUL", what, r->off);
		return NULL;
	}
	s = malloc(n + 1);
	if (!s) {
		fail(r, "out of memory");
		return NULL;
	}
	memcpy(s, r->p + r->off, n);
	s[n] = 0;
	r->off += n;
	return s;
}

static uint8_t *get_bytes(struct rd *r, size_t n, const char *what)
{
	uint8_t *b;

	if (r->failed || r->len - r->off < n) {
		take(r, NULL, n, what);
		return NULL;
	}
	b = malloc(n ? n : 1);
	if (!b) {
		fail(r, "out of memory");
		return NULL;
	}
	memcpy(b, r->p + r->off, n);
	r->off += n;
	return b;
}

/* fail, then leave the function */
#define FAIL_RET(...)                                                          \
	do {                                                                   \
		fail(__VA_ARGS__);                                             \
		return;                                                        \
	} while (0)

static void parse_map(struct rd *r, struct unwind_capture_map *m, uint32_t i)
{
	uint32_t image_len;
	uint16_t path_len, bid_len;

	m->start = U64(r, "mapping start");
	m->end = U64(r, "mapping end");
	m->offset = U64(r, "mapping offset");
	m->dev = U64(r, "mapping dev");
	m->ino = U64(r, "mapping inode");
	m->size = U64(r, "mapping file size");
	m->mtime_ns = U64(r, "mapping mtime");
	m->flags = U32(r, "mapping flags");
	image_len = U32(r, "mapping image length");
	path_len = U16(r, "mapping path length");
	bid_len = U16(r, "mapping build id length");
	if (r->failed)
		return;
	if (m->start >= m->end)
		FAIL_RET(r, "mapping %u: start %#llx is not below end %#llx", i,
			 (unsigned long long)m->start,
			 (unsigned long long)m->end);
	if (path_len > UNWIND_CAPTURE_MAX_PATH)
		FAIL_RET(r, "mapping %u: path of %u bytes (at most %u)", i,
			 path_len, UNWIND_CAPTURE_MAX_PATH);
	if (bid_len > UNWIND_CAPTURE_MAX_BUILDID)
		FAIL_RET(r, "mapping %u: build id of %u bytes (at most %u)", i,
			 bid_len, UNWIND_CAPTURE_MAX_BUILDID);
	if (image_len > UNWIND_CAPTURE_MAX_IMAGE)
		FAIL_RET(r, "mapping %u: image of %u bytes (at most %u)", i,
			 image_len, UNWIND_CAPTURE_MAX_IMAGE);
	if (!(m->flags & UNWIND_CAPTURE_M_IMAGE) && image_len)
		FAIL_RET(r, "mapping %u: image bytes without the image flag",
			 i);
	if (m->flags & ~UNWIND_CAPTURE_M_IMAGE)
		FAIL_RET(r, "mapping %u: unknown flags %#x", i, m->flags);
	m->path = get_str(r, path_len, "mapping path");
	m->build_id = get_str(r, bid_len, "mapping build id");
	if (m->build_id)
		for (const char *s = m->build_id; *s; s++)
			if (!((*s >= '0' && *s <= '9') ||
			      (*s >= 'a' && *s <= 'f')))
				FAIL_RET(r,
					 "mapping %u: build id is not "
					 "lower-case hex",
					 i);
	if (m->flags & UNWIND_CAPTURE_M_IMAGE) {
		m->image = get_bytes(r, image_len, "mapping image");
		m->image_len = image_len;
	}
}

int unwind_capture_parse(const uint8_t *buf, size_t len,
			 struct unwind_capture *c, char *err, size_t errlen)
{
	struct rd r = {buf, len, 0, err, errlen, false};
	char magic[8];
	uint32_t version, hsize;

	memset(c, 0, sizeof(*c));
	if (errlen)
		err[0] = 0;
	if (len > UNWIND_CAPTURE_MAX_FILE) {
		fail(&r, "%zu bytes: a capture is at most %u", len,
		     UNWIND_CAPTURE_MAX_FILE);
		return -1;
	}
	if (!take(&r, magic, 8, "magic") || memcmp(magic, "OTPUWCAP", 8)) {
		fail(&r, "not a stack capture (no OTPUWCAP magic)");
		return -1;
	}
	version = U32(&r, "version");
	hsize = U32(&r, "header size");
	if (!r.failed && version != UNWIND_CAPTURE_VERSION)
		fail(&r, "version %u: this build reads version %u", version,
		     UNWIND_CAPTURE_VERSION);
	if (!r.failed && hsize != UNWIND_CAPTURE_HEADER)
		fail(&r, "header of %u bytes: version 1 has %u", hsize,
		     UNWIND_CAPTURE_HEADER);
	c->pid = U32(&r, "pid");
	c->tid = U32(&r, "tid");
	c->rip = U64(&r, "rip");
	c->rsp = U64(&r, "rsp");
	c->rbp = U64(&r, "rbp");
	c->stack_len = U32(&r, "stack length");
	c->nmaps = U32(&r, "mapping count");
	c->nexpect = U32(&r, "frame count");
	c->flags = U32(&r, "flags");
	if (r.failed)
		goto bad;
	if (c->flags & ~UNWIND_CAPTURE_F_EXPECT_GDB)
		fail(&r, "unknown flags %#x", c->flags);
	else if (c->stack_len > UNWIND_CAPTURE_MAX_STACK)
		fail(&r, "stack of %u bytes (at most %u)", c->stack_len,
		     UNWIND_CAPTURE_MAX_STACK);
	else if (c->nmaps > UNWIND_CAPTURE_MAX_MAPS)
		fail(&r, "%u mappings (at most %u)", c->nmaps,
		     UNWIND_CAPTURE_MAX_MAPS);
	else if (c->nexpect > UNWIND_CAPTURE_MAX_FRAMES)
		fail(&r, "%u expected frames (at most %u)", c->nexpect,
		     UNWIND_CAPTURE_MAX_FRAMES);
	if (r.failed)
		goto bad;
	c->stack = get_bytes(&r, c->stack_len, "stack");
	/* Counts are checked against what is left before allocating: a
	 * short file cannot make us allocate for 1024 mappings. */
	if (!r.failed && (uint64_t)c->nmaps * 68 > len - r.off)
		fail(&r, "%u mappings cannot fit in the %zu bytes left",
		     c->nmaps, len - r.off);
	if (r.failed)
		goto bad;
	c->maps = calloc(c->nmaps ? c->nmaps : 1, sizeof(*c->maps));
	if (!c->maps) {
		fail(&r, "out of memory");
		goto bad;
	}
	for (uint32_t i = 0; i < c->nmaps && !r.failed; i++) {
		parse_map(&r, &c->maps[i], i);
		if (!r.failed && i && c->maps[i].start < c->maps[i - 1].end)
			fail(&r,
			     "mapping %u (%#llx) is not after mapping %u: "
			     "mappings must be sorted and disjoint",
			     i, (unsigned long long)c->maps[i].start, i - 1);
	}
	if (!r.failed && (uint64_t)c->nexpect * 10 > len - r.off)
		fail(&r, "%u frames cannot fit in the %zu bytes left",
		     c->nexpect, len - r.off);
	if (r.failed)
		goto bad;
	c->expect = calloc(c->nexpect ? c->nexpect : 1, sizeof(*c->expect));
	if (!c->expect) {
		fail(&r, "out of memory");
		goto bad;
	}
	for (uint32_t i = 0; i < c->nexpect && !r.failed; i++) {
		uint16_t n;

		c->expect[i].pc = U64(&r, "frame pc");
		n = U16(&r, "frame name length");
		if (!r.failed && n > UNWIND_CAPTURE_MAX_NAME)
			fail(&r, "frame %u: name of %u bytes (at most %u)", i,
			     n, UNWIND_CAPTURE_MAX_NAME);
		c->expect[i].name = get_str(&r, n, "frame name");
	}
	if (!r.failed && r.off != len)
		fail(&r, "%zu bytes after the last frame", len - r.off);
	if (!r.failed)
		return 0;
bad:
	unwind_capture_free(c);
	return -1;
}

void unwind_capture_free(struct unwind_capture *c)
{
	for (uint32_t i = 0; c->maps && i < c->nmaps; i++) {
		free(c->maps[i].path);
		free(c->maps[i].build_id);
		free(c->maps[i].image);
	}
	for (uint32_t i = 0; c->expect && i < c->nexpect; i++)
		free(c->expect[i].name);
	free(c->maps);
	free(c->expect);
	free(c->stack);
	memset(c, 0, sizeof(*c));
}

/* ---- writer ---- */
struct wr {
	uint8_t *p;
	size_t len, cap;
	bool failed;
};

static void put(struct wr *w, const void *b, size_t n)
{
	if (w->failed)
		return;
	if (w->cap - w->len < n) {
		size_t cap = w->cap ? w->cap : 4096;
		uint8_t *p;

		while (cap - w->len < n)
			cap *= 2;
		p = realloc(w->p, cap);
		if (!p) {
			w->failed = true;
			return;
		}
		w->p = p;
		w->cap = cap;
	}
	memcpy(w->p + w->len, b, n);
	w->len += n;
}

static void put_le(struct wr *w, uint64_t v, size_t n)
{
	uint8_t b[8];

	for (size_t i = 0; i < n; i++, v >>= 8)
		b[i] = (uint8_t)v;
	put(w, b, n);
}

uint8_t *unwind_capture_write(const struct unwind_capture *c, size_t *len)
{
	struct wr w = {0};

	if (c->stack_len > UNWIND_CAPTURE_MAX_STACK ||
	    c->nmaps > UNWIND_CAPTURE_MAX_MAPS ||
	    c->nexpect > UNWIND_CAPTURE_MAX_FRAMES)
		return NULL;
	put(&w, UNWIND_CAPTURE_MAGIC, 8);
	put_le(&w, UNWIND_CAPTURE_VERSION, 4);
	put_le(&w, UNWIND_CAPTURE_HEADER, 4);
	put_le(&w, c->pid, 4);
	put_le(&w, c->tid, 4);
	put_le(&w, c->rip, 8);
	put_le(&w, c->rsp, 8);
	put_le(&w, c->rbp, 8);
	put_le(&w, c->stack_len, 4);
	put_le(&w, c->nmaps, 4);
	put_le(&w, c->nexpect, 4);
	put_le(&w, c->flags, 4);
	put(&w, c->stack, c->stack_len);
	for (uint32_t i = 0; i < c->nmaps; i++) {
		const struct unwind_capture_map *m = &c->maps[i];
		size_t pl = strlen(m->path), bl = strlen(m->build_id);

		if (pl > UNWIND_CAPTURE_MAX_PATH ||
		    bl > UNWIND_CAPTURE_MAX_BUILDID ||
		    m->image_len > UNWIND_CAPTURE_MAX_IMAGE)
			w.failed = true;
		put_le(&w, m->start, 8);
		put_le(&w, m->end, 8);
		put_le(&w, m->offset, 8);
		put_le(&w, m->dev, 8);
		put_le(&w, m->ino, 8);
		put_le(&w, m->size, 8);
		put_le(&w, m->mtime_ns, 8);
		put_le(&w, m->flags, 4);
		put_le(&w, m->image ? m->image_len : 0, 4);
		put_le(&w, pl, 2);
		put_le(&w, bl, 2);
		put(&w, m->path, pl);
		put(&w, m->build_id, bl);
		if (m->image)
			put(&w, m->image, m->image_len);
	}
	for (uint32_t i = 0; i < c->nexpect; i++) {
		size_t nl = strlen(c->expect[i].name);

		if (nl > UNWIND_CAPTURE_MAX_NAME)
			nl = UNWIND_CAPTURE_MAX_NAME;
		put_le(&w, c->expect[i].pc, 8);
		put_le(&w, nl, 2);
		put(&w, c->expect[i].name, nl);
	}
	if (w.failed || w.len > UNWIND_CAPTURE_MAX_FILE) {
		free(w.p);
		return NULL;
	}
	*len = w.len;
	return w.p;
}
