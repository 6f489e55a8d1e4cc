// SPDX-License-Identifier: Apache-2.0
/* MiniDebugInfo from a hostile file: an xz stream (bounded output and
 * decoder memory) whose contents are then read as an ELF symbol table. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elf/debug_info.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *out;
	size_t len;

	if (!debug_info_unxz(data, size, &out, &len, NULL)) {
		struct elf_symbols s;

		if (len > DEBUG_INFO_MAX_XZ_OUT)
			__builtin_trap();
		if (!elf_symbols_load_mem(out, len, &s, NULL))
			elf_symbols_free(&s);
		free(out);
	}
	return 0;
}
