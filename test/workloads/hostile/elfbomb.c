// SPDX-License-Identifier: Apache-2.0
/*
 * Writes ELF files built to blow up a symbol loader's memory, each small on
 * disk (sparse) but large in what it announces:
 *   manysyms  1.1M function symbols sharing one 4000-byte name (26 MB)
 *   overlap   four .symtab sections over the same 256 MiB hole (16 KiB on
 *             disk)
 *   xnum      8M section headers through extended numbering (12 KiB on
 *             disk)
 *   hotsyms   manysyms with code: bomb_spin (the entry point, in the first
 *             page) spins, so a process can run in a file that costs the
 *             budget 26 MB
 *   cfi       700,000 FDEs of three rows each in .eh_frame (16 MiB): as
 *             many rows as the unwind builder takes, and libdw's caches
 *   xz        .gnu_debugdata (MiniDebugInfo) of 40 KiB inflating to
 *             256 MiB of zeros
 * Usage: elfbomb MODE OUT
 */
#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lzma.h>

static void die(const char *m)
{
	perror(m);
	exit(1);
}

static void put(int fd, const void *b, size_t n, off_t off)
{
	if (pwrite(fd, b, n, off) != (ssize_t)n)
		die("pwrite");
}

/* ELF header + one executable PT_LOAD over the first page (or more). */
static uint64_t load_memsz = 4096;

static void header(int fd, uint64_t shoff, uint16_t shnum, uint16_t shstrndx)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_shoff = shoff;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(ph);
	eh.e_phnum = 1;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = shnum;
	eh.e_shstrndx = shstrndx;
	put(fd, &eh, sizeof(eh), 0);
	memset(&ph, 0, sizeof(ph));
	ph.p_type = PT_LOAD;
	ph.p_flags = PF_R | PF_X;
	ph.p_filesz = 4096;
	ph.p_memsz = load_memsz;
	ph.p_align = 4096;
	put(fd, &ph, sizeof(ph), sizeof(eh));
}

static const char shstr[] = "\0.symtab\0.strtab\0.shstrtab";

/* bomb_spin: mov $1000000, %ecx; 1: dec %ecx; jnz 1b; ret */
static const uint8_t spin_code[] = {0xb9, 0x40, 0x42, 0x0f, 0x00,
				    0xff, 0xc9, 0x75, 0xfc, 0xc3};
#define SPIN_ADDR 0x200

static void manysyms(int fd, bool code)
{
	const uint64_t n = 1100000, name = 4000;
	uint64_t symoff = 4096, stroff = symoff + n * sizeof(Elf64_Sym);
	uint64_t shstroff = stroff + name + 2 + 16,
		 shoff = (shstroff + 64) & ~7ull;
	Elf64_Sym *syms = calloc(n, sizeof(*syms));
	char *str = malloc(name + 2 + 16);
	Elf64_Shdr sh[4];

	if (!syms || !str)
		die("malloc");
	for (uint64_t i = 1; i < n; i++) {
		syms[i].st_name = 1;
		syms[i].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		syms[i].st_shndx = 1;
		syms[i].st_value = 0x1000 + i * 16;
		syms[i].st_size = 16;
	}
	str[0] = '\0';
	memset(str + 1, 'f', name);
	str[name + 1] = '\0';
	if (code) {
		/* The last entry names the code (after the long name). */
		syms[n - 1].st_name = (uint32_t)(name + 2);
		syms[n - 1].st_value = SPIN_ADDR;
		syms[n - 1].st_size = sizeof(spin_code);
	}
	memset(sh, 0, sizeof(sh));
	sh[1] = (Elf64_Shdr){.sh_name = 1,
			     .sh_type = SHT_SYMTAB,
			     .sh_offset = symoff,
			     .sh_size = n * sizeof(Elf64_Sym),
			     .sh_link = 2,
			     .sh_entsize = sizeof(Elf64_Sym)};
	if (code)
		memcpy(str + name + 2, "bomb_spin", 10);
	sh[2] = (Elf64_Shdr){.sh_name = 9,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = stroff,
			     .sh_size = name + 2 + (code ? 10 : 0)};
	sh[3] = (Elf64_Shdr){.sh_name = 17,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = shstroff,
			     .sh_size = sizeof(shstr)};
	header(fd, shoff, 4, 3);
	if (code) {
		uint64_t entry = SPIN_ADDR;

		put(fd, &entry, 8, offsetof(Elf64_Ehdr, e_entry));
		put(fd, spin_code, sizeof(spin_code), SPIN_ADDR);
	}
	put(fd, syms, n * sizeof(Elf64_Sym), (off_t)symoff);
	put(fd, str, name + 2 + (code ? 10 : 0), (off_t)stroff);
	put(fd, shstr, sizeof(shstr), (off_t)shstroff);
	put(fd, sh, sizeof(sh), (off_t)shoff);
}

