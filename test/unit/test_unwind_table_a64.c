// SPDX-License-Identifier: Apache-2.0
/*
 * aarch64 tables beyond what the CFI oracle judges (test_cfi_oracle.c):
 * rows the builder adds without an FDE. The vDSO's signal trampoline
 * (known only by its exported symbol: the vDSO has no CFI) is a SIGNAL
 * row from the nop before it to its end; PLT entries without an FDE take
 * CFA = sp with the return address still in x30. Files cross-built by
 * aarch64-linux-gnu-gcc (make rules beside test_cfi_oracle's).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/unwind_table.h"

/* build/test/unit/X -> build/<rel> */
static void build_path(char *out, size_t len, const char *rel)
{
	char exe[1024];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	assert_true(n > 0);
	exe[n] = '\0';
	snprintf(out, len, "%s/../../%s", dirname(exe), rel);
}

static int open_built(const char *rel)
{
	char path[1200];
	int fd;

	build_path(path, sizeof(path), rel);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail_msg("%s missing (its make rule builds it)", path);
	return fd;
}

/* A section's [addr, addr + size), or a dynamic symbol's, by libelf. */
static void find(int fd, const char *sec, const char *sym, uint64_t *lo,
		 uint64_t *hi)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t shstr;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	assert_int_equal(elf_getshdrstrndx(e, &shstr), 0);
	*lo = *hi = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		assert_non_null(gelf_getshdr(scn, &sh));
		if (sec && !strcmp(elf_strptr(e, shstr, sh.sh_name), sec)) {
			*lo = sh.sh_addr;
			*hi = sh.sh_addr + sh.sh_size;
		}
		if (!sym || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < d->d_size / sizeof(Elf64_Sym);
		     i++) {
			GElf_Sym s;

			if (gelf_getsym(d, (int)i, &s) &&
			    !strcmp(elf_strptr(e, sh.sh_link, s.st_name),
				    sym)) {
				*lo = s.st_value;
				*hi = s.st_value + s.st_size;
			}
		}
	}
	elf_end(e);
	assert_true(*hi > *lo);
}

static void test_vdso_sigreturn(void **state)
{
	int fd = open_built("arm64-unit/libsigtramp.so");
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	const struct unwind_row *r;
	uint64_t lo, hi;

	(void)state;
	find(fd, NULL, "__kernel_rt_sigreturn", &lo, &hi);
	assert_int_equal(hi - lo, 8);
	/* No CFI at all: without the symbol this would be -ENOENT. */
	assert_int_equal(unwind_table_build_fd(fd, &t, &st), 0);
	close(fd);
	assert_int_equal(st.flags & UNWIND_ST_EH_FRAME, 0);
	for (uint64_t pc = lo - 4; pc < hi; pc++) {
		r = unwind_table_lookup(&t, pc);
		assert_non_null(r);
		assert_int_equal(r->rule.cfa_base, UNWIND_CFA_SIGNAL);
	}
	/* The function before the nop and the bytes after: no rule. */
	r = unwind_table_lookup(&t, lo - 5);
	assert_true(!r || r->rule.cfa_base == UNWIND_CFA_INVALID);
	r = unwind_table_lookup(&t, hi);
	assert_non_null(r);
	assert_int_equal(r->rule.cfa_base, UNWIND_CFA_INVALID);
	unwind_table_free(&t);
}

static void test_plt(void **state)
{
	int fd = open_built("arm64-unit/callgraph_nofp");
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	uint64_t lo, hi;

	(void)state;
	find(fd, ".plt", NULL, &lo, &hi);
	assert_int_equal(unwind_table_build_fd(fd, &t, &st), 0);
	close(fd);
	assert_true(st.flags & UNWIND_ST_PLT_FILLED);
	for (uint64_t pc = lo; pc < hi; pc += 4) {
		const struct unwind_row *r = unwind_table_lookup(&t, pc);

		assert_non_null(r);
		assert_int_equal(r->rule.cfa_base, UNWIND_CFA_SP);
		assert_int_equal(r->rule.cfa_offset, 0);
		assert_int_equal(r->rule.fp_rule, UNWIND_FP_SAME);
		assert_int_equal(r->rule.ra_rule, UNWIND_RA_LR);
	}
	unwind_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vdso_sigreturn),
		cmocka_unit_test(test_plt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
