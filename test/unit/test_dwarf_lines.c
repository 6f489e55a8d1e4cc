// SPDX-License-Identifier: Apache-2.0
/*
 * Lines and inlined functions from DWARF, read per unit into compact rows:
 * on a real binary with inlined functions (this test, built -O2 -g with
 * the library's objects), 20,000 pcs spread over .text read the same as
 * libdw answers them directly (dwarf_getsrc_die, dwarf_getscopes and
 * dwarf_getscopes_die for the whole chain of inlined functions), before and
 * after the image is trimmed and read again; a file changed after a trim is not
 * read again; every byte charged is given back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <gelf.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/dwarf_lines.h"
#include "util/clock.h"
#include "util/mem_budget.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <sys/stat.h>

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

static struct dwarf_lines *open_lines(const char *path,
				      struct mem_account *acct)
{
	int fd = open(path, O_RDONLY);
	struct dwarf_lines *d;

	assert_true(fd >= 0);
	d = dwarf_lines_open(fd, acct);
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

/* The truth: libdw asked directly, per pc (what dwarf_lines did before
 * it kept rows). */
static int oracle(Dwarf *dw, uint64_t pc, struct dwarf_where *out)
{
	Dwarf_Die cu, *scopes = NULL;
	Dwarf_Line *ln;
	const char *file;
	int lineno = 0, n;
	uint32_t line;

	memset(out, 0, sizeof(*out));
	if (!dwarf_addrdie(dw, pc, &cu)) {
		Dwarf_CU *c = NULL;
		uint8_t ut;
		Dwarf_Half v;
		bool found = false;

		while (!found &&
		       !dwarf_get_units(dw, c, &c, &v, &ut, &cu, NULL))
			found = dwarf_haspc(&cu, pc) > 0;
		if (!found)
			return -ENOENT;
	}
	ln = dwarf_getsrc_die(&cu, pc);
	if (!ln)
		return -ENOENT;
	file = dwarf_linesrc(ln, NULL, NULL);
	if (dwarf_lineno(ln, &lineno) || lineno < 0)
		lineno = 0;
	line = (uint32_t)lineno;
	/* dwarf_getscopes stops at the innermost inlined function (its
	 * abstract origin's scopes follow); the chain of functions it is
	 * inlined into is that DIE's own scopes (as eu-addr2line -i). */
	n = dwarf_getscopes(&cu, pc, &scopes);
	for (int i = 0; i < n; i++) {
		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		Dwarf_Die inner = scopes[i];

		free(scopes);
		scopes = NULL;
		n = dwarf_getscopes_die(&inner, &scopes);
		break;
	}
	for (int i = 0; i < n && out->ninlined < DWARF_LINES_MAX_DEPTH; i++) {
		Dwarf_Die *s = &scopes[i];
		Dwarf_Attribute a;
		Dwarf_Word w;
		Dwarf_Files *files;
		size_t nf;

		if (dwarf_tag(s) != DW_TAG_inlined_subroutine)
			continue;
		out->inl[out->ninlined].name = dwarf_diename(s);
		if (dwarf_attr_integrate(s, DW_AT_linkage_name, &a) ||
		    dwarf_attr_integrate(s, DW_AT_MIPS_linkage_name, &a))
			out->inl[out->ninlined].linkage_name =
				dwarf_formstring(&a);
		out->inl[out->ninlined].file = file;
		out->inl[out->ninlined].line = line;
		out->ninlined++;
		file = NULL;
		if (dwarf_attr(s, DW_AT_call_file, &a) &&
		    !dwarf_formudata(&a, &w) &&
		    !dwarf_getsrcfiles(&cu, &files, &nf) && w < nf)
			file = dwarf_filesrc(files, w, NULL, NULL);
		line = 0;
		if (dwarf_attr(s, DW_AT_call_line, &a) &&
		    !dwarf_formudata(&a, &w) && w <= UINT32_MAX)
			line = (uint32_t)w;
	}
	free(scopes);
	out->file = file;
	out->line = line;
	return 0;
}

