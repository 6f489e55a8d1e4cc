// SPDX-License-Identifier: Apache-2.0
#include "util/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the well-formed sequence at s (Unicode 15, table 3-7), or 0. */
static size_t seq_len(const unsigned char *s, size_t left)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (left < n)
		return 0;
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* above U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

bool utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n = seq_len(p + i, len - i);

		if (!n)
			return false;
		i += n;
	}
	return true;
}

char *utf8_sanitize(const char *s, size_t len, size_t *out_len)
{
	static const char repl[3] = {'\xef', '\xbf', '\xbd'}; /* U+FFFD */
	const unsigned char *p = (const unsigned char *)s;
	char *out;
	size_t o = 0;

	if (len > (SIZE_MAX - 1) / 3)
		return NULL;
	out = malloc(3 * len + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t n = seq_len(p + i, len - i);

		if (n) {
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
		} else {
			memcpy(out + o, repl, sizeof(repl));
			o += sizeof(repl);
			i++;
		}
	}
	out[o] = '\0';
	*out_len = o;
	return out;
}
