// SPDX-License-Identifier: Apache-2.0
#include "util/front_coding.h"

#include <stdint.h>
#include <string.h>

static size_t shared_prefix(const char *a, const char *b)
{
	size_t n = 0;

	while (a[n] && a[n] == b[n])
		n++;
	return n;
}

static size_t leb_size(size_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

size_t front_coding_size(const char *prev, const char *s, bool whole)
{
	size_t shared = whole || !prev ? 0 : shared_prefix(prev, s);

	return leb_size(shared) + strlen(s + shared) + 1;
}

size_t front_coding_put(char *out, const char *prev, const char *s, bool whole)
{
	size_t shared = whole || !prev ? 0 : shared_prefix(prev, s);
	size_t rest = strlen(s + shared) + 1, at = 0, v = shared;

	do {
		out[at++] = (char)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		v >>= 7;
	} while (v);
	memcpy(out + at, s + shared, rest);
	return at + rest;
}

size_t front_coding_next(const char *data, size_t len, size_t *pos, char *buf,
			 size_t bufsz, size_t prev_len)
{
	size_t at = *pos, shared = 0, rest;
	unsigned shift = 0;
	const char *end;

	for (;;) {
		unsigned char b;

		if (at >= len || shift > 21)
			goto bad;
		b = (unsigned char)data[at++];
		shared |= (size_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	end = memchr(data + at, '\0', len - at);
	if (!end || shared > prev_len)
		goto bad;
	rest = (size_t)(end - (data + at));
	if (shared + rest >= bufsz)
		goto bad;
	memcpy(buf + shared, data + at, rest);
	buf[shared + rest] = '\0';
	*pos = at + rest + 1;
	return shared + rest;
bad:
	if (bufsz)
		buf[0] = '\0';
	return SIZE_MAX;
}
