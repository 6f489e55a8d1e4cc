// SPDX-License-Identifier: Apache-2.0
/*
 * elf_dynsym_file_bytes: a data symbol's initial value from the file, here
 * glibc's _thread_db_sizeof_pthread (which the CPython walk needs on
 * arm64) in this machine's libc and in Debian's arm64 libc (make
 * arm64-deps). The truth is read independently, through the symbol's
 * section (st_shndx, sh_addr, sh_offset) rather than the program headers.
 * Refused: an address in no segment's file bytes (.bss) and a file that is
 * not ELF.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "elf/elf_dynsym.h"

#define SIZEOF_PTHREAD "_thread_db_sizeof_pthread"

/* The 4 bytes at the symbol, through its section; also its size and the
 * end of the last section holding file bytes (for a .bss address). */
static uint32_t section_truth(int fd, uint64_t vaddr, uint64_t *bss)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	uint32_t v = 0;
	bool found = false;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	*bss = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		assert_non_null(gelf_getshdr(scn, &sh));
		if (sh.sh_type == SHT_NOBITS && sh.sh_size > 64)
			*bss = sh.sh_addr + 16;
		if (sh.sh_type == SHT_NOBITS || !(sh.sh_flags & SHF_ALLOC) ||
		    vaddr < sh.sh_addr || vaddr + 4 > sh.sh_addr + sh.sh_size)
			continue;
		assert_int_equal(
			pread(fd, &v, 4,
			      (off_t)(sh.sh_offset + vaddr - sh.sh_addr)),
			4);
		found = true;
	}
	elf_end(e);
	assert_true(found);
	return v;
}

static void check_libc(const char *path)
{
	static const char *const names[] = {SIZEOF_PTHREAD};
	uint64_t vaddr = 0, bss;
	uint32_t got = 0, want;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fail_msg("%s missing (make deps / make arm64-deps)", path);
	assert_int_equal(elf_dynsym_lookup(fd, "_thread_db_", names, 1, &vaddr),
			 1);
	want = section_truth(fd, vaddr, &bss);
	assert_int_equal(elf_dynsym_file_bytes(fd, vaddr, &got, sizeof(got)),
			 0);
	assert_int_equal(got, want);
	/* glibc's struct pthread: some hundreds of bytes to a few KiB */
	assert_true(got >= 256 && got <= 16384);
	print_message("%s: sizeof(struct pthread) %u\n", path, got);
	assert_true(bss != 0);
	assert_int_equal(elf_dynsym_file_bytes(fd, bss, &got, sizeof(got)),
			 -ENOENT);
	assert_int_equal(elf_dynsym_file_bytes(fd, UINT64_MAX - 2, &got, 4),
			 -ENOENT);
	close(fd);
}

static void test_host_libc(void **s)
{
	(void)s;
#if defined(__x86_64__)
	check_libc("/usr/lib/x86_64-linux-gnu/libc.so.6");
#else
	check_libc("/usr/lib/aarch64-linux-gnu/libc.so.6");
#endif
}

static void test_arm64_libc(void **s)
{
	(void)s;
	check_libc("/usr/lib/aarch64-linux-gnu/libc.so.6");
}

static void test_not_elf(void **s)
{
	uint32_t v;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	(void)s;
	assert_true(fd >= 0);
	assert_int_equal(elf_dynsym_file_bytes(fd, 0x1000, &v, 4), -ENOENT);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_libc),
		cmocka_unit_test(test_arm64_libc),
		cmocka_unit_test(test_not_elf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
