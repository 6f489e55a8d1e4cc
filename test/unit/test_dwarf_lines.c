// SPDX-License-Identifier: Apache-2.0
/*
 * Lines and inlined functions from DWARF, remembered per pc: on a real
 * binary with inlined functions (this test, built -O2 -g with the
 * library's objects), 20,000 pcs spread over .text, looked up twice on one
 * handle (the second time mostly from its cache, entries sharing a slot
 * replacing each other), read the same as once on a fresh handle, in the
 * other order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/dwarf_lines.h"

static void text_range(const char *path, uint64_t *lo, uint64_t *hi)
{
	int fd = open(path, O_RDONLY);
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t shstr;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	assert_int_equal(elf_getshdrstrndx(e, &shstr), 0);
	*lo = *hi = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		assert_non_null(gelf_getshdr(scn, &sh));
		if (!strcmp(elf_strptr(e, shstr, sh.sh_name), ".text")) {
			*lo = sh.sh_addr;
			*hi = sh.sh_addr + sh.sh_size;
		}
	}
	elf_end(e);
	close(fd);
	assert_true(*hi > *lo);
}

static struct dwarf_lines *open_lines(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct dwarf_lines *d;

	assert_true(fd >= 0);
	d = dwarf_lines_open(fd, NULL);
	close(fd);
	assert_non_null(d);
	return d;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static void assert_same(const struct dwarf_where *a,
			const struct dwarf_where *b, uint64_t pc)
{
	if (a->ninlined != b->ninlined || a->line != b->line ||
	    !same_str(a->file, b->file))
		fail_msg("pc %#llx: %u inlined, %s:%u against %u, %s:%u",
			 (unsigned long long)pc, a->ninlined, a->file, a->line,
			 b->ninlined, b->file, b->line);
	for (uint32_t i = 0; i < a->ninlined; i++)
		if (a->inl[i].line != b->inl[i].line ||
		    !same_str(a->inl[i].name, b->inl[i].name) ||
		    !same_str(a->inl[i].linkage_name, b->inl[i].linkage_name) ||
		    !same_str(a->inl[i].file, b->inl[i].file))
			fail_msg("pc %#llx: inlined function %u differs (%s)",
				 (unsigned long long)pc, i, a->inl[i].name);
}

static void cached_equals_fresh(void **state)
{
	char path[PATH_MAX];
	uint64_t lo, hi, stride;
	const uint64_t n = 20000;
	struct dwarf_lines *a, *b;
	struct dwarf_where *wa, *wb;
	int *rc;
	uint32_t found = 0, inlined = 0;

	(void)state;
	ssize_t len = readlink("/proc/self/exe", path, sizeof(path) - 1);

	assert_true(len > 0);
	path[len] = '\0';
	text_range(path, &lo, &hi);
	/* more pcs than the cache holds: slots are shared and replaced; an
	 * odd stride lands inside instructions and between functions too */
	stride = ((hi - lo) / n) | 1;
	assert_true(stride >= 3);
	wa = calloc(n, sizeof(*wa));
	wb = calloc(1, sizeof(*wb));
	rc = calloc(n, sizeof(*rc));
	assert_non_null(wa);
	assert_non_null(wb);
	assert_non_null(rc);
	a = open_lines(path);
	for (uint64_t i = 0; i < n; i++)
		rc[i] = dwarf_lines_lookup(a, lo + i * stride, &wa[i]);
	for (uint64_t i = 0; i < n; i++) {
		assert_int_equal(dwarf_lines_lookup(a, lo + i * stride, wb),
				 rc[i]);
		if (!rc[i])
			assert_same(wb, &wa[i], lo + i * stride);
	}
	b = open_lines(path);
	for (uint64_t i = n; i-- > 0;) {
		assert_int_equal(dwarf_lines_lookup(b, lo + i * stride, wb),
				 rc[i]);
		if (rc[i])
			continue;
		assert_same(wb, &wa[i], lo + i * stride);
		found++;
		inlined += wb->ninlined > 0;
	}
	/* the truth is worth something: lines found, inlined chains among
	 * them */
	assert_true(found > n / 2);
	assert_true(inlined > 100);
	dwarf_lines_close(a);
	dwarf_lines_close(b);
	free(wa);
	free(wb);
	free(rc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cached_equals_fresh),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
