// SPDX-License-Identifier: Apache-2.0
/* DWARF of a hostile file through libdw as the symbolizer uses it: the
 * compile-unit index, units read into rows at a few pcs, the image
 * trimmed and read again for the rest. Input:
 * a whole ELF file (held in a memfd, as the cache holds an fd). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sanitizer/lsan_interface.h>
#include <unistd.h>

#include "elf/dwarf_lines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	struct dwarf_lines *d;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		d = dwarf_lines_open(fd, NULL);
		if (d) {
			static const uint64_t pcs[] = {0x1000, 0x1130, 0x1160,
						       0x1200, 0x401000};
			struct dwarf_where w;

			/* libdw 0.188 leaks inside dwarf_getsrclines on some
			 * hostile line tables (its bug, not ours): leak
			 * checking is off while it runs, on for our own
			 * open and close. */
			__lsan_disable();
			for (size_t i = 0; i < 2 * sizeof(pcs) / sizeof(pcs[0]);
			     i++) {
				/* half way: the image goes, units read stay,
				 * the rest read it again */
				if (i == sizeof(pcs) / sizeof(pcs[0]) / 2)
					dwarf_lines_trim(d, UINT64_MAX);
				if (!dwarf_lines_lookup(
					    d,
					    pcs[i %
						(sizeof(pcs) / sizeof(pcs[0]))],
					    &w) &&
				    w.ninlined > DWARF_LINES_MAX_DEPTH)
					__builtin_trap();
			}
			__lsan_enable();
			dwarf_lines_close(d);
		}
	}
	close(fd);
	return 0;
}
