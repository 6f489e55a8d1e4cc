// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the VMStructs reader: the input is a JVM's memory
 * from address FUZZ_BASE on; the exported variables are its first
 * HS_SYM_COUNT words, so every pointer and offset in the tables is the
 * fuzzer's to choose. Reads outside the input fail, as a process's
 * unmapped memory does. The same bytes go through the line number
 * table decoder of both stream formats.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "interp/hotspot_jvm.h"

#define FUZZ_BASE 0x10000ull

struct image {
	const uint8_t *data;
	size_t size;
};

static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = ctx;

	/* whole pages: the reader's cache asks for 4 KiB at a time */
	if (addr < FUZZ_BASE)
		return -EFAULT;
	addr -= FUZZ_BASE;
	if (addr >= im->size) {
		return -EFAULT;
	}
	memset(buf, 0, len);
	memcpy(buf, im->data + addr,
	       len < im->size - addr ? len : im->size - addr);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image im = {data, size};
	struct hotspot_syms s;
	struct hotspot_layout l;

	for (int i = 0; i < HS_SYM_COUNT; i++)
		s.addr[i] = FUZZ_BASE + 8 * (uint64_t)i;
	if (!hotspot_vmstructs_read(&s, image_read, &im, &l)) {
		if (l.frame_interp_method >= 0 || l.frame_interp_bcp >= 0 ||
		    l.entries >= HS_MAX_ENTRIES)
			__builtin_trap();
		(void)hotspot_layout_missing(&l);
	}
	{
		/* then the code cache and a method, through the same image */
		struct hotspot_jvm j;
		struct hotspot_blob b;
		struct hotspot_method m;
		const char *missing;

		if (!hotspot_jvm_open(&j, &s, image_read, &im, &missing)) {
			for (uint64_t pc = FUZZ_BASE; pc < FUZZ_BASE + size;
			     pc += 64)
				if (!hotspot_blob_at(&j, pc, &b) && b.nmethod) {
					int32_t bci =
						hotspot_nmethod_bci(&j, &b, pc);

					if (bci < -1 || bci > 65535)
						__builtin_trap();
					if (!hotspot_method_read(&j, b.method,
								 &m))
						(void)hotspot_method_line(
							&j, &m, 3);
				}
			hotspot_each_blob(&j, 256, NULL, NULL);
		}
	}
	{
		uint32_t pos = 0, v;

		while (hotspot_stream_uint(data, (uint32_t)size, &pos, size & 1,
					   &v))
			;
		if (pos > size)
			__builtin_trap();
	}
	for (uint32_t bci = 0; bci < 70000; bci += 1 + bci * 3) {
		if (hotspot_linetable_line(data, (uint32_t)size, true, bci) >
			    (1u << 24) ||
		    hotspot_linetable_line(data, (uint32_t)size, false, bci) >
			    (1u << 24))
			__builtin_trap();
	}
	return 0;
}
