// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the unwind table builder (memory entry point).
 *
 * Build:
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
 *     -I include -I ebpf -I lib test/fuzz/fuzz_cfi.c lib/unwind/cfi_*.c \
 *     lib/unwind/unwind_table.c \
 *     -o fuzz_cfi -lelf -lz
 * Seed corpus, made at test time from this host's binaries: small whole
 * ELF files (section headers sit at the end, so prefixes are useless), and
 * raw CFI sections in the "CFI" format below:
 *   mkdir -p corpus && find /usr/lib/x86_64-linux-gnu /usr/bin -maxdepth 1 \
 *     -type f -size -40k | while read f; do \
 *       head -c4 "$f" | grep -q ELF && cp "$f" corpus/; done
 *   for f in /usr/bin/ls /lib64/ld-linux-x86-64.so.2; do \
 *     a=$(readelf -SW $f | awk '$2==".eh_frame"{print $4}'); \
 *     h=$(readelf -SW $f | awk '$2==".eh_frame_hdr"{print $4}'); \
 *     objcopy --dump-section .eh_frame=eh.bin \
 *       --dump-section .eh_frame_hdr=hdr.bin $f junk.o; \
 *     { printf 'CFI\2'; python3 -c "import sys,struct; \
 *       sys.stdout.buffer.write(struct.pack('<III', 0x$a, 0x$h, \
 *       $(stat -c%s hdr.bin)))"; cat hdr.bin eh.bin; \
 *     } > corpus/cfi-$(basename $f); done
 *   (kind 0: the same without vaddr-of-hdr, length and hdr; kind 1:
 *   .debug_frame of a gcc -g -fno-asynchronous-unwind-tables
 *   -fno-unwind-tables .so, vaddr 0.)
 * Run:
 *   ./fuzz_cfi -max_len=65536 -timeout=10 -rss_limit_mb=2048 corpus \
 *     test/fuzz/regressions/cfi
 * Every input in test/fuzz/regressions/cfi once crashed or hung it.
 */
#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/unwind_table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Inputs starting with "CFI" are raw CFI sections, not an ELF:
 *   "CFI" | kind | u32 vaddr | [u32 hdr_vaddr | u32 hdr_len | hdr] | bytes
 * kind bit 0: the bytes are .debug_frame (else .eh_frame at vaddr);
 * kind bit 1: an .eh_frame_hdr of hdr_len bytes at hdr_vaddr comes first;
 * kind bit 2: an aarch64 file (else x86_64): its registers and rules.
 * Wrapping them in a minimal ELF here keeps libFuzzer's mutations on the
 * CFI itself instead of on ELF headers.
 */
