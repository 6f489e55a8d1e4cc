// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the stack capture reader (test/tools/
 * unwind_capture.c, what unwind_replay replay parses): any input is
 * parsed or refused with a message, never read past its end; a parsed
 * capture encodes back to exactly the input bytes.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unwind_capture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_capture c;
	char err[256];
	uint8_t *out;
	size_t n = 0;

	if (unwind_capture_parse(data, size, &c, err, sizeof(err))) {
		if (!err[0])
			__builtin_trap(); /* refused without saying why */
		unwind_capture_free(&c);
		return 0;
	}
	out = unwind_capture_write(&c, &n);
	if (!out || n != size || memcmp(out, data, size))
		__builtin_trap();
	free(out);
	unwind_capture_free(&c);
	return 0;
}
