// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for ELF symbol, segment and build-id reading
 * (elf_symbols_load_mem: the same code path as files, through libelf).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf_file.h"

static char name_buf[ELF_SYM_NAME_BUF];
static struct elf_symbols_names_iter it;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_symbols s;
	void *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (!elf_symbols_load_mem(copy, size, &s, NULL)) {
		elf_symbols_names_start(&it);
		for (size_t i = 0; i < s.n; i++) {
			const struct elf_sym *sym =
				elf_symbols_lookup(&s, s.syms[i].addr);
			const char *seq = elf_symbols_names_next(&s, &it);

			/* Every name kept is non-empty, and reads the same
			 * one by one as in order. */
			if (!sym || sym != &s.syms[i] ||
			    s.syms[i].name >= s.names.len || !seq || !*seq ||
			    strcmp(elf_symbols_name(&s, sym, name_buf), seq))
				__builtin_trap();
		}
		if (elf_symbols_names_next(&s, &it))
			__builtin_trap();
		for (size_t i = 0; i < s.nloads; i++) {
			uint64_t v;

			(void)elf_symbols_vaddr(&s, s.loads[i].offset, &v);
			(void)elf_symbols_mapping_vaddr(
				&s, s.loads[i].offset & ~0xfffull,
				s.loads[i].filesz, &v);
		}
		elf_symbols_free(&s);
	}
	free(copy);
	return 0;
}
