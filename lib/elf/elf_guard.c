// SPDX-License-Identifier: Apache-2.0
#include "elf/elf_guard.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int elf_source_from_fd(int fd, struct elf_source *src)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	src->fd = fd;
	src->mem = NULL;
	src->size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
	return 0;
}

void elf_source_from_mem(const void *buf, size_t len, struct elf_source *src)
{
	src->fd = -1;
	src->mem = buf;
	src->size = buf ? len : 0;
}

int elf_source_read(const struct elf_source *src, uint64_t off, void *buf,
		    size_t len)
{
	size_t got = 0;

	if (off > src->size || len > src->size - off)
		return -ENOEXEC;
	if (src->mem) {
		memcpy(buf, src->mem + off, len);
		return 0;
	}
	while (got < len) {
		ssize_t r = pread(src->fd, (char *)buf + got, len - got,
				  (off_t)(off + got));

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO; /* truncated under us */
		got += (size_t)r;
	}
	return 0;
}

/* The section table, read once (<= 1 MiB): does it hold up? */
static int check_sections(const struct elf_source *src, const Elf64_Ehdr *eh,
			  uint64_t *bytes)
{
	uint64_t shnum = eh->e_shnum, total = 0;
	Elf64_Shdr *sh;
	int ret = ELF_GUARD_OK;

	if (!eh->e_shoff && !shnum)
		return ELF_GUARD_OK; /* stripped of sections */
	/* Extended numbering (e_shnum 0, count in section 0) is for object
	 * files with more than 65279 sections: never a mapped executable. */
	if (!shnum || shnum > ELF_GUARD_MAX_SECTIONS ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    eh->e_shstrndx >= SHN_LORESERVE || eh->e_shstrndx >= shnum ||
	    eh->e_shoff > src->size ||
	    shnum * sizeof(Elf64_Shdr) > src->size - eh->e_shoff)
		return ELF_GUARD_SECTIONS_HOSTILE;
	sh = malloc(shnum * sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	if (elf_source_read(src, eh->e_shoff, sh, shnum * sizeof(*sh))) {
		free(sh);
		return ELF_GUARD_SECTIONS_HOSTILE;
	}
	for (uint64_t i = 1; i < shnum; i++) {
		if (sh[i].sh_type == SHT_NOBITS || sh[i].sh_type == SHT_NULL)
			continue;
		/* Outside the file: every reader refuses that section
		 * (libelf checks the bounds too); the others stay usable. */
		if (sh[i].sh_offset > src->size ||
		    sh[i].sh_size > src->size - sh[i].sh_offset)
			continue;
		/* Sections do not overlap in a real file, so their contents
		 * add up to at most the file: anything more is the same
		 * bytes announced again to multiply what readers allocate. */
		total += sh[i].sh_size;
		if (total > src->size) {
			ret = ELF_GUARD_SECTIONS_HOSTILE;
			break;
		}
	}
	if (ret == ELF_GUARD_OK && eh->e_shstrndx != SHN_UNDEF &&
	    sh[eh->e_shstrndx].sh_size > ELF_GUARD_MAX_SHSTRTAB)
		ret = ELF_GUARD_SECTIONS_HOSTILE;
	if (ret == ELF_GUARD_OK)
		*bytes = shnum * sizeof(*sh) +
			 (eh->e_shstrndx != SHN_UNDEF
				  ? sh[eh->e_shstrndx].sh_size
				  : 0);
	free(sh);
	return ret;
}

int elf_guard_check(const struct elf_source *src, struct elf_guard *g)
{
	Elf64_Ehdr *eh = &g->eh;
	int err;

	memset(g, 0, sizeof(*g));
	if (elf_source_read(src, 0, eh, sizeof(*eh)) ||
	    memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return -ENOEXEC;
	/* PN_XNUM (extended program header count) is refused likewise. */
	if (eh->e_phnum) {
		if (eh->e_phnum > ELF_GUARD_MAX_PHDRS ||
		    eh->e_phentsize != sizeof(Elf64_Phdr))
			return -ENOEXEC;
		g->ph = malloc(eh->e_phnum * sizeof(*g->ph));
		if (!g->ph)
			return -ENOMEM;
		if (elf_source_read(src, eh->e_phoff, g->ph,
				    eh->e_phnum * sizeof(*g->ph))) {
			elf_guard_free(g);
			return -ENOEXEC;
		}
		g->phnum = eh->e_phnum;
	}
	err = check_sections(src, eh, &g->header_bytes);
	if (err < 0)
		elf_guard_free(g);
	else
		g->header_bytes += g->phnum * sizeof(Elf64_Phdr);
	return err;
}

void elf_guard_free(struct elf_guard *g)
{
	free(g->ph);
	g->ph = NULL;
	g->phnum = 0;
}