struct truth {
	char path[PATH_MAX];
	uint64_t lo, stride, n;
	struct dwarf_where *w;
	int *rc;
	uint32_t found, inlined;
};

static struct truth *truth_of(const char *path, uint64_t n)
{
	struct truth *t = calloc(1, sizeof(*t));
	uint64_t hi;
	int fd;
	Dwarf *dw;

	assert_non_null(t);
	snprintf(t->path, sizeof(t->path), "%s", path);
	text_range(path, &t->lo, &hi);
	/* an odd stride lands inside instructions and between functions */
	t->stride = ((hi - t->lo) / n) | 1;
	assert_true(t->stride >= 3);
	t->n = n;
	t->w = calloc(n, sizeof(*t->w));
	t->rc = calloc(n, sizeof(*t->rc));
	assert_non_null(t->w);
	assert_non_null(t->rc);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	dw = dwarf_begin(fd, DWARF_C_READ);
	assert_non_null(dw);
	for (uint64_t i = 0; i < n; i++) {
		t->rc[i] = oracle(dw, t->lo + i * t->stride, &t->w[i]);
		/* strings of the oracle go with its handle: keep copies */
		if (t->rc[i])
			continue;
		t->found++;
		t->inlined += t->w[i].ninlined > 0;
		t->w[i].file = t->w[i].file ? strdup(t->w[i].file) : NULL;
		for (uint32_t k = 0; k < t->w[i].ninlined; k++) {
			const char **s[] = {&t->w[i].inl[k].name,
					    &t->w[i].inl[k].linkage_name,
					    &t->w[i].inl[k].file};

			for (size_t j = 0; j < 3; j++)
				*s[j] = *s[j] ? strdup(*s[j]) : NULL;
		}
	}
	dwarf_end(dw);
	close(fd);
	/* the truth is worth something: lines found, inlined chains */
	assert_true(t->found > n / 2);
	assert_true(t->inlined > 100);
	return t;
}

static void truth_free(struct truth *t)
{
	for (uint64_t i = 0; i < t->n; i++) {
		free((char *)t->w[i].file);
		for (uint32_t k = 0; k < t->w[i].ninlined; k++) {
			free((char *)t->w[i].inl[k].name);
			free((char *)t->w[i].inl[k].linkage_name);
			free((char *)t->w[i].inl[k].file);
		}
	}
	free(t->w);
	free(t->rc);
	free(t);
}

/* pcs [from, to) of the truth read the same through d. */
static void check_range(struct dwarf_lines *d, const struct truth *t,
			uint64_t from, uint64_t to)
{
	struct dwarf_where w;

	for (uint64_t i = from; i < to; i++) {
		uint64_t pc = t->lo + i * t->stride;
		int rc = dwarf_lines_lookup(d, pc, &w);

		if (rc != t->rc[i])
			fail_msg("pc %#llx: %d against libdw's %d",
				 (unsigned long long)pc, rc, t->rc[i]);
		if (!rc)
			assert_same(&w, &t->w[i], pc);
	}
}

static struct truth *self_truth;

