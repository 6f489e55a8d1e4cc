// SPDX-License-Identifier: Apache-2.0
#include "elf/plt_symbols.h"

#include <string.h>

#define PLT_ENTRY 16u

int plt_symbols_scan(Elf *elf, size_t shstrndx, plt_symbol_fn add, void *ctx)
{
	Elf_Scn *scn = NULL, *rela = NULL;
	GElf_Shdr rsh = {0}, dsh, plt = {0}, plt_sec = {0};
	Elf_Data *rd, *dd;
	uint64_t base, limit, nrel;
	char name[512];

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!n)
			continue;
		if (!strcmp(n, ".rela.plt") && sh.sh_type == SHT_RELA) {
			rela = scn;
			rsh = sh;
		} else if (!strcmp(n, ".plt") && sh.sh_type == SHT_PROGBITS)
			plt = sh;
		else if (!strcmp(n, ".plt.sec") && sh.sh_type == SHT_PROGBITS)
			plt_sec = sh;
	}
	if (!rela || rsh.sh_entsize != sizeof(Elf64_Rela))
		return 0;
	if (plt_sec.sh_size) {
		base = plt_sec.sh_addr;
		limit = plt_sec.sh_size;
	} else if (plt.sh_size > PLT_ENTRY) {
		base = plt.sh_addr + PLT_ENTRY;
		limit = plt.sh_size - PLT_ENTRY;
	} else {
		return 0;
	}
	scn = elf_getscn(elf, rsh.sh_link); /* the dynamic symbol table */
	if (!scn || !gelf_getshdr(scn, &dsh) || dsh.sh_type != SHT_DYNSYM)
		return 0;
	rd = elf_getdata(rela, NULL);
	dd = elf_getdata(scn, NULL);
	if (!rd || !dd || !rd->d_buf || !dd->d_buf)
		return 0;
	nrel = rd->d_size / sizeof(Elf64_Rela);
	if (nrel > limit / PLT_ENTRY)
		nrel = limit / PLT_ENTRY;
	if (nrel > PLT_SYMBOLS_MAX)
		nrel = PLT_SYMBOLS_MAX;
	for (uint64_t i = 0; i < nrel; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		const char *target;
		size_t len;
		int err;

		if (!gelf_getrela(rd, (int)i, &r) ||
		    !gelf_getsym(dd, (int)GELF_R_SYM(r.r_info), &sym))
			continue;
		target = elf_strptr(elf, dsh.sh_link, sym.st_name);
		if (!target || !*target)
			continue;
		len = strnlen(target, sizeof(name) - 5);
		if (len == sizeof(name) - 5)
			continue;
		memcpy(name, target, len);
		memcpy(name + len, "@plt", 5);
		err = add(ctx, base + i * PLT_ENTRY, PLT_ENTRY, name, len + 4);
		if (err)
			return err;
	}
	return 0;
}
