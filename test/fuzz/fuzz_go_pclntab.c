// SPDX-License-Identifier: Apache-2.0
/* A .gopclntab section from a hostile file: header, function table, names
 * and SP-delta tables, all bounded. Input: the raw section bytes. Read in
 * memory (the line and inline lookups) and through the page cache (the
 * symbol and unwind-row scans): both must see the same table. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elf/go_pclntab.h"
#include "elf/section_pages.h"

/* The same function i through the page cache: same answers, or trap. */
static void same_paged(const struct go_pclntab *m, const struct go_pclntab *p,
		       uint64_t i, bool ok, uint64_t entry, uint64_t end,
		       const char *name, size_t len)
{
	uint64_t pe, pend, moff, poff, mlo, mhi, plo, phi;
	const char *pname;
	size_t plen;
	int64_t mv, pv;
	struct go_pcvalue mi, pi;
	bool pok = go_pclntab_func(p, i, &pe, &pend, &pname, &plen, 4096);

	if (pok != ok || (ok && (pe != entry || pend != end || plen != len ||
				 memcmp(pname, name, len) || pname[len])))
		__builtin_trap();
	if (!ok)
		return;
	if (go_pclntab_pcsp(m, i, &moff) != go_pclntab_pcsp(p, i, &poff))
		__builtin_trap();
	if (!go_pclntab_pcsp(m, i, &moff) || !go_pclntab_pcsp(p, i, &poff) ||
	    moff != poff || !moff)
		return;
	go_pcvalue_start(&mi, m, moff, entry, end);
	go_pcvalue_start(&pi, p, poff, entry, end);
	for (;;) {
		bool a = go_pcvalue_next(&mi, &mlo, &mhi, &mv);
		bool b = go_pcvalue_next(&pi, &plo, &phi, &pv);

		if (a != b || (a && (mlo != plo || mhi != phi || mv != pv)))
			__builtin_trap();
		if (!a)
			break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	struct section_pages pages;
	struct elf_source src;
	struct go_pclntab t, tp;
	bool paged;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	elf_source_from_mem(copy, size, &src);
	if (section_pages_init(&pages, &src, 0, size)) {
		free(copy);
		return 0;
	}
	paged = !go_pclntab_open_pages(&tp, &pages, 0x401000);
	if (paged != !go_pclntab_open(&t, copy, size, 0x401000))
		__builtin_trap();
	if (paged) {
		uint64_t n = t.nfunc < 4096 ? t.nfunc : 4096;

		for (uint64_t i = 0; i < n; i++) {
			uint64_t entry, end, off, lo, hi;
			const char *name;
			size_t len;
			int64_t v;
			struct go_pcvalue it;
			bool ok = go_pclntab_func(&t, i, &entry, &end, &name,
						  &len, 4096);

			same_paged(&t, &tp, i, ok, entry, end, name, len);
			if (!ok)
				continue;
			if (strlen(name) != len || end <= entry)
				__builtin_trap();
			{
				const char *file;
				uint32_t line;
				uint64_t j;

				struct go_inlined inl[4];
				int n;

				if (go_pclntab_find(&t, entry, &j) &&
				    go_pclntab_line(&t, j, entry, &file,
						    &line) &&
				    !*file)
					__builtin_trap();
				/* the table's own bytes stand in for
				 * go:func.* (inline trees) */
				n = go_pclntab_inlined(&t, i, entry + 4, copy,
						       size, inl, 4, &file,
						       &line);
				if (n > 4)
					__builtin_trap();
			}
			if (!go_pclntab_pcsp(&t, i, &off) || !off)
				continue;
			go_pcvalue_start(&it, &t, off, entry, end);
			while (go_pcvalue_next(&it, &lo, &hi, &v))
				if (lo < entry || hi > end || hi <= lo)
					__builtin_trap();
		}
	}
	section_pages_free(&pages);
	free(copy);
	return 0;
}
