// SPDX-License-Identifier: Apache-2.0
/*
 * Go's function table on a real stripped binary (go_callgraph, built with
 * -ldflags="-s -w" by make workloads) against the same build's .symtab
 * (go_callgraph_syms): every Go function, same address, same name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_file.h"
#include "elf/go_pclntab.h"

/* Decoded symbol names (elf_symbols_name). */
static char name_buf[ELF_SYM_NAME_BUF];

static void workload(char *out, size_t len, const char *name)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	assert_true(n > 0);
	exe[n] = '\0';
	/* build/test/unit/X -> build/workloads/native/NAME */
	snprintf(out, len, "%s/../../workloads/native/%s", dirname(exe), name);
}

/* Go's linker writes the middle dot of a few generated names (Go's own
 * tables keep "·") as "." in .symtab. */
static bool same_name(const char *go, const char *symtab)
{
	while (*go && *symtab) {
		if ((unsigned char)go[0] == 0xc2 &&
		    (unsigned char)go[1] == 0xb7 && *symtab == '.') {
			go += 2;
			symtab++;
			continue;
		}
		if (*go++ != *symtab++)
			return false;
	}
	return !*go && !*symtab;
}

/* go_only: count only names with a package (a cgo binary's .symtab also
 * lists its C functions, which Go's table does not). */
static void pair_matches(const char *stripped_name, const char *syms_name,
			 bool go_only)
{
	char stripped[PATH_MAX + 64], syms[PATH_MAX + 64];
	struct elf_symbols s;
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t checked = 0, matched = 0;
	int fd;

	workload(stripped, sizeof(stripped), stripped_name);
	workload(syms, sizeof(syms), syms_name);
	fd = open(stripped, O_RDONLY);
	if (fd < 0)
		fail_msg("%s missing (make workloads builds it)", stripped);
	assert_int_equal(elf_symbols_load_fd(fd, &s, NULL), 0);
	close(fd);
	assert_true(s.n > 1000);
	assert_true(s.go_build_id[0] != '\0');

	fd = open(syms, O_RDONLY);
	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 1; d && i < d->d_size / sizeof(Elf64_Sym);
		     i++) {
			GElf_Sym sym;
			const char *name;
			const struct elf_sym *got;
			char want[512];
			size_t wl;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_value || !sym.st_size)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			/* (gcc's cold parts: x_cgo_munmap.cold) */
			if (!name || (go_only && (!strchr(name, '.') ||
						  strstr(name, ".cold"))))
				continue;
			/* .symtab spells assembly functions' ABI */
			snprintf(want, sizeof(want), "%s", name);
			wl = strlen(want);
			if (wl > 5 && !strcmp(want + wl - 5, ".abi0"))
				want[wl - 5] = '\0';
			checked++;
			got = elf_symbols_lookup(&s, sym.st_value);
			if (got && got->addr == sym.st_value &&
			    (got->flags & ELF_SYM_GO) &&
			    same_name(elf_symbols_name(&s, got, name_buf),
				      want))
				matched++;
			else if (checked - matched <= 5)
				printf("mismatch at %#llx: %s vs %s\n",
				       (unsigned long long)sym.st_value, want,
				       got ? elf_symbols_name(&s, got, name_buf)
					   : "-");
		}
	}
	elf_end(elf);
	close(fd);
	elf_symbols_free(&s);
	printf("%zu of %zu .symtab functions found in .gopclntab\n", matched,
	       checked);
	assert_true(checked > 1000);
	assert_true(matched == checked);
}

static void names_match_symtab(void **state)
{
	(void)state;
	pair_matches("go_callgraph", "go_callgraph_syms", false);
}

/* Go 1.22's linker (same table format as 1.26, other layout choices). */
static void names_match_symtab_go122(void **state)
{
	(void)state;
	pair_matches("go_callgraph_go122", "go_callgraph_go122_syms", false);
}

/* Headers of the other formats are recognised; a bad one is refused. */
/* Externally linked (cgo): C start-up code before the Go text, whose
 * start Go 1.26's table header leaves out (moduledata.text has it). */
static void names_match_symtab_cgo(void **state)
{
	(void)state;
	pair_matches("go_cgo", "go_cgo_syms", true);
}

/*
 * moduledata.text comes from a file a process maps: a text start outside
 * the file's executable window, a buffer that ends before the word, or no
 * moduledata at all is refused and leaves the start as it was.
 */
static void moduledata_text_bounded(void **state)
{
	uint64_t words[40] = {0};
	struct go_pclntab t = {
		.version = 120, .funcname = 0x40, .text_start = 0x401000};
	const uint64_t tab = 0x600000;

	(void)state;
	words[2] = tab; /* moduledata at byte 16 */
	words[3] = tab + 0x40;
	words[2 + 176 / 8] = 0x402400;
	assert_true(go_moduledata_text(&t, tab, (const uint8_t *)words,
				       sizeof(words), 0x401000, 0x500000));
	assert_int_equal(t.text_start, 0x402400);
	t.text_start = 0x401000;
	words[2 + 176 / 8] = 0x7fff0000; /* outside the window */
	assert_false(go_moduledata_text(&t, tab, (const uint8_t *)words,
					sizeof(words), 0x401000, 0x500000));
	words[2 + 176 / 8] = 0x402400;
	assert_false(go_moduledata_text(&t, tab, (const uint8_t *)words,
					16 + 176, 0x401000, 0x500000));
	words[3] = tab + 0x48; /* not the table's moduledata */
	assert_false(go_moduledata_text(&t, tab, (const uint8_t *)words,
					sizeof(words), 0x401000, 0x500000));
	t.version = 116; /* no moduledata layout known */
	words[3] = tab + 0x40;
	assert_false(go_moduledata_text(&t, tab, (const uint8_t *)words,
					sizeof(words), 0x401000, 0x500000));
	assert_int_equal(t.text_start, 0x401000);
}

static void header_formats(void **state)
{
	uint8_t tab[256];
	struct go_pclntab t;
	static const uint32_t magics[] = {0xfffffffa, 0xfffffff0, 0xfffffff1};

	(void)state;
	for (size_t k = 0; k < 3; k++) {
		memset(tab, 0, sizeof(tab));
		memcpy(tab, &magics[k], 4);
		tab[6] = 1; /* quantum */
		tab[7] = 8; /* pointer size */
		/* nfunc 0, offsets inside the table */
		for (int w = 2; w < 8; w++)
			tab[8 + 8 * w] = 64;
		assert_int_equal(go_pclntab_open(&t, tab, sizeof(tab), 0x1000),
				 0);
		assert_int_equal(t.version, k == 0 ? 116 : k == 1 ? 118 : 120);
	}
	tab[7] = 4; /* 32-bit tables are not ours */
	assert_int_not_equal(go_pclntab_open(&t, tab, sizeof(tab), 0), 0);
	tab[7] = 8;
	memset(tab, 0xff, 4); /* unknown magic */
	assert_int_not_equal(go_pclntab_open(&t, tab, sizeof(tab), 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_match_symtab),
		cmocka_unit_test(names_match_symtab_go122),
		cmocka_unit_test(names_match_symtab_cgo),
		cmocka_unit_test(moduledata_text_bounded),
		cmocka_unit_test(header_formats),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