static void overlap(int fd)
{
	const uint64_t big = 256ull << 20;
	Elf64_Shdr sh[7];
	uint64_t shoff = 8192, end = 4096 + big;

	memset(sh, 0, sizeof(sh));
	for (int i = 1; i <= 4; i++)
		sh[i] = (Elf64_Shdr){.sh_name = 1,
				     .sh_type = SHT_SYMTAB,
				     .sh_offset = 4096,
				     .sh_size = big,
				     .sh_link = 5,
				     .sh_entsize = sizeof(Elf64_Sym)};
	sh[5] = (Elf64_Shdr){.sh_name = 9,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = 4096,
			     .sh_size = big};
	sh[6] = (Elf64_Shdr){.sh_name = 17,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = 12288,
			     .sh_size = sizeof(shstr)};
	header(fd, shoff, 7, 6);
	put(fd, sh, sizeof(sh), (off_t)shoff);
	put(fd, shstr, sizeof(shstr), 12288);
	if (ftruncate(fd, (off_t)end))
		die("ftruncate");
}

static void xnum(int fd)
{
	const uint64_t n = 8u << 20;
	Elf64_Shdr sh0;
	uint64_t shoff = 8192;

	memset(&sh0, 0, sizeof(sh0));
	sh0.sh_size = n; /* the real count */
	header(fd, shoff, 0, 0);
	put(fd, &sh0, sizeof(sh0), (off_t)shoff);
	if (ftruncate(fd, (off_t)(shoff + n * sizeof(Elf64_Shdr))))
		die("ftruncate");
}

/* Section headers 1..n (names into a .shstrtab written last) at shoff. */
static void sections(int fd, uint64_t shoff, const char *const *names,
		     const uint64_t *off, const uint64_t *size,
		     const uint64_t *addr, int n)
{
	Elf64_Shdr sh[8];
	char str[256];
	size_t len = 1;
	uint64_t stroff = shoff + (uint64_t)(n + 2) * sizeof(Elf64_Shdr);

	memset(sh, 0, sizeof(sh));
	str[0] = '\0';
	for (int i = 0; i <= n; i++) {
		const char *nm = i < n ? names[i] : ".shstrtab";

		sh[i + 1].sh_name = (uint32_t)len;
		memcpy(str + len, nm, strlen(nm) + 1);
		len += strlen(nm) + 1;
		sh[i + 1].sh_type = i < n ? SHT_PROGBITS : SHT_STRTAB;
		sh[i + 1].sh_flags = i < n ? SHF_ALLOC : 0;
		sh[i + 1].sh_offset = i < n ? off[i] : stroff;
		sh[i + 1].sh_size = i < n ? size[i] : len;
		sh[i + 1].sh_addr = i < n ? addr[i] : 0;
		sh[i + 1].sh_addralign = 1;
	}
	sh[n + 1].sh_size = len;
	header(fd, shoff, (uint16_t)(n + 2), (uint16_t)(n + 1));
	put(fd, sh, (size_t)(n + 2) * sizeof(Elf64_Shdr), (off_t)shoff);
	put(fd, str, len, (off_t)stroff);
}

/* .eh_frame at vaddr EH_ADDR: one CIE (zR, pcrel sdata4), then FDEs of
 * 16 code bytes, each with three rows (advance 1, CFA offset 16, advance
 * 1, CFA offset 24), 24 bytes apiece. */
