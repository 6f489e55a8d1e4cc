// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the .dynsym reader and a data symbol's file bytes
 * (lib/elf/elf_dynsym.c), as the arm64 CPython walk reads glibc's
 * _thread_db_sizeof_pthread from a process's libc: the input is the file
 * (in a memfd), looked up for that name, for every symbol ("*") and by a
 * name prefix, and each value found, plus an address from the input's last
 * 8 bytes, read as 4 and 8 bytes from the file.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf/elf_dynsym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"_thread_db_sizeof_pthread", "*"};
	uint64_t v[2], tail = 0, buf;
	int fd = memfd_create("fuzz_dynsym", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	if (size >= 8)
		memcpy(&tail, data + size - 8, 8);
	(void)elf_dynsym_lookup(fd, NULL, names, 2, v);
	(void)elf_dynsym_lookup(fd, "_thread_db_", names, 1, v);
	for (int k = 0; k < 2; k++) {
		(void)elf_dynsym_file_bytes(fd, v[k], &buf, 4);
		(void)elf_dynsym_file_bytes(fd, v[k], &buf, 8);
	}
	(void)elf_dynsym_file_bytes(fd, tail, &buf, 4);
	close(fd);
	return 0;
}
