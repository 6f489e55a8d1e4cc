// SPDX-License-Identifier: Apache-2.0
/* PHP's layouts and readers: the version string, and zend_functions read
 * from a made-up process memory laid out as PHP 8.2 and 8.4 lay them out
 * (a method, a plain function, an internal one, top-level code), and
 * malformed ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "runtimes/php/php_layout.h"

#define BASE 0x10000ull
#define SIZE 4096

static uint8_t mem[SIZE];

static int read_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < BASE || addr - BASE > SIZE || len > SIZE - (addr - BASE))
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), len);
	return 0;
}

static void put64(size_t off, uint64_t v)
{
	memcpy(mem + off, &v, 8);
}

static void put32(size_t off, uint32_t v)
{
	memcpy(mem + off, &v, 4);
}

static void zstr(size_t off, const char *s)
{
	put64(off + 16, strlen(s));
	memcpy(mem + off + 24, s, strlen(s));
}

/* A zend_function at 0x100 of type type, named name (NULL: none) in
 * class cls (NULL: none), of file (NULL: none), lines 20-24. */
static void function(const struct php_layout *l, uint8_t type, const char *name,
		     const char *cls, const char *file)
{
	memset(mem, 0, sizeof(mem));
	mem[0x100] = type;
	if (name) {
		put64(0x100 + l->func_name, BASE + 0x400);
		zstr(0x400, name);
	}
	if (cls) {
		put64(0x100 + l->func_scope, BASE + 0x500);
		put64(0x500 + l->ce_name, BASE + 0x600);
		zstr(0x600, cls);
	}
	if (file) {
		put64(0x100 + l->op_filename, BASE + 0x700);
		zstr(0x700, file);
	}
	put32(0x100 + l->op_line_start, 20);
	put32(0x100 + l->op_line_start + 4, 24);
}

static void versions(void **state)
{
	unsigned a, b, c;

	(void)state;
	assert_int_equal(php_version_parse("8.2.36", 6, &a, &b, &c), 0);
	assert_int_equal(a * 10000 + b * 100 + c, 80236);
	assert_int_equal(php_version_parse("8.4.16-1+deb13", 14, &a, &b, &c),
			 0);
	assert_int_equal(a * 10000 + b * 100 + c, 80416);
	assert_int_equal(php_version_parse("8.4.16", 4, &a, &b, &c), -EINVAL);
	assert_int_equal(php_version_parse("8.x.1", 5, &a, &b, &c), -EINVAL);
	assert_int_equal(php_version_parse("", 0, &a, &b, &c), -EINVAL);
	assert_non_null(php_layout_find(8, 2));
	assert_non_null(php_layout_find(8, 4));
	assert_null(php_layout_find(8, 3)); /* not checked: unknown */
	assert_null(php_layout_find(7, 4));
}

static void method_and_functions(void **state)
{
	static struct php_function f;

	(void)state;
	for (unsigned minor = 2; minor <= 4; minor += 2) {
		const struct php_layout *l = php_layout_find(8, minor);

		function(l, 2, "hot_a", "Hot", "/w/hot.php");
		assert_int_equal(
			php_function_read(l, read_mem, NULL, BASE + 0x100, &f),
			0);
		assert_string_equal(f.name, "Hot::hot_a");
		assert_string_equal(f.file, "/w/hot.php");
		assert_int_equal(f.line_start, 20);
		assert_int_equal(f.line_end, 24);

		function(l, 2, "hot_b", NULL, "/w/lib.php");
		assert_int_equal(
			php_function_read(l, read_mem, NULL, BASE + 0x100, &f),
			0);
		assert_string_equal(f.name, "hot_b");

		/* top-level code: no name (the tracker names it) */
		function(l, 2, NULL, NULL, "/w/hot.php");
		assert_int_equal(
			php_function_read(l, read_mem, NULL, BASE + 0x100, &f),
			0);
		assert_string_equal(f.name, "");
		assert_string_equal(f.file, "/w/hot.php");

		/* internal: no file, whatever the op_array fields hold */
		function(l, 1, "strlen", NULL, "/not/a/file");
		assert_int_equal(
			php_function_read(l, read_mem, NULL, BASE + 0x100, &f),
			0);
		assert_string_equal(f.name, "strlen");
		assert_string_equal(f.file, "");
	}
}

static void malformed(void **state)
{
	const struct php_layout *l = php_layout_find(8, 2);
	static struct php_function f;

	(void)state;
	function(l, 3, "x", NULL, "/w/x.php"); /* not a function type */
	assert_int_equal(php_function_read(l, read_mem, NULL, BASE + 0x100, &f),
			 -EINVAL);
	function(l, 1, NULL, NULL, NULL); /* internal without a name */
	assert_int_equal(php_function_read(l, read_mem, NULL, BASE + 0x100, &f),
			 -EINVAL);
	function(l, 2, "x", NULL, "/w/x.php");
	put64(0x400 + 16, PHP_NAME_MAX + 1); /* name too long */
	assert_int_equal(php_function_read(l, read_mem, NULL, BASE + 0x100, &f),
			 -EINVAL);
	function(l, 2, "x", NULL, "/w/x.php");
	mem[0x400 + 24] = 0xff; /* not UTF-8 */
	assert_int_equal(php_function_read(l, read_mem, NULL, BASE + 0x100, &f),
			 -EINVAL);
	function(l, 2, "x", NULL, "/w/x.php");
	put64(0x100 + l->op_filename, 0x99990000); /* file unreadable */
	assert_int_equal(php_function_read(l, read_mem, NULL, BASE + 0x100, &f),
			 -EFAULT);
	assert_int_equal(php_function_read(l, read_mem, NULL, 0, &f), -EFAULT);
	assert_int_equal(
		php_function_read(l, read_mem, NULL, BASE + SIZE - 8, &f),
		-EFAULT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(versions),
		cmocka_unit_test(method_and_functions),
		cmocka_unit_test(malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