#define CFI_FDES 700000u
#define EH_ADDR	 0x2000000ull

static void cfi(int fd)
{
	static const uint8_t cie[24] = {
		20, 0,	  0,  0, 0,    0,    0,	   0,	 1,    'z',  'R', 0,
		1,  0x78, 16, 1, 0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01, 0,	  0};
	uint64_t size = sizeof(cie) + (uint64_t)CFI_FDES * 24, off = 4096;
	uint8_t *b = calloc(1, size);
	const char *name = ".eh_frame";
	uint64_t addr = EH_ADDR;

	if (!b)
		die("malloc");
	memcpy(b, cie, sizeof(cie));
	for (uint32_t i = 0; i < CFI_FDES; i++) {
		uint8_t *e = b + sizeof(cie) + (size_t)i * 24;
		uint32_t pos = (uint32_t)(e - b);
		uint32_t len = 20, cie_ptr = pos + 4;
		uint64_t lo = 0x1000 + (uint64_t)i * 16;
		int32_t pcrel = (int32_t)(lo - (EH_ADDR + pos + 8));
		uint32_t range = 16;

		memcpy(e, &len, 4);
		memcpy(e + 4, &cie_ptr, 4);
		memcpy(e + 8, &pcrel, 4);
		memcpy(e + 12, &range, 4);
		e[16] = 0; /* augmentation data length */
		e[17] = 0x41;
		e[18] = 0x0e;
		e[19] = 16;
		e[20] = 0x41;
		e[21] = 0x0e;
		e[22] = 24;
	}
	/* Code at [0x1000, 0x1000 + 16 * CFI_FDES), CFI above it. */
	load_memsz = EH_ADDR + size;
	put(fd, b, size, (off_t)off);
	sections(fd, (off + size + 7) & ~7ull, &name, &off, &size, &addr, 1);
	free(b);
}

/* An xz stream of zeros (256 MiB), as small as liblzma makes it. */
static void xz(int fd)
{
	const size_t chunk = 1u << 20, total = 256u << 20;
	uint8_t *zeros = calloc(1, chunk), *out = malloc(1u << 20);
	lzma_stream z = LZMA_STREAM_INIT;
	const char *name = ".gnu_debugdata";
	uint64_t off = 4096, size, addr = 0;
	size_t fed = 0;

	if (!zeros || !out || lzma_easy_encoder(&z, 6, LZMA_CHECK_CRC64))
		die("lzma");
	z.next_out = out;
	z.avail_out = 1u << 20;
	for (;;) {
		lzma_ret r;

		if (!z.avail_in && fed < total) {
			z.next_in = zeros;
			z.avail_in = chunk;
			fed += chunk;
		}
		r = lzma_code(&z, fed < total ? LZMA_RUN : LZMA_FINISH);
		if (r == LZMA_STREAM_END)
			break;
		if (r != LZMA_OK || !z.avail_out)
			die("lzma_code");
	}
	size = (1u << 20) - z.avail_out;
	lzma_end(&z);
	put(fd, out, size, (off_t)off);
	sections(fd, (off + size + 7) & ~7ull, &name, &off, &size, &addr, 1);
	free(zeros);
	free(out);
}

int main(int argc, char **argv)
{
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: elfbomb "
				"manysyms|hotsyms|overlap|xnum|cfi|xz OUT\n");
		return 2;
	}
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(argv[2]);
	if (!strcmp(argv[1], "manysyms"))
		manysyms(fd, false);
	else if (!strcmp(argv[1], "hotsyms"))
		manysyms(fd, true);
	else if (!strcmp(argv[1], "overlap"))
		overlap(fd);
	else if (!strcmp(argv[1], "xnum"))
		xnum(fd);
	else if (!strcmp(argv[1], "cfi"))
		cfi(fd);
	else if (!strcmp(argv[1], "xz"))
		xz(fd);
	else
		return 2;
	if (close(fd))
		die("close");
	return 0;
}
