// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for what is decoded from a Python process's memory:
 * line tables of every version, str objects and _Py_DebugOffsets. The first
 * byte picks the version (3.9-3.13) and the instruction asked about.
 */
#include <stddef.h>
#include <stdint.h>

#include "runtimes/cpython/cpython_layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct cpython_layout *l;
	char out[256];
	unsigned minor;

	if (size < 2)
		return 0;
	minor = 9 + data[0] % 5;
	l = cpython_layout_find(minor);
	if (!l)
		__builtin_trap();
	for (uint64_t index = 0; index < 4096; index += 1 + data[1]) {
		uint32_t line = cpython_line(minor, data + 2, size - 2,
					     (int8_t)data[1], index);

		if (line > (uint32_t)INT32_MAX)
			__builtin_trap();
	}
	if (cpython_str(l, data + 2, size - 2, out, sizeof(out)) >=
	    (int)sizeof(out))
		__builtin_trap();
	{
		struct cpython_layout c = *l;

		if (!cpython_debug_offsets(data + 2, size - 2, &c) &&
		    (c.walk.frame_owner > 127 || c.walk.frame_instr > 120))
			__builtin_trap();
	}
	return 0;
}
