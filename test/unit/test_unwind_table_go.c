// SPDX-License-Identifier: Apache-2.0
/*
 * x86_64 Go rows beyond the SP deltas themselves (test_go_pclntab.c reads
 * those): which functions end the walk, the stack switches, and Go's
 * signal restorer. Judged
 * on the stripped go_callgraph workload against the same build unstripped
 * (its .symtab says where each function is).
 */
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/unwind_table.h"

/* build/test/unit/X -> build/<rel> */
static int open_built(const char *rel)
{
	char exe[1024], path[1200];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int fd;

	assert_true(n > 0);
	exe[n] = '\0';
	snprintf(path, sizeof(path), "%s/../../%s", dirname(exe), rel);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail_msg("%s missing (make workloads builds it)", path);
	return fd;
}

struct go_func {
	char name[96];
	uint64_t lo, hi;
};

/* The .symtab's functions (at most max); returns how many. */
static size_t read_funcs(int fd, struct go_func *v, size_t max)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t n = 0;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0;
		     d && i < d->d_size / sizeof(Elf64_Sym) && n < max; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s) ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_size)
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name)
				continue;
			snprintf(v[n].name, sizeof(v[n].name), "%s", name);
			v[n].lo = s.st_value;
			v[n].hi = s.st_value + s.st_size;
			n++;
		}
	}
	elf_end(e);
	return n;
}

static const struct go_func *func_named(const struct go_func *v, size_t n,
					const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	fail_msg("%s not in the workload's .symtab", name);
	return NULL;
}

static int cfa_base_at(const struct unwind_table *t, uint64_t pc)
{
	const struct unwind_row *r = unwind_table_lookup(t, pc);

	return r ? r->rule.cfa_base : -1;
}

static struct go_func funcs[8192];

static bool named(const char *name, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(name, *set))
			return true;
	return false;
}

/*
 * The walk ends at the bottoms of Go's stacks: the goroutine's
 * (runtime.goexit), each thread's (runtime.mstart, runtime.rt0_go), the
 * entry point's own function (_rt0_amd64_linux); at the stack switches
 * without a frame (morestack, gogo, clone), past whose sp write nothing
 * says where the caller is; and at mcall, which clears rbp on g0's stack.
 * Nothing else stops it: not the
 * functions right after the entry point (the runtime's syscall wrappers,
 * its signal handler, time.now), where a sample in futex or usleep must
 * reach the thread's bottom.
 */
static void test_only_roots_stop(void **state)
{
	static const char *const stops[] = {"runtime.goexit.abi0",
					    "runtime.mstart.abi0",
					    "runtime.rt0_go.abi0",
					    "_rt0_amd64_linux",
					    "runtime.morestack.abi0",
					    "gogo",
					    "runtime.clone.abi0",
					    "runtime.mcall",
					    NULL};
	int fd = open_built("workloads/native/go_callgraph");
	int syms = open_built("workloads/native/go_callgraph_syms");
	size_t n = read_funcs(syms, funcs, sizeof(funcs) / sizeof(funcs[0]));
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	const struct go_func *entry_fn, *f;
	size_t nstop = 0, after_entry = 0;

	(void)state;
	assert_true(n > 1000);
	assert_int_equal(unwind_table_build_fd(fd, &t, &st), 0);
	entry_fn = func_named(funcs, n, "_rt0_amd64_linux");
	assert_int_equal(t.entry, entry_fn->lo);
	for (size_t i = 0; i < n; i++) {
		int base = cfa_base_at(&t, funcs[i].lo);

		if (named(funcs[i].name, stops)) {
			if (base != UNWIND_CFA_STOP)
				fail_msg("%s: no STOP row", funcs[i].name);
			nstop++;
		} else if (base == UNWIND_CFA_STOP) {
			fail_msg("%s at %#lx: a STOP row", funcs[i].name,
				 (unsigned long)funcs[i].lo);
		}
		if (funcs[i].lo > entry_fn->lo &&
		    funcs[i].lo < entry_fn->lo + 4096)
			after_entry++;
	}
	assert_int_equal(nstop, sizeof(stops) / sizeof(stops[0]) - 1);
	assert_true(after_entry >= 20); /* the wrappers are there */
	/* A syscall wrapper without a frame: CFA = rsp + 8 throughout. */
	f = func_named(funcs, n, "runtime.futex.abi0");
	for (uint64_t pc = f->lo; pc < f->hi; pc++) {
		const struct unwind_row *r = unwind_table_lookup(&t, pc);

		assert_non_null(r);
		assert_int_equal(r->rule.cfa_base, UNWIND_CFA_SP);
		assert_int_equal(r->rule.cfa_offset, 8);
	}
	f = func_named(funcs, n, "runtime.usleep.abi0");
	assert_int_equal(cfa_base_at(&t, f->lo), UNWIND_CFA_SP);
	close(fd);
	close(syms);
	unwind_table_free(&t);
}

