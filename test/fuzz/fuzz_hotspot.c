// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the VMStructs reader: the input is a JVM's memory
 * from address FUZZ_BASE on; the exported variables are its first
 * HS_SYM_COUNT words, so every pointer and offset in the tables is the
 * fuzzer's to choose. Reads outside the input fail, as a process's
 * unmapped memory does. The same bytes go through the line number
 * table decoder of both stream formats, and are an nmethod whose scope
 * chain (PcDescs, scopes, metadata) is followed in both layouts.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "runtimes/hotspot/hotspot_jvm.h"

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
	for (int v = 0; v < 2 && size >= 64; v++) {
		/* a compiled method's scope chain: an nmethod at FUZZ_BASE
		 * whose fields (the image's first words) lead to PcDescs,
		 * scopes and metadata, laid out as 25 (v 0) or 17 (v 1) */
		struct hotspot_scope sc[HS_MAX_SCOPES];
		struct hotspot_jvm j;
		struct hotspot_blob b;
		uint32_t code;

		memset(&j, 0, sizeof(j));
		memset(&j.l, 0xff,
		       offsetof(struct hotspot_layout, has_linenumber_table));
		j.read = image_read;
		j.ctx = &im;
		j.l.unsigned5 = !v;
		j.l.nm_scopes_pcs = 8;
		if (!v) {
			j.l.nm_immutable_data = 0;
			j.l.nm_scopes_data = 12;
			j.l.blob_mutable_data = 16;
			j.l.blob_mutable_size = 24;
			j.l.blob_relocation_size = 28;
		} else {
			j.l.nm_dependencies = 12;
			j.l.nm_scopes_data_begin = 16;
			j.l.nm_metadata = 24;
		}
		memcpy(&code, data + 32, 4);
		memset(&b, 0, sizeof(b));
		b.addr = FUZZ_BASE;
		b.code_begin = FUZZ_BASE + (code & 0xfff);
		b.code_end = b.code_begin + 4096;
		b.nmethod = true;
		memcpy(&b.method, data + 40, 8);
		for (uint32_t at = 0; at < 4096; at += 61) {
			int n = hotspot_nmethod_scopes(&j, &b,
						       b.code_begin + at, sc,
						       1 + at % HS_MAX_SCOPES);

			if (n > (int)(1 + at % HS_MAX_SCOPES) || n < -1 || !n ||
			    (n > 0 && sc[n - 1].method != b.method))
				__builtin_trap();
			for (int k = 0; k < n; k++)
				if (sc[k].bci < -1 || sc[k].bci > 65535)
					__builtin_trap();
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
