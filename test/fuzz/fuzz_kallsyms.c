// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for the /proc/kallsyms parser and its lookups. */
#include <stddef.h>
#include <stdint.h>

#include "symbolize/kallsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kallsyms k;

	if (kallsyms_parse((const char *)data, size, &k))
		return 0;
	for (size_t i = 0; i < k.n; i++) {
		const struct ksym *s = kallsyms_lookup(&k, k.syms[i].addr);

		if (!s || s->addr != k.syms[i].addr || s->name >= k.names.len ||
		    s->module >= k.names.len)
			__builtin_trap();
		if (i && k.syms[i - 1].addr > k.syms[i].addr)
			__builtin_trap();
	}
	kallsyms_free(&k);
	return 0;
}
