// SPDX-License-Identifier: Apache-2.0
/*
 * Each architecture's Perl rows (perl_layout.c) against a libperl of that
 * architecture, as the tracker checks a process: the file's own
 * PL_revision, PL_version, PL_subversion and PL_interp_size (constants,
 * read from the file) must find the row generated for that version, with
 * that subversion, and not a row of the other architecture (struct
 * interpreter differs in size: its sigjmp_buf). The arm64 libperls are
 * Debian's (bookworm 5.36, trixie 5.40), from `make arm64-perl` under
 * $OTELPROF_RUNTIME_CACHE; the x86_64 one is this machine's (Debian 12).
 */
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "elf/elf_dynsym.h"
#include "runtimes/perl/perl_layout.h"

static unsigned machine_of(int fd)
{
	GElf_Ehdr eh;
	unsigned m;
	Elf *e;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	assert_non_null(gelf_getehdr(e, &eh));
	m = eh.e_machine;
	elf_end(e);
	return m;
}

static void check_libperl(const char *path, unsigned machine, unsigned version,
			  unsigned subversion)
{
	static const char *const names[] = {"PL_revision", "PL_version",
					    "PL_subversion", "PL_interp_size"};
	unsigned other = machine == EM_AARCH64 ? EM_X86_64 : EM_AARCH64;
	uint8_t revision = 0, ver = 0, sub = 0;
	const struct perl_layout *l;
	uint64_t v[4] = {0};
	uint16_t size = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fail_msg("%s missing (make arm64-perl)", path);
	assert_int_equal(machine_of(fd), machine);
	assert_int_equal(elf_dynsym_lookup(fd, "PL_", names, 4, v), 4);
	assert_int_equal(elf_dynsym_file_bytes(fd, v[0], &revision, 1), 0);
	assert_int_equal(elf_dynsym_file_bytes(fd, v[1], &ver, 1), 0);
	assert_int_equal(elf_dynsym_file_bytes(fd, v[2], &sub, 1), 0);
	assert_int_equal(elf_dynsym_file_bytes(fd, v[3], &size, 2), 0);
	close(fd);
	print_message("%s: Perl %u.%u.%u, interpreter %u bytes\n", path,
		      revision, ver, sub, size);
	assert_int_equal(revision, 5);
	assert_int_equal(ver, version);
	assert_int_equal(sub, subversion);
	l = perl_layout_find_for(machine, ver, size);
	assert_non_null(l);
	assert_int_equal(l->version, ver);
	assert_int_equal(l->subversion, sub);
	assert_int_equal(l->interp_size, size);
	assert_true(perl_layout_sane(l));
	/* the other architecture's row of the same version is not this
	 * build's (its interpreter has another size) */
	assert_null(perl_layout_find_for(other, ver, size));
}

static char *cached(const char *rel)
{
	const char *cache = getenv("OTELPROF_RUNTIME_CACHE");
	static char path[4096];

	snprintf(path, sizeof(path), "%s/%s",
		 cache && *cache ? cache : "/var/cache/otelprof-test", rel);
	return path;
}

static void arm64_perl_5_36(void **s)
{
	(void)s;
	check_libperl(cached("arm64-perl5.36/tree/usr/lib/aarch64-linux-gnu/"
			     "libperl.so.5.36"),
		      EM_AARCH64, 36, 0);
}

static void arm64_perl_5_40(void **s)
{
	(void)s;
	check_libperl(cached("arm64-perl5.40/tree/usr/lib/aarch64-linux-gnu/"
			     "libperl.so.5.40"),
		      EM_AARCH64, 40, 1);
}

static void x86_64_perl_5_36(void **s)
{
	(void)s;
	check_libperl("/usr/lib/x86_64-linux-gnu/libperl.so.5.36", EM_X86_64,
		      36, 0);
}

static void no_rows_elsewhere(void **s)
{
	(void)s;
	assert_null(perl_layout_find_for(EM_RISCV, 36, 3768));
	assert_null(perl_layout_find_for(EM_AARCH64, 38, 3864));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(arm64_perl_5_36),
		cmocka_unit_test(arm64_perl_5_40),
		cmocka_unit_test(x86_64_perl_5_36),
		cmocka_unit_test(no_rows_elsewhere),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
