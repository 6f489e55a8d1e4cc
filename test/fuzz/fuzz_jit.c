// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the JIT symbol parsers. The first byte picks perf
 * map or jitdump and where the input is split: files are read as they
 * grow, so every input is fed in two pieces, the unconsumed rest of the
 * first again with the second. Then lookups and V8 name splitting.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/jit_symbols.h"

static char name_buf[JIT_NAME_MAX + 1];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jit_symbols s;
	struct jit_frame_name fn;
	bool jitdump;
	size_t split, used, rest;
	uint8_t *buf;

	if (size < 1)
		return 0;
	jitdump = data[0] & 1;
	split = (size_t)(data[0] >> 1) * size / 128;
	data++;
	size--;
	if (split > size)
		split = size;
	jit_symbols_init(&s, 256 << 10);
	used = jitdump ? jitdump_feed(&s, data, split)
		       : perf_map_feed(&s, (const char *)data, split, false);
	if (used > split)
		__builtin_trap();
	/* what was not consumed comes again, followed by the rest */
	rest = size - used;
	buf = malloc(rest ? rest : 1);
	memcpy(buf, data + used, rest);
	used = jitdump ? jitdump_feed(&s, buf, rest)
		       : perf_map_feed(&s, (const char *)buf, rest, true);
	if (used > rest)
		__builtin_trap();
	free(buf);
	if (jit_symbols_memory(&s) > s.budget)
		__builtin_trap();
	for (uint32_t i = 0; i < s.n; i++) {
		uint64_t pc = s.v[i].start;
		const struct jit_sym *e = jit_symbols_lookup(&s, pc);

		if (!e || pc < e->start || pc >= e->end ||
		    e->name >= s.names.len)
			__builtin_trap();
		jit_name_split(jit_symbols_name(&s, e), name_buf, &fn);
		if (!fn.function)
			__builtin_trap();
	}
	jit_symbols_free(&s);
	return 0;
}
