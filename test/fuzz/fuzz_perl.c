// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the Perl frame reader (perl_reader.c), fed through
 * perl_reader_frame as the agent calls it: the input is a Perl process's
 * memory from address FUZZ_BASE on, its first 8 bytes the offsets (from
 * FUZZ_BASE) of the CV and the COP the walk reported, so every pointer
 * the reader follows (CV body, GV, HEKs, stash and its aux struct, file
 * name) is the fuzzer's to choose; the CV offset's top bit picks a
 * non-threaded build's reader (a COP's file is a GV "_<path" there, read
 * through the GV's name HEK). Reads outside the input fail, as a
 * process's unmapped memory does. Each frame is named twice, the second
 * time past the cache's recheck interval, and the main program once.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/perl/perl_reader.h"

#define FUZZ_BASE 0x10000ull

struct image {
	const uint8_t *data;
	size_t size;
};

static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = ctx;

	/* exactly len bytes, as process_memory_read */
	if (addr < FUZZ_BASE || addr - FUZZ_BASE > im->size ||
	    len > im->size - (addr - FUZZ_BASE))
		return -EFAULT;
	memcpy(buf, im->data + (addr - FUZZ_BASE), len);
	return 0;
}

static void check(const struct perl_frame_info *fi)
{
	if (!fi->name || strlen(fi->name) >= PERL_NAME_MAX)
		__builtin_trap();
	if (fi->file && strlen(fi->file) >= PERL_FILE_MAX)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct perl_layout *l = perl_layout_find(36, 3768);
	struct image im = {data, size};
	struct perl_frame_info fi;
	struct perl_reader *r;
	uint32_t cv, cop;

	if (!l || size < 8)
		return 0;
	memcpy(&cv, data, 4);
	memcpy(&cop, data + 4, 4);
	r = malloc(sizeof(*r));
	if (!r)
		return 0;
	perl_reader_init(r, l, cv >> 31, image_read, &im);
	cv &= 0x7fffffffu;
	for (int pass = 0; pass < 2; pass++) {
		uint64_t now = 1000 + pass * 2 * PERL_RECHECK_NS;

		if (perl_reader_frame(r, FUZZ_BASE + cv, FUZZ_BASE + cop, now,
				      &fi))
			check(&fi);
		if (perl_reader_frame(r, FUZZ_BASE + cv, 0, now, &fi))
			check(&fi); /* entering: CvFILE */
		if (!perl_reader_frame(r, OTELPROF_PERL_MAIN, FUZZ_BASE + cop,
				       now, &fi))
			__builtin_trap(); /* main is always named */
		check(&fi);
	}
	free(r);
	return 0;
}
