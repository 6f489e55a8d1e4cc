// SPDX-License-Identifier: Apache-2.0
/* Symbol names from hostile files through the demangler and the per-file
 * name cache: bounded output, no crash, no hang. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symbol_names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char out[DEMANGLE_MAX_OUTPUT];
	struct symbol_names c;
	char *raw = malloc(size + 1);
	size_t n;

	if (!raw)
		return 0;
	memcpy(raw, data, size);
	raw[size] = '\0';
	n = symbol_demangle(raw, out);
	if (n >= DEMANGLE_MAX_OUTPUT || (n && strlen(out) != n))
		__builtin_trap();
	symbol_names_init(&c);
	for (uint32_t id = 0; id < 3; id++) {
		const char *a = symbol_names_get(&c, id, raw, out);
		const char *b = symbol_names_get(&c, id, raw, out);

		if (strcmp(a, b))
			__builtin_trap();
	}
	symbol_names_free(&c);
	free(raw);
	return 0;
}
