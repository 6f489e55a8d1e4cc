// SPDX-License-Identifier: Apache-2.0
/* A .gopclntab section from a hostile file: header, function table, names
 * and SP-delta tables, all bounded. Input: the raw section bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elf/go_pclntab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	struct go_pclntab t;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (!go_pclntab_open(&t, copy, size, 0x401000)) {
		uint64_t n = t.nfunc < 4096 ? t.nfunc : 4096;

		for (uint64_t i = 0; i < n; i++) {
			uint64_t entry, end, off, lo, hi;
			const char *name;
			size_t len;
			int64_t v;
			struct go_pcvalue it;

			if (!go_pclntab_func(&t, i, &entry, &end, &name, &len,
					     4096))
				continue;
			if (strlen(name) != len || end <= entry)
				__builtin_trap();
			{
				const char *file;
				uint32_t line;
				uint64_t j;

				struct go_inlined inl[4];
				int n;

				if (go_pclntab_find(&t, entry, &j) &&
				    go_pclntab_line(&t, j, entry, &file,
						    &line) &&
				    !*file)
					__builtin_trap();
				/* the table's own bytes stand in for
				 * go:func.* (inline trees) */
				n = go_pclntab_inlined(&t, i, entry + 4, copy,
						       size, inl, 4, &file,
						       &line);
				if (n > 4)
					__builtin_trap();
			}
			if (!go_pclntab_pcsp(&t, i, &off) || !off)
				continue;
			go_pcvalue_start(&it, &t, off, entry, end);
			while (go_pcvalue_next(&it, &lo, &hi, &v))
				if (lo < entry || hi > end || hi <= lo)
					__builtin_trap();
		}
	}
	free(copy);
	return 0;
}
