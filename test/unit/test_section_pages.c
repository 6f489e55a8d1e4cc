// SPDX-License-Identifier: Apache-2.0
/*
 * A section read through the page cache against the file's own bytes:
 * every access, across page boundaries and after evictions, gives what a
 * plain read gives; a file truncated under the reader fails the access
 * (no SIGBUS, no stale bytes); strings stop at their NUL or at the bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/section_pages.h"

#define FILE_BYTES ((SECTION_PAGE_SLOTS + 44u) * SECTION_PAGE_BYTES + 123u)
#define SEC_OFF	   1000u

static uint8_t want[FILE_BYTES];

static int file_with_bytes(void)
{
	char path[] = "/tmp/test_section_pagesXXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	for (size_t i = 0; i < sizeof(want); i++)
		want[i] = (uint8_t)(i * 7 + i / 251);
	assert_int_equal(write(fd, want, sizeof(want)), (ssize_t)sizeof(want));
	return fd;
}

static void reads_match_the_file(void **state)
{
	struct section_pages p;
	struct elf_source src;
	uint64_t len = FILE_BYTES - SEC_OFF - 50, x = 12345;
	int fd = file_with_bytes();

	(void)state;
	assert_int_equal(elf_source_from_fd(fd, &src), 0);
	assert_int_equal(section_pages_init(&p, &src, SEC_OFF, len), 0);
	/* forward, then scattered (more pages than slots: evictions) */
	for (uint64_t off = 0; off + 8 <= len; off += 4093) {
		const uint8_t *b = section_pages_get(&p, off, 8);

		assert_non_null(b);
		assert_memory_equal(b, want + SEC_OFF + off, 8);
	}
	for (int i = 0; i < 20000; i++) {
		uint64_t off, n;
		const uint8_t *b;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		n = 1 + (x >> 33) % 64;
		off = (x >> 7) % (len - n + 1);
		b = section_pages_get(&p, off, (size_t)n);
		assert_non_null(b);
		assert_memory_equal(b, want + SEC_OFF + off, n);
	}
	/* across a page boundary, and a whole page's worth */
	assert_memory_equal(section_pages_get(&p, SECTION_PAGE_BYTES - 3, 16),
			    want + SEC_OFF + SECTION_PAGE_BYTES - 3, 16);
	assert_memory_equal(section_pages_get(&p, 5, SECTION_PAGE_BYTES),
			    want + SEC_OFF + 5, SECTION_PAGE_BYTES);
	/* outside the section, or too big */
	assert_null(section_pages_get(&p, len - 3, 4));
	assert_null(section_pages_get(&p, len, 1));
	assert_null(section_pages_get(&p, 0, SECTION_PAGE_BYTES + 1));
	assert_null(section_pages_get(&p, 0, 0));
	assert_true(p.reads > SECTION_PAGE_SLOTS);
	section_pages_free(&p);
	close(fd);
}

static void truncated_file_fails(void **state)
{
	struct section_pages p;
	struct elf_source src;
	int fd = file_with_bytes();

	(void)state;
	assert_int_equal(elf_source_from_fd(fd, &src), 0);
	assert_int_equal(section_pages_init(&p, &src, 0, FILE_BYTES), 0);
	assert_non_null(section_pages_get(&p, 0, 8));
	/* the process shrinks its file under us */
	assert_int_equal(ftruncate(fd, 3 * SECTION_PAGE_BYTES), 0);
	assert_null(section_pages_get(&p, 20 * SECTION_PAGE_BYTES, 8));
	assert_null(section_pages_get(&p, 3 * SECTION_PAGE_BYTES - 2, 8));
	/* a page read before stays right */
	assert_memory_equal(section_pages_get(&p, 0, 8), want, 8);
	section_pages_free(&p);
	close(fd);
}

static void strings_bounded(void **state)
{
	static uint8_t img[3 * SECTION_PAGE_BYTES];
	struct section_pages p;
	struct elf_source src;
	const char *s;
	size_t n;

	(void)state;
	memset(img, 'a', sizeof(img));
	/* a 20-byte name across the first page boundary */
	img[SECTION_PAGE_BYTES + 10] = '\0';
	/* no NUL before the section ends */
	elf_source_from_mem(img, sizeof(img), &src);
	assert_int_equal(section_pages_init(&p, &src, 0, sizeof(img)), 0);
	s = section_pages_string(&p, SECTION_PAGE_BYTES - 10, 64, &n);
	assert_non_null(s);
	assert_int_equal(n, 20);
	assert_int_equal(strlen(s), 20);
	/* longer than max: refused; max itself: given (callers decide) */
	assert_null(section_pages_string(&p, SECTION_PAGE_BYTES - 10, 19, &n));
	assert_non_null(
		section_pages_string(&p, SECTION_PAGE_BYTES - 10, 20, &n));
	assert_null(section_pages_string(&p, SECTION_PAGE_BYTES + 11,
					 SECTION_STRING_MAX, &n));
	assert_null(section_pages_string(&p, sizeof(img), 8, &n));
	assert_null(section_pages_string(&p, 0, SECTION_STRING_MAX + 1, &n));
	/* an empty string */
	s = section_pages_string(&p, SECTION_PAGE_BYTES + 10, 8, &n);
	assert_non_null(s);
	assert_int_equal(n, 0);
	section_pages_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reads_match_the_file),
		cmocka_unit_test(truncated_file_fails),
		cmocka_unit_test(strings_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
