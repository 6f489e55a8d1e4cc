// SPDX-License-Identifier: Apache-2.0
/*
 * UTF-8 repair of strings that reach OTLP (symbol names, thread names and
 * paths are arbitrary bytes; protobuf strings must be UTF-8), alone and
 * through the profile builder's string and resource tables.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "encode/profile_builder.h"
#include "util/utf8.h"

static void validates(void **state)
{
	static const char *const good[] = {
		"",
		"plain ascii \x01\x7f",
		"\xc3\xa9t\xc3\xa9",
		"\xe2\x82\xac",
		"\xf0\x9f\x98\x80",
		"\xf4\x8f\xbf\xbf",
		"\xed\x9f\xbf",
	};
	static const char *const bad[] = {
		"\xff",
		"\xc0\xaf", /* overlong '/' */
		"\xe0\x80\xaf",
		"\xf0\x80\x80\xaf", /* overlong */
		"\xed\xa0\x80",	    /* surrogate */
		"\xf4\x90\x80\x80", /* above U+10FFFF */
		"\xc3",
		"\xe2\x82", /* truncated */
		"a\x80z",
		"\xf8\x88\x80\x80\x80",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(utf8_valid(good[i], strlen(good[i])));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(utf8_valid(bad[i], strlen(bad[i])));
}

static void repairs(void **state)
{
	size_t n;
	char *s;

	(void)state;
	s = utf8_sanitize("a\xff\xc3\xa9\xed\xa0\x80z", 8, &n);
	assert_non_null(s);
	/* each stray byte becomes U+FFFD, the valid sequence stays */
	assert_string_equal(s, "a\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd"
			       "\xef\xbf\xbdz");
	assert_int_equal(n, strlen(s));
	assert_true(utf8_valid(s, n));
	free(s);
	s = utf8_sanitize("", 0, &n);
	assert_non_null(s);
	assert_int_equal(n, 0);
	free(s);
}

static void builder_repairs_strings(void **state)
{
	struct profile_builder b;
	struct pb_resource_info ri;
	uint32_t res;
	int32_t a, a2, c;

	(void)state;
	assert_int_equal(pb_init(&b), 0);
	a = pb_string(&b, "fn\xff");
	a2 = pb_string(&b, "fn\xfe"); /* repairs to the same string */
	c = pb_string(&b, "fn\xef\xbf\xbd");
	assert_true(a > 0);
	assert_int_equal(a, a2);
	assert_int_equal(a, c);
	for (uint32_t i = 0; i < b.str_off.n; i++) {
		const char *s = b.arena.buf + b.str_off.v[i];

		assert_true(utf8_valid(s, strlen(s)));
	}
	memset(&ri, 0, sizeof(ri));
	ri.key = 1;
	ri.pid = 42;
	ri.exe_name = "dl\xffrun";
	ri.exe_path = "/tmp/dl\xffrun";
	ri.host_name = "host";
	assert_int_equal(pb_resource(&b, &ri, &res), 0);
	for (size_t i = 0; i < b.resources.v[res].nattrs; i++) {
		const char *s = b.resources.v[res].attrs[i].str;

		assert_true(!s || utf8_valid(s, strlen(s)));
	}
	assert_string_equal(b.resources.v[res].attrs[1].str,
			    "dl\xef\xbf\xbdrun");
	pb_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(validates),
		cmocka_unit_test(repairs),
		cmocka_unit_test(builder_repairs_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