static uint8_t *wrap_cfi(const uint8_t *data, size_t size, size_t *out_len)
{
	static const char shstr[] =
		"\0.eh_frame\0.debug_frame\0.shstrtab\0.eh_frame_hdr";
	bool dbg = data[3] & 1, with_hdr = data[3] & 2, a64 = data[3] & 4;
	uint32_t addr, hdr_addr = 0, hdr_len = 0;
	size_t pos = 8, off_hdr, off_sec, off_str, off_sh, len, body;
	const uint8_t *hdr = NULL;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	Elf64_Shdr *sh;
	uint8_t *b;
	int i = 1;

	memcpy(&addr, data + 4, 4);
	if (with_hdr) {
		if (size < 16)
			return NULL;
		memcpy(&hdr_addr, data + 8, 4);
		memcpy(&hdr_len, data + 12, 4);
		pos = 16;
		if (hdr_len > size - pos)
			return NULL;
		hdr = data + pos;
		pos += hdr_len;
	}
	body = size - pos;
	off_hdr = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr);
	off_sec = off_hdr + hdr_len;
	off_str = off_sec + body;
	off_sh = (off_str + sizeof(shstr) + 7) & ~(size_t)7;
	len = off_sh + 4 * sizeof(Elf64_Shdr);
	b = calloc(1, len);
	if (!b)
		return NULL;
	eh = (Elf64_Ehdr *)b;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = a64 ? EM_AARCH64 : EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_entry = 0x1000;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_shoff = off_sh;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	ph = (Elf64_Phdr *)(b + eh->e_phoff);
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_memsz = 1u << 28; /* the code the FDEs point into */
	ph->p_filesz = len;
	ph->p_align = 4096;
	if (hdr_len)
		memcpy(b + off_hdr, hdr, hdr_len);
	memcpy(b + off_sec, data + pos, body);
	memcpy(b + off_str, shstr, sizeof(shstr));
	sh = (Elf64_Shdr *)(b + off_sh);
	if (with_hdr) { /* before .eh_frame: where libdw looks for it */
		sh[i].sh_name = 34;
		sh[i].sh_type = SHT_PROGBITS;
		sh[i].sh_flags = SHF_ALLOC;
		sh[i].sh_addr = hdr_addr;
		sh[i].sh_offset = off_hdr;
		sh[i].sh_size = hdr_len;
		sh[i].sh_addralign = 4;
		i++;
	}
	sh[i].sh_name = dbg ? 11 : 1;
	sh[i].sh_type = SHT_PROGBITS;
	sh[i].sh_flags = dbg ? 0 : SHF_ALLOC;
	sh[i].sh_addr = dbg ? 0 : addr;
	sh[i].sh_offset = off_sec;
	sh[i].sh_size = body;
	sh[i].sh_addralign = 8;
	i++;
	sh[i].sh_name = 24;
	sh[i].sh_type = SHT_STRTAB;
	sh[i].sh_offset = off_str;
	sh[i].sh_size = sizeof(shstr);
	sh[i].sh_addralign = 1;
	eh->e_shnum = (uint16_t)(i + 1);
	eh->e_shstrndx = (uint16_t)i;
	*out_len = len;
	return b;
}

/* The builder's invariants on one input. */
static void check_one(const uint8_t *data, size_t size)
{
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	uint16_t machine = 0;
	int err;

	if (size >= sizeof(Elf64_Ehdr))
		memcpy(&machine, data + offsetof(Elf64_Ehdr, e_machine), 2);

	err = unwind_table_build_mem(data, size, &t, &st);
	if (err) {
		if (err > 0 || t.rows || t.nrows)
			abort();
		return;
	}
	if (t.nrows != st.rows)
		abort();
	for (size_t i = 0; i < t.nrows; i++) {
		if (t.rows[i].rule.cfa_base > UNWIND_CFA_STOP ||
		    t.rows[i].rule.fp_rule > UNWIND_FP_UNDEFINED)
			abort();
		/* x86_64 rows keep the return address at CFA-8; an aarch64
		 * x30 offset never shares fp_offset with a saved x29. */
		if (t.rows[i].rule.ra_rule > UNWIND_RA_CFA_OFFSET ||
		    (machine != EM_AARCH64 &&
		     t.rows[i].rule.ra_rule != UNWIND_RA_CFA_MINUS8) ||
		    (t.rows[i].rule.ra_rule == UNWIND_RA_CFA_OFFSET &&
		     t.rows[i].rule.fp_rule == UNWIND_FP_CFA_OFFSET))
			abort();
		if (i && t.rows[i - 1].pc >= t.rows[i].pc)
			abort();
		if (unwind_table_lookup(&t, t.rows[i].pc) != &t.rows[i])
			abort();
	}
	if (t.nrows && t.rows[t.nrows - 1].rule.cfa_base != UNWIND_CFA_INVALID)
		abort();
	unwind_table_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *wrapped = NULL;

	if (size >= 8 && !memcmp(data, "CFI", 3)) {
		wrapped = wrap_cfi(data, size, &size);
		if (!wrapped)
			return 0;
		data = wrapped;
	}
	check_one(data, size);
	free(wrapped);
	return 0;
}
