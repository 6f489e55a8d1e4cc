// SPDX-License-Identifier: Apache-2.0
/* The Perl frame reader on a process image laid out as 5.36 lays out a
 * sub, its glob, its package and a statement: the name Perl prints, file
 * and line; a non-threaded build's file (a GV); a lexical sub; the cache
 * seeing a sub redefined in place; and images it must refuse (wrong
 * types, unreadable memory, pointers beyond this machine's user space). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "process/user_va.h"
#include "runtimes/perl/perl_reader.h"

/* Where the image is mapped (moved by user_space_top). */
static uint64_t base = 0x10000;
#define BASE base

static uint8_t mem[0x1000];

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < BASE || addr - BASE + len > sizeof(mem))
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), len);
	return 0;
}

static void put64(uint32_t off, uint64_t v)
{
	memcpy(mem + off, &v, 8);
}

static void put32(uint32_t off, uint32_t v)
{
	memcpy(mem + off, &v, 4);
}

static void sv(uint32_t off, uint32_t body, uint32_t flags)
{
	put64(off, BASE + body);
	put32(off + 8, 1); /* refcount */
	put32(off + 12, flags);
}

static void hek(uint32_t off, const char *s)
{
	put32(off, 0);
	put32(off + 4, (uint32_t)strlen(s));
	memcpy(mem + off + 8, s, strlen(s) + 1);
}

/* CV at 0x100 (body 0x200) -> GV 0x300 (body 0x380) -> name HEK 0x500,
 * stash 0x600 (body 0x680) -> name HEK 0x700; COP 0x400 at line 42 of
 * the file at 0x800. */
static void image(void)
{
	memset(mem, 0, sizeof(mem));
	sv(0x100, 0x200, 13);
	put64(0x200 + 56, BASE + 0x300);
	sv(0x300, 0x380, 9);
	put64(0x380 + 32, BASE + 0x500);
	put64(0x380 + 40, BASE + 0x600);
	hek(0x500, "hot_a");
	sv(0x600, 0x680, 12 | 0x2000000);
	put64(0x680 + 32, BASE + 0x700);
	hek(0x700, "Hot::Inner");
	put64(0x200 + 64, BASE + 0x880); /* CvFILE */
	strcpy((char *)mem + 0x880, "/srv/app/Hot.pm");
	put32(0x400 + 36, 42);
	put64(0x400 + 48, BASE + 0x800);
	strcpy((char *)mem + 0x800, "/srv/app/hot.pl");
}

static struct perl_reader *reader(void)
{
	const struct perl_layout *l = perl_layout_find(36, 3768);
	struct perl_reader *r = malloc(sizeof(*r));

	assert_non_null(l);
	assert_true(perl_layout_sane(l));
	assert_non_null(r);
	perl_reader_init(r, l, false, mem_read, NULL);
	return r;
}

static void layouts_known(void **state)
{
	(void)state;
	assert_non_null(perl_layout_find(36, 3768));
	assert_non_null(perl_layout_find(40, 3768));
	/* a build whose interpreter differs is not believed */
	assert_null(perl_layout_find(36, 3776));
	assert_null(perl_layout_find(34, 3768));
}

static void names_a_sub(void **state)
{
	struct perl_reader *r = reader();
	struct perl_frame_info fi;

	(void)state;
	image();
	assert_true(perl_reader_frame(r, BASE + 0x100, BASE + 0x400, 1, &fi));
	assert_string_equal(fi.name, "Hot::Inner::hot_a");
	assert_string_equal(fi.file, "/srv/app/hot.pl");
	assert_int_equal(fi.line, 42);
	/* the main program, at the same statement */
	assert_true(
		perl_reader_frame(r, OTELPROF_PERL_MAIN, BASE + 0x400, 1, &fi));
	assert_string_equal(fi.name, "main");
	assert_int_equal(fi.line, 42);
	/* entering or leaving (COP 0): the sub's own file, no line */
	assert_true(perl_reader_frame(r, BASE + 0x100, 0, 1, &fi));
	assert_string_equal(fi.name, "Hot::Inner::hot_a");
	assert_string_equal(fi.file, "/srv/app/Hot.pm");
	assert_int_equal(fi.line, 0);
	/* a stash renamed: its names array, the first one */
	put64(0x680 + 32, BASE + 0x900);
	put32(0x680 + 32 + 28, 2);
	put64(0x900, BASE + 0x700);
	assert_true(perl_reader_frame(r, BASE + 0x100, BASE + 0x400,
				      1 + 2 * PERL_RECHECK_NS, &fi));
	assert_string_equal(fi.name, "Hot::Inner::hot_a");
	free(r);
}

/* A non-threaded build: the COP's file field is the GV "_<path" (GV at
 * 0xa00, body 0xa80, name HEK 0xb00), the CV's file still a char *. */
