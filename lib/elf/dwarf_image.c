// SPDX-License-Identifier: Apache-2.0
/*
 * Written by hand: libelf can write a new file from parts (ELF_C_WRITE)
 * but only through an fd, and copying sections in memory is what we want
 * (the result goes to elf_memory with a zero guard after it: libdw runs
 * strlen past unterminated sections, see dwarf_lines.c).
 */
#include "elf/dwarf_image.h"

#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Section headers and their name table: bounded before they are read. */
#define DWARF_IMAGE_MAX_SHNUM	 4096u
#define DWARF_IMAGE_MAX_SHSTRTAB (1u << 20)

/* What libdw reads for units, lines, inlined scopes and their names. */
static const char *const kept[] = {
	".debug_info",	   ".debug_abbrev",   ".debug_line",
	".debug_str",	   ".debug_line_str", ".debug_ranges",
	".debug_rnglists", ".debug_addr",     ".debug_str_offsets",
	".debug_aranges",
};

static bool is_kept(const char *name)
{
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (!strcmp(name, kept[i]))
			return true;
	return false;
}

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (uint8_t *)buf + done, len - done,
				  (off_t)(off + done));

		if (n <= 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

static uint64_t align8(uint64_t v)
{
	return (v + 7) & ~7ull;
}

/* The section's bytes lie inside the file. */
static bool inside(const Elf64_Shdr *sh, uint64_t file_size)
{
	return sh->sh_offset <= file_size &&
	       sh->sh_size <= file_size - sh->sh_offset;
}

int dwarf_image_read(int fd, uint64_t file_size, uint64_t max_bytes,
		     size_t guard, uint8_t **image, size_t *size)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	char *names = NULL;
	uint8_t *out = NULL;
	uint64_t total = 0, at, shstr_at;
	int err;

	*image = NULL;
	*size = 0;
	if (file_size < sizeof(eh) || read_at(fd, &eh, sizeof(eh), 0))
		return -EINVAL;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG))
		return -EINVAL;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] !=
		    (BYTE_ORDER == LITTLE_ENDIAN ? ELFDATA2LSB : ELFDATA2MSB) ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
	    eh.e_shnum > DWARF_IMAGE_MAX_SHNUM || eh.e_shstrndx == SHN_UNDEF ||
	    eh.e_shstrndx >= eh.e_shnum)
		return -ENOTSUP;
	if (eh.e_shoff > file_size ||
	    (uint64_t)eh.e_shnum * sizeof(*sh) > file_size - eh.e_shoff)
		return -EINVAL;
	sh = calloc(eh.e_shnum, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	err = read_at(fd, sh, eh.e_shnum * sizeof(*sh), eh.e_shoff);
	if (err)
		goto out;
	err = -EINVAL;
	if (sh[eh.e_shstrndx].sh_type == SHT_NOBITS ||
	    !inside(&sh[eh.e_shstrndx], file_size) ||
	    sh[eh.e_shstrndx].sh_size == 0 ||
	    sh[eh.e_shstrndx].sh_size > DWARF_IMAGE_MAX_SHSTRTAB)
		goto out;
	names = calloc(1, sh[eh.e_shstrndx].sh_size + 1); /* NUL-ended */
	err = -ENOMEM;
	if (!names)
		goto out;
	err = read_at(fd, names, sh[eh.e_shstrndx].sh_size,
		      sh[eh.e_shstrndx].sh_offset);
	if (err)
		goto out;

	/* Which sections stay, and the image's size. */
	err = -EINVAL;
	for (uint32_t i = 1; i < eh.e_shnum; i++) {
		bool keep = i != eh.e_shstrndx &&
			    sh[i].sh_name < sh[eh.e_shstrndx].sh_size &&
			    sh[i].sh_type != SHT_NOBITS &&
			    is_kept(names + sh[i].sh_name);

		if (!keep)
			continue;
		if (!inside(&sh[i], file_size) || sh[i].sh_size > max_bytes ||
		    total + align8(sh[i].sh_size) > max_bytes)
			goto out;
		total += align8(sh[i].sh_size);
	}
	shstr_at = align8(sizeof(eh)) + total;
	at = shstr_at + align8(sh[eh.e_shstrndx].sh_size);
	*size = at + eh.e_shnum * sizeof(*sh);
	out = calloc(1, *size + guard);
	err = -ENOMEM;
	if (!out)
		goto out;

	/* The sections kept, at their new offsets; the rest emptied. */
	total = align8(sizeof(eh));
	for (uint32_t i = 1; i < eh.e_shnum; i++) {
		if (i == eh.e_shstrndx)
			continue;
		if (sh[i].sh_name < sh[eh.e_shstrndx].sh_size &&
		    sh[i].sh_type != SHT_NOBITS &&
		    is_kept(names + sh[i].sh_name)) {
			err = read_at(fd, out + total, sh[i].sh_size,
				      sh[i].sh_offset);
			if (err)
				goto out;
			sh[i].sh_offset = total;
			total += align8(sh[i].sh_size);
			continue;
		}
		memset(&sh[i], 0, sizeof(sh[i]));
		sh[i].sh_type = SHT_NOBITS;
	}
	memcpy(out + shstr_at, names, sh[eh.e_shstrndx].sh_size);
	sh[eh.e_shstrndx].sh_offset = shstr_at;
	memcpy(out + at, sh, eh.e_shnum * sizeof(*sh));
	eh.e_phoff = 0;
	eh.e_phnum = 0;
	eh.e_shoff = at;
	memcpy(out, &eh, sizeof(eh));
	*image = out;
	out = NULL;
	err = 0;
out:
	if (err)
		*size = 0;
	free(out);
	free(names);
	free(sh);
	return err;
}
