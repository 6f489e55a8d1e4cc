// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for what is read from a PHP process's memory: the input
 * is the process's memory (at FUZZ_BASE), read through the same
 * php_function_read the tracker uses; the first byte picks the version
 * (8.2 or 8.4) and where the zend_function is. Also the version string
 * parser, on the same bytes.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "runtimes/php/php_layout.h"

#define FUZZ_BASE 0x10000ull

struct fuzz_mem {
	const uint8_t *data;
	size_t size;
};

/* A process whose memory is the input: reads outside it fail. */
static int fuzz_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct fuzz_mem *m = ctx;

	if (len > PROCESS_MEMORY_MAX_READ || addr < FUZZ_BASE ||
	    addr - FUZZ_BASE > m->size || len > m->size - (addr - FUZZ_BASE))
		return -EFAULT;
	memcpy(buf, m->data + (addr - FUZZ_BASE), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_mem m = {data, size};
	static struct php_function f;
	const struct php_layout *l;
	unsigned major, minor, release;

	if (size < 2)
		return 0;
	if (!php_version_parse((const char *)data, size, &major, &minor,
			       &release) &&
	    (major > 999 || minor > 999 || release > 999))
		__builtin_trap();
	l = php_layout_find(8, data[0] & 1 ? 4 : 2);
	if (!l)
		__builtin_trap();
	if (!php_function_read(l, fuzz_read, &m, FUZZ_BASE + (data[0] >> 1),
			       &f)) {
		if (strlen(f.name) >= sizeof(f.name) ||
		    strlen(f.file) >= sizeof(f.file) ||
		    (f.type != 1 && f.type != 2 && f.type != 4))
			__builtin_trap();
	}
	return 0;
}
