// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for UTF-8 checking and repair (util/utf8.c): what
 * utf8_sanitize returns is always valid, equal to the input when that was
 * valid, and at most three bytes per input byte.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	bool valid = utf8_valid(in, size);
	size_t n = 0;
	char *out = utf8_sanitize(in, size, &n);

	if (!out)
		return 0;
	if (!utf8_valid(out, n) || n > 3 * size ||
	    (valid && (n != size || memcmp(out, in, size))))
		__builtin_trap();
	free(out);
	return 0;
}
