// SPDX-License-Identifier: Apache-2.0
#include "elf/elf_dynsym.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

/* A name ending in '*' stands for every name it starts. */
static bool name_matches(const char *name, const char *want)
{
	size_t n = strlen(want);

	if (n && want[n - 1] == '*')
		return !strncmp(name, want, n - 1);
	return !strcmp(name, want);
}

static int lookup(int fd, Elf64_Word type, const char *prefix,
		  const char *const *names, size_t n, uint64_t *values,
		  uint64_t *sizes)
{
	size_t plen = prefix ? strlen(prefix) : 0;
	Elf_Scn *scn = NULL;
	int found = 0;
	Elf *e;

	memset(values, 0, n * sizeof(*values));
	if (sizes)
		memset(sizes, 0, n * sizeof(*sizes));
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return -ENOENT;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t nsyms;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type ||
		    !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		nsyms = d->d_size / sh.sh_entsize;
		for (size_t i = 0; i < nsyms && i < ELF_DYNSYM_MAX_SYMS; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || !sym.st_value)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name || (plen && strncmp(name, prefix, plen)))
				continue;
			for (size_t k = 0; k < n; k++)
				if (name_matches(name, names[k])) {
					found += !values[k];
					values[k] = sym.st_value;
					if (sizes)
						sizes[k] = sym.st_size;
				}
		}
	}
	elf_end(e);
	return found;
}

int elf_dynsym_lookup(int fd, const char *prefix, const char *const *names,
		      size_t n, uint64_t *values)
{
	return lookup(fd, SHT_DYNSYM, prefix, names, n, values, NULL);
}

int elf_symtab_lookup(int fd, const char *prefix, const char *const *names,
		      size_t n, uint64_t *values)
{
	return lookup(fd, SHT_SYMTAB, prefix, names, n, values, NULL);
}

int elf_symtab_lookup_sized(int fd, const char *prefix,
			    const char *const *names, size_t n,
			    uint64_t *values, uint64_t *sizes)
{
	return lookup(fd, SHT_SYMTAB, prefix, names, n, values, sizes);
}

int elf_dynsym_file_bytes(int fd, uint64_t vaddr, void *buf, size_t len)
{
	size_t phnum;
	int rc = -ENOENT;
	Elf *e;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return -ENOENT;
	if (elf_getphdrnum(e, &phnum))
		phnum = 0;
	for (size_t i = 0; i < phnum && i < ELF_DYNSYM_MAX_PHDRS; i++) {
		GElf_Phdr ph;
		uint64_t off;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    vaddr < ph.p_vaddr || vaddr - ph.p_vaddr > ph.p_filesz ||
		    len > ph.p_filesz - (vaddr - ph.p_vaddr))
			continue;
		off = ph.p_offset + (vaddr - ph.p_vaddr);
		rc = -EIO;
		if (off >= ph.p_offset && off <= INT64_MAX - len &&
		    pread(fd, buf, len, (off_t)off) == (ssize_t)len)
			rc = 0;
		break;
	}
	elf_end(e);
	return rc;
}