static int setup(void **state)
{
	char path[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", path, sizeof(path) - 1);

	(void)state;
	if (len <= 0)
		return -1;
	path[len] = '\0';
	/* another file to hold against libdw by hand (a libpython, a big
	 * C++ binary); the suite runs on this test itself */
	if (getenv("DWARF_LINES_TEST_FILE"))
		snprintf(path, sizeof(path), "%s",
			 getenv("DWARF_LINES_TEST_FILE"));
	self_truth = truth_of(path, 20000);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	truth_free(self_truth);
	return 0;
}

static void rows_match_libdw(void **state)
{
	struct mem_budget b;
	struct mem_account acct;
	struct dwarf_lines *d;

	(void)state;
	mem_budget_init(&b, 1ull << 40, 1ull << 40);
	mem_account_init(&acct, &b);
	d = open_lines(self_truth->path, &acct);
	/* backwards, then forwards: units read in either order */
	for (uint64_t i = self_truth->n; i-- > 0;)
		check_range(d, self_truth, i, i + 1);
	check_range(d, self_truth, 0, self_truth->n);
	dwarf_lines_close(d);
	assert_int_equal(atomic_load(&acct.bytes), 0);
	assert_int_equal(mem_budget_used(&b), 0);
}

/* Half the pcs read, the image trimmed: they still answer without it;
 * the other half reads it again. */
static void trimmed_reads_again(void **state)
{
	struct mem_budget b;
	struct mem_account acct;
	struct dwarf_lines *d;
	uint64_t half = self_truth->n / 2, with_image, rows, reads = 0;

	(void)state;
	mem_budget_init(&b, 1ull << 40, 1ull << 40);
	mem_account_init(&acct, &b);
	d = open_lines(self_truth->path, &acct);
	dwarf_lines_count_image_reads(d, &reads);
	check_range(d, self_truth, 0, half);
	with_image = atomic_load(&acct.bytes);
	/* units were read just now: kept */
	dwarf_lines_trim(d, boot_ns() + DWARF_LINES_IMAGE_IDLE_NS / 2);
	assert_false(dwarf_lines_trimmed(d));
	dwarf_lines_trim(d, UINT64_MAX);
	assert_true(dwarf_lines_trimmed(d));
	rows = atomic_load(&acct.bytes);
	assert_true(rows < with_image);
	check_range(d, self_truth, 0, half);
	assert_true(dwarf_lines_trimmed(d));
	assert_int_equal(atomic_load(&acct.bytes), rows);
	assert_int_equal(reads, 0);
	check_range(d, self_truth, half, self_truth->n);
	/* this test's units span .text (a file by hand may have one) */
	if (!getenv("DWARF_LINES_TEST_FILE")) {
		assert_false(dwarf_lines_trimmed(d));
		assert_int_equal(reads, 1); /* counted once, for the owner */
		/* read again once: it waits twice as long to go */
		dwarf_lines_trim(d,
				 boot_ns() + DWARF_LINES_IMAGE_IDLE_NS * 3 / 2);
		assert_false(dwarf_lines_trimmed(d));
		dwarf_lines_trim(d,
				 boot_ns() + DWARF_LINES_IMAGE_IDLE_NS * 5 / 2);
		assert_true(dwarf_lines_trimmed(d));
	}
	dwarf_lines_close(d);
	assert_int_equal(atomic_load(&acct.bytes), 0);
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out;
	ssize_t n;

	assert_true(in >= 0);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

/* A file changed after its image was trimmed is not read again: units
 * read before still answer, the others say -EIO. */
static void changed_file_not_read_again(void **state)
{
	char tmp[] = "/tmp/test_dwarf_lines_XXXXXX";
	int fd = mkstemp(tmp);
	uint64_t half = self_truth->n / 2;
	struct dwarf_lines *d;
	struct dwarf_where w;
	uint32_t refused = 0;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	copy_file(self_truth->path, tmp);
	d = open_lines(tmp, NULL);
	check_range(d, self_truth, 0, half);
	dwarf_lines_trim(d, UINT64_MAX);
	fd = open(tmp, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
	check_range(d, self_truth, 0, half);
	for (uint64_t i = half; i < self_truth->n; i++)
		if (!self_truth->rc[i])
			refused +=
				dwarf_lines_lookup(
					d,
					self_truth->lo + i * self_truth->stride,
					&w) == -EIO;
	assert_true(refused > 0);
	assert_true(dwarf_lines_trimmed(d));
	dwarf_lines_close(d);
	unlink(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rows_match_libdw),
		cmocka_unit_test(trimmed_reads_again),
		cmocka_unit_test(changed_file_not_read_again),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
