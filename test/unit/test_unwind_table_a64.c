// SPDX-License-Identifier: Apache-2.0
/*
 * aarch64 tables beyond what the CFI oracle judges (test_cfi_oracle.c):
 * rows the builder adds without an FDE. The vDSO's signal trampoline
 * (known only by its exported symbol: the vDSO has no CFI) is a SIGNAL
 * row from the nop before it to its end; PLT entries without an FDE take
 * CFA = sp with the return address still in x30; Go's functions take
 * theirs from .gopclntab. Files cross-built by aarch64-linux-gnu-gcc
 * (make rules beside test_cfi_oracle's) and Go (test-arm64's workload).
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

/* A .symtab function's [addr, addr + size) (Go's unstripped build). */
static void find_func(int fd, const char *name, uint64_t *lo, uint64_t *hi)
{
	Elf *e;
	Elf_Scn *scn = NULL;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	*lo = *hi = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < d->d_size / sizeof(Elf64_Sym);
		     i++) {
			GElf_Sym s;

			if (gelf_getsym(d, (int)i, &s) &&
			    !strcmp(elf_strptr(e, sh.sh_link, s.st_name),
				    name)) {
				*lo = s.st_value;
				*hi = s.st_value + s.st_size;
			}
		}
	}
	elf_end(e);
	assert_true(*hi > *lo);
}

/* The 4-byte instruction at vaddr of an executable whose text is mapped
 * 1:1 from the file (Go's: vaddr - file offset is one constant). */
static uint32_t insn_at(int fd, uint64_t vaddr)
{
	Elf *e;
	GElf_Phdr ph;
	size_t n;
	uint32_t insn = 0;

	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	assert_int_equal(elf_getphdrnum(e, &n), 0);
	for (size_t i = 0; i < n; i++) {
		assert_non_null(gelf_getphdr(e, (int)i, &ph));
		if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
		    vaddr + 4 <= ph.p_vaddr + ph.p_filesz) {
			assert_int_equal(pread(fd, &insn, 4,
					       (off_t)(ph.p_offset + vaddr -
						       ph.p_vaddr)),
					 4);
			break;
		}
	}
	elf_end(e);
	return insn;
}

/* N of `str x30, [sp, #-N]!` (STR immediate, pre-index, 64-bit), else 0. */
static uint64_t str_x30_frame(uint32_t insn)
{
	int32_t imm = (int32_t)((insn >> 12) & 0x1ff);

	if ((insn & 0xffe00c00u) != 0xf8000c00u || (insn & 31) != 30 ||
	    ((insn >> 5) & 31) != 31)
		return 0;
	return (uint64_t)(-(imm - (imm & 0x100) * 2));
}

/* Where a `bl` at pc goes. */
static uint64_t bl_target(uint64_t pc, uint32_t insn)
{
	int64_t imm = (int64_t)(insn & 0x3ffffffu);

	imm -= (imm & 0x2000000) * 2;
	return pc + (uint64_t)(imm * 4);
}

/*
 * Go's functions, from .gopclntab (a stripped build: no CFI, no symbols),
 * against the instructions: at the entry the return address is in x30;
 * Go's prologue saves x30 and moves sp down by the frame's size N in one
 * `str x30, [sp, #-N]!`; from the next instruction to the call the frame
 * is N bytes with x30 at 0(sp) (UNWIND_CFA_GO_FRAME). The addresses come
 * from the same build unstripped (the same code, its .symtab kept).
 */