/*
 * A stack switch with a frame (nanotime1 and time.now around the vDSO
 * call, systemstack and asmcgocall around a call on g0's stack): by rsp
 * until its prologue's `push rbp; mov rbp, rsp` has run, then by rbp,
 * which the sp write leaves alone: CFA = rbp + 16, the caller's rbp at
 * CFA - 16. Judged against the instructions: the first bytes are 55 48
 * 89 e5.
 */
static uint8_t byte_at(int fd, uint64_t vaddr)
{
	Elf *e;
	GElf_Phdr ph;
	size_t n;
	uint8_t b = 0;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	assert_int_equal(elf_getphdrnum(e, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz)
			assert_int_equal(pread(fd, &b, 1,
					       (off_t)(vaddr - ph.p_vaddr +
						       ph.p_offset)),
					 1);
	elf_end(e);
	return b;
}

static void test_stack_switch_by_rbp(void **state)
{
	static const char *const framed[] = {
		"runtime.nanotime1.abi0", "time.now",
		"runtime.systemstack.abi0", "runtime.asmcgocall.abi0", NULL};
	int fd = open_built("workloads/native/go_callgraph");
	int syms = open_built("workloads/native/go_callgraph_syms");
	size_t n = read_funcs(syms, funcs, sizeof(funcs) / sizeof(funcs[0]));
	struct unwind_table t;
	struct unwind_table_stats st = {0};

	(void)state;
	assert_int_equal(unwind_table_build_fd(fd, &t, &st), 0);
	for (const char *const *name = framed; *name; name++) {
		const struct go_func *f = func_named(funcs, n, *name);
		const struct unwind_row *r;
		size_t by_rbp = 0;

		assert_int_equal(byte_at(fd, f->lo), 0x55);
		assert_int_equal(byte_at(fd, f->lo + 1), 0x48);
		assert_int_equal(byte_at(fd, f->lo + 2), 0x89);
		assert_int_equal(byte_at(fd, f->lo + 3), 0xe5);
		for (uint64_t pc = f->lo; pc < f->lo + 4; pc++)
			assert_int_equal(cfa_base_at(&t, pc), UNWIND_CFA_SP);
		for (uint64_t pc = f->lo + 4; pc < f->hi; pc++) {
			r = unwind_table_lookup(&t, pc);
			if (!r || r->rule.cfa_base != UNWIND_CFA_FP_SWITCH)
				continue;
			assert_int_equal(r->rule.cfa_offset, 16);
			assert_int_equal(r->rule.fp_rule, UNWIND_FP_CFA_OFFSET);
			assert_int_equal(r->rule.fp_offset, -16);
			by_rbp++;
		}
		/* All but the epilogue after `pop rbp` and its padding. */
		if (by_rbp < (f->hi - f->lo) / 2)
			fail_msg("%s: %zu of %lu bytes by rbp", *name, by_rbp,
				 (unsigned long)(f->hi - f->lo));
	}
	close(fd);
	close(syms);
	unwind_table_free(&t);
}

/*
 * The restorer the runtime installs (runtime.sigreturn__sigaction) is a
 * SIGNAL row from the byte before it: the walk reads the interrupted
 * registers from the ucontext there, looking the return address up at
 * pc - 1, in the padding after the function before.
 */
static void test_sigreturn_is_signal(void **state)
{
	int fd = open_built("workloads/native/go_callgraph");
	int syms = open_built("workloads/native/go_callgraph_syms");
	size_t n = read_funcs(syms, funcs, sizeof(funcs) / sizeof(funcs[0]));
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	const struct go_func *f, *before = NULL;

	(void)state;
	assert_int_equal(unwind_table_build_fd(fd, &t, &st), 0);
	f = func_named(funcs, n, "runtime.sigreturn__sigaction.abi0");
	for (size_t i = 0; i < n; i++)
		if (funcs[i].lo < f->lo &&
		    (!before || funcs[i].lo > before->lo))
			before = &funcs[i];
	assert_non_null(before);
	for (uint64_t pc = f->lo - 1; pc < f->hi; pc++)
		assert_int_equal(cfa_base_at(&t, pc), UNWIND_CFA_SIGNAL);
	assert_int_not_equal(cfa_base_at(&t, f->lo - 2), UNWIND_CFA_SIGNAL);
	assert_int_equal(cfa_base_at(&t, before->lo), UNWIND_CFA_SP);
	assert_int_equal(st.rows_signal, 1);
	close(fd);
	close(syms);
	unwind_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_only_roots_stop),
		cmocka_unit_test(test_stack_switch_by_rbp),
		cmocka_unit_test(test_sigreturn_is_signal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