static void non_threaded_cop_file(void **state)
{
	const struct perl_layout *l = perl_layout_find_any(36);
	struct perl_reader *r = malloc(sizeof(*r));
	struct perl_frame_info fi;

	(void)state;
	assert_non_null(l);
	assert_non_null(r);
	perl_reader_init(r, l, true, mem_read, NULL);
	image();
	sv(0xa00, 0xa80, 9);
	put64(0xa80 + 32, BASE + 0xb00);
	hek(0xb00, "_</srv/app/hot.pl");
	put64(0x400 + 48, BASE + 0xa00);
	assert_true(perl_reader_frame(r, BASE + 0x100, BASE + 0x400, 1, &fi));
	assert_string_equal(fi.name, "Hot::Inner::hot_a");
	assert_string_equal(fi.file, "/srv/app/hot.pl");
	assert_int_equal(fi.line, 42);
	assert_true(perl_reader_frame(r, BASE + 0x100, 0, 1, &fi));
	assert_string_equal(fi.file, "/srv/app/Hot.pm");
	/* a GV not named "_<...": no file, the frame still named */
	hek(0xb00, "hot.pl");
	assert_true(perl_reader_frame(r, BASE + 0x100, BASE + 0x400,
				      1 + 2 * PERL_RECHECK_NS, &fi));
	assert_null(fi.file);
	assert_int_equal(fi.line, 42);
	/* not a GV */
	hek(0xb00, "_</srv/app/hot.pl");
	sv(0xa00, 0xa80, 12);
	assert_true(perl_reader_frame(r, BASE + 0x100, BASE + 0x400,
				      1 + 4 * PERL_RECHECK_NS, &fi));
	assert_null(fi.file);
	free(r);
}

static void lexical_sub(void **state)
{
	struct perl_reader *r = reader();
	struct perl_frame_info fi;

	(void)state;
	image();
	put64(0x200 + 56, BASE + 0x500); /* the name HEK itself */
	put32(0x200 + 92, 0x8000);	 /* CVf_NAMED */
	assert_true(perl_reader_frame(r, BASE + 0x100, BASE + 0x400, 1, &fi));
	assert_string_equal(fi.name, "hot_a");
	free(r);
}

static void recheck_after_reuse(void **state)
{
	struct perl_reader *r = reader();
	struct perl_frame_info fi;

	(void)state;
	image();
	assert_true(perl_reader_frame(r, BASE + 0x100, BASE + 0x400, 1, &fi));
	assert_string_equal(fi.name, "Hot::Inner::hot_a");
	/* the CV's memory now holds another sub: the cached name stands
	 * for up to the recheck interval, not beyond */
	hek(0x500, "other");
	assert_true(perl_reader_frame(r, BASE + 0x100, BASE + 0x400, 2, &fi));
	assert_string_equal(fi.name, "Hot::Inner::hot_a");
	assert_true(perl_reader_frame(r, BASE + 0x100, BASE + 0x400,
				      2 + PERL_RECHECK_NS, &fi));
	assert_string_equal(fi.name, "Hot::Inner::other");
	/* freed: no longer a CV */
	put32(0x100 + 12, 0);
	assert_false(perl_reader_frame(r, BASE + 0x100, BASE + 0x400,
				       3 + 2 * PERL_RECHECK_NS, &fi));
	free(r);
}

static void refuses_bad_images(void **state)
{
	struct perl_reader *r = reader();
	struct perl_frame_info fi;

	(void)state;
	image();
	/* a GV that is not a glob */
	put32(0x300 + 12, 12);
	assert_false(perl_reader_frame(r, BASE + 0x100, BASE + 0x400, 1, &fi));
	image();
	/* a name longer than any: refused, not cut into garbage */
	put32(0x500 + 4, 100000);
	assert_false(perl_reader_frame(r, BASE + 0x100, BASE + 0x400,
				       1 + PERL_RECHECK_NS, &fi));
	image();
	/* a stash without its aux struct: the sub's name alone */
	put32(0x600 + 12, 12);
	assert_true(perl_reader_frame(r, BASE + 0x100, BASE + 0x400,
				      1 + 2 * PERL_RECHECK_NS, &fi));
	assert_string_equal(fi.name, "hot_a");
	/* a COP outside memory: named, without file and line */
	assert_true(perl_reader_frame(r, BASE + 0x100, BASE + 0x5000,
				      1 + 2 * PERL_RECHECK_NS, &fi));
	assert_null(fi.file);
	assert_int_equal(fi.line, 0);
	/* a file name running to the end of memory: cut, terminated */
	image();
	memset(mem + 0x800, 'x', sizeof(mem) - 0x800);
	assert_true(perl_reader_frame(r, BASE + 0x100, BASE + 0x400,
				      1 + 4 * PERL_RECHECK_NS, &fi));
	assert_true(fi.file == NULL || strlen(fi.file) < PERL_FILE_MAX);
	free(r);
}

/* The same image at the top of user space (on aarch64, where libraries
 * sit: 0xffff...), then just above it (kernel space on x86_64). */
static void user_space_top(void **state)
{
	struct perl_reader *r = reader();
	struct perl_frame_info fi;

	(void)state;
	base = USER_VA_END - 2 * sizeof(mem);
	image();
	assert_true(perl_reader_frame(r, BASE + 0x100, BASE + 0x400, 1, &fi));
	assert_string_equal(fi.name, "Hot::Inner::hot_a");
	assert_string_equal(fi.file, "/srv/app/hot.pl");
	/* mem_read would serve it: the reader itself refuses */
	perl_reader_init(r, r->l, false, mem_read, NULL);
	base = USER_VA_END;
	image();
	assert_false(perl_reader_frame(r, BASE + 0x100, BASE + 0x400, 1, &fi));
	assert_true(r->read_errors > 0);
	base = 0x10000;
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(layouts_known),
		cmocka_unit_test(names_a_sub),
		cmocka_unit_test(lexical_sub),
		cmocka_unit_test(non_threaded_cop_file),
		cmocka_unit_test(recheck_after_reuse),
		cmocka_unit_test(refuses_bad_images),
		cmocka_unit_test(user_space_top),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
