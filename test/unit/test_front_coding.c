// SPDX-License-Identifier: Apache-2.0
/*
 * Front-coded string lists (util/front_coding.h): strings written in order
 * read back the same from any block's start, shares of 128 bytes and more
 * (two LEB128 bytes) included; a record that is cut, claims more than the
 * string before it or does not fit the caller's buffer is refused with an
 * empty string, never read past.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/front_coding.h"

#define NSTR 1000

static char strs[NSTR][600];

/* Neighbours sharing prefixes of every length, some of them over 128. */
static void make_strings(void)
{
	unsigned seed = 7;

	for (size_t i = 0; i < NSTR; i++) {
		size_t len = 1 + (seed = seed * 1103515245u + 12345u) % 590;
		size_t keep = i ? (seed >> 8) % (strlen(strs[i - 1]) + 1) : 0;

		memcpy(strs[i], i ? strs[i - 1] : "", keep);
		for (size_t k = keep; k < len; k++)
			strs[i][k] = (char)('a' + (seed = seed * 1103515245u +
							  12345u) %
							  26);
		strs[i][len > keep ? len : keep] = '\0';
		if (i % 97 == 0)
			strcpy(strs[i], i ? strs[i - 1] : "x"); /* repeated */
	}
}

static char *encode(size_t *len, size_t offs[NSTR])
{
	size_t total = 0, at = 0;
	char *buf;

	for (size_t i = 0; i < NSTR; i++)
		total += front_coding_size(i ? strs[i - 1] : NULL, strs[i],
					   i % FRONT_CODING_BLOCK == 0);
	buf = malloc(total);
	assert_non_null(buf);
	for (size_t i = 0; i < NSTR; i++) {
		offs[i] = at;
		at += front_coding_put(buf + at, i ? strs[i - 1] : NULL,
				       strs[i], i % FRONT_CODING_BLOCK == 0);
	}
	assert_int_equal(at, total);
	*len = total;
	return buf;
}

static void round_trip(void **state)
{
	static size_t offs[NSTR];
	char out[1024];
	size_t len, plain = 0, long_shares = 0;
	char *buf;

	(void)state;
	make_strings();
	buf = encode(&len, offs);
	for (size_t i = 0; i < NSTR; i++) {
		size_t pos = offs[i - i % FRONT_CODING_BLOCK], n = 0;

		plain += strlen(strs[i]) + 1;
		for (size_t k = 0; k <= i % FRONT_CODING_BLOCK; k++) {
			n = front_coding_next(buf, len, &pos, out, sizeof(out),
					      n);
			assert_int_not_equal(n, SIZE_MAX);
		}
		assert_string_equal(out, strs[i]);
		assert_int_equal(n, strlen(strs[i]));
		if (i + 1 < NSTR)
			assert_int_equal(pos, offs[i + 1]);
		if ((unsigned char)buf[offs[i]] & 0x80)
			long_shares++;
	}
	assert_true(long_shares > 10); /* two-byte shares were exercised */
	assert_true(len < plain);
	free(buf);
}

static void refuses_bad_records(void **state)
{
	char out[8] = "abcdefg";
	size_t pos;

	(void)state;
	/* Shares 3 bytes of a 2-byte string. */
	pos = 0;
	assert_int_equal(
		front_coding_next("\003x", 3, &pos, out, sizeof(out), 2),
		SIZE_MAX);
	assert_string_equal(out, "");
	assert_int_equal(pos, 0);
	/* Cut: no NUL before the end. */
	strcpy(out, "ab");
	assert_int_equal(
		front_coding_next("\001xyz", 4, &pos, out, sizeof(out), 2),
		SIZE_MAX);
	/* Cut inside the share's LEB128. */
	assert_int_equal(
		front_coding_next("\x80", 1, &pos, out, sizeof(out), 0),
		SIZE_MAX);
	/* A LEB128 that never ends. */
	assert_int_equal(front_coding_next("\x80\x80\x80\x80\x80\x80x", 8, &pos,
					   out, sizeof(out), 0),
			 SIZE_MAX);
	/* Too long for the buffer (7 bytes and the NUL do not fit in 7). */
	assert_int_equal(front_coding_next("\000abcdefg", 9, &pos, out, 7, 0),
			 SIZE_MAX);
	/* Exactly fits. */
	assert_int_equal(front_coding_next("\000abcdefg", 9, &pos, out, 8, 0),
			 7);
	assert_string_equal(out, "abcdefg");
	assert_int_equal(pos, 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(refuses_bad_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