static void test_go_functions(void **state)
{
	static const char *const funcs[] = {"main.pathHeavy", "main.runLoop",
					    "main.main", "runtime.main"};
	int fd = open_built("arm64/workloads/go_callgraph");
	int syms = open_built("arm64/workloads/go_callgraph_syms");
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	const struct unwind_row *r;
	uint64_t morestack, end;

	(void)state;
	find_func(syms, "runtime.morestack_noctxt.abi0", &morestack, &end);
	assert_int_equal(unwind_table_build_fd(fd, &t, &st), 0);
	assert_int_equal(st.flags & UNWIND_ST_EH_FRAME, 0);
	for (size_t k = 0; k < sizeof(funcs) / sizeof(funcs[0]); k++) {
		uint64_t lo, hi, pc, frame = 0, calls = 0;

		find_func(syms, funcs[k], &lo, &hi);
		assert_int_equal(insn_at(fd, lo), insn_at(syms, lo));
		r = unwind_table_lookup(&t, lo);
		assert_non_null(r);
		assert_int_equal(r->rule.cfa_base, UNWIND_CFA_SP);
		assert_int_equal(r->rule.cfa_offset, 0);
		assert_int_equal(r->rule.ra_rule, UNWIND_RA_LR);
		for (pc = lo; pc < hi; pc += 4) {
			uint32_t insn = insn_at(fd, pc);

			if (!frame && str_x30_frame(insn)) {
				frame = str_x30_frame(insn);
				r = unwind_table_lookup(&t, pc);
				assert_non_null(r);
				assert_int_equal(r->rule.ra_rule, UNWIND_RA_LR);
				r = unwind_table_lookup(&t, pc + 4);
				assert_non_null(r);
				assert_int_equal(r->rule.cfa_base,
						 UNWIND_CFA_GO_FRAME);
				assert_int_equal(r->rule.cfa_offset, frame);
			}
			if (!frame)
				continue;
			r = unwind_table_lookup(&t, pc);
			assert_non_null(r);
			if (insn == 0xd65f03c0u || /* ret: frame popped */
			    ((insn & 0xfc000000u) == 0x94000000u &&
			     bl_target(pc, insn) == morestack)) {
				/* The stack-split path after the body calls
				 * morestack before the prologue ran. */
				assert_int_equal(r->rule.cfa_base,
						 UNWIND_CFA_SP);
				assert_int_equal(r->rule.ra_rule, UNWIND_RA_LR);
			} else if ((insn & 0xfc000000u) == 0x94000000u) {
				/* bl: the frame as the prologue set it up. */
				assert_int_equal(r->rule.cfa_base,
						 UNWIND_CFA_GO_FRAME);
				assert_int_equal(r->rule.cfa_offset, frame);
				calls++;
			}
		}
		if (!frame || !calls)
			fail_msg("%s: no `str x30, [sp, #-N]!` and call",
				 funcs[k]);
	}
	/* The goroutine's bottom and the entry point's function end the
	 * walk; the runtime's syscall wrappers just after the entry point
	 * keep their own rows (usleep: `str x30, [sp, #-N]!` first). */
	{
		uint64_t lo, hi;

		find_func(syms, "runtime.goexit.abi0", &lo, &hi);
		r = unwind_table_lookup(&t, lo);
		assert_non_null(r);
		assert_int_equal(r->rule.cfa_base, UNWIND_CFA_STOP);
		find_func(syms, "_rt0_arm64_linux", &lo, &hi);
		r = unwind_table_lookup(&t, lo);
		assert_non_null(r);
		assert_int_equal(r->rule.cfa_base, UNWIND_CFA_STOP);
		r = unwind_table_lookup(&t, hi);
		assert_non_null(r);
		assert_int_not_equal(r->rule.cfa_base, UNWIND_CFA_STOP);
		find_func(syms, "runtime.usleep.abi0", &lo, &hi);
		assert_int_not_equal(str_x30_frame(insn_at(fd, lo)), 0);
		r = unwind_table_lookup(&t, lo + 4);
		assert_non_null(r);
		assert_int_equal(r->rule.cfa_base, UNWIND_CFA_GO_FRAME);
		assert_int_equal(r->rule.cfa_offset,
				 str_x30_frame(insn_at(fd, lo)));
	}
	/* A function that writes sp (FuncFlagSPWrite: nanotime1 moves it to
	 * g0's stack around the vDSO call): by sp while its prologue sets
	 * x29 = sp - 8, by x29 after (CFA = x29 + 8 + N, its record at
	 * x29). */
	{
		uint64_t lo, hi, frame;

		find_func(syms, "runtime.nanotime1.abi0", &lo, &hi);
		frame = str_x30_frame(insn_at(fd, lo));
		assert_int_not_equal(frame, 0);
		r = unwind_table_lookup(&t, lo + 4);
		assert_non_null(r);
		assert_int_equal(r->rule.cfa_base, UNWIND_CFA_GO_FRAME);
		r = unwind_table_lookup(&t, lo + 12);
		assert_non_null(r);
		assert_int_equal(r->rule.cfa_base, UNWIND_CFA_FP_SWITCH);
		assert_int_equal(r->rule.cfa_offset, frame + 8);
		assert_int_equal(r->rule.fp_rule, UNWIND_FP_CFA_OFFSET);
		assert_int_equal(r->rule.fp_offset, -(int64_t)frame - 8);
		assert_int_equal(r->rule.ra_rule, UNWIND_RA_AFTER_FP);
		/* `sub x29, sp, #8` just before */
		assert_int_equal(insn_at(fd, lo + 8), 0xd10023fdu);
	}
	close(fd);
	close(syms);
	unwind_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vdso_sigreturn),
		cmocka_unit_test(test_plt),
		cmocka_unit_test(test_go_functions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
