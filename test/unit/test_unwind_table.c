// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for lib/unwind: properties on this machine's real binaries,
 * functions compiled at test time with known frames, and corrupted inputs.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "unwind/unwind_table.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define LDSO "/lib64/ld-linux-x86-64.so.2"

static const char *const real_files[] = {
	LIBC,
	LDSO,
	"/usr/bin/ls",
	"/usr/bin/bash",
	"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
	"/usr/lib/x86_64-linux-gnu/libz.so.1",
	"/usr/lib/x86_64-linux-gnu/libelf.so.1",
	"/usr/bin/python3",
};

static int load(const char *path, uint8_t **buf, size_t *len)
{
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) || !(*buf = malloc((size_t)sb.st_size + 1))) {
		close(fd);
		return -ENOMEM;
	}
	r = pread(fd, *buf, (size_t)sb.st_size, 0);
	close(fd);
	if (r != sb.st_size) {
		free(*buf);
		return -EIO;
	}
	*len = (size_t)sb.st_size;
	return 0;
}

static bool row_eq(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->rule.cfa_base == b->rule.cfa_base &&
	       a->rule.cfa_offset == b->rule.cfa_offset &&
	       a->rule.fp_rule == b->rule.fp_rule &&
	       a->rule.fp_offset == b->rule.fp_offset;
}

/* Invariants every successfully built table must satisfy. */
static void check_shape(const struct unwind_table *t,
			const struct unwind_table_stats *st)
{
	assert_int_equal(t->nrows, st->rows);
	if (!t->nrows)
		return;
	assert_true(t->nrows <= UNWIND_MAX_ROWS);
	assert_int_equal(t->rows[t->nrows - 1].rule.cfa_base,
			 UNWIND_CFA_INVALID);
	for (size_t i = 0; i < t->nrows; i++) {
		const struct unwind_row *r = &t->rows[i];

		assert_true(r->rule.cfa_base <= UNWIND_CFA_STOP);
		assert_true(r->rule.fp_rule <= UNWIND_FP_UNDEFINED);
		if (i) {
			/* Sorted, no overlap, adjacent identical merged. */
			assert_true(t->rows[i - 1].pc < r->pc);
			assert_false(row_eq(&t->rows[i - 1], r));
		}
	}
}

static int build_path(const char *path, struct unwind_table *t,
		      struct unwind_table_stats *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = unwind_table_build_fd(fd, t, st);
	close(fd);
	return err;
}

/* Bytes at file vaddr `a`, through PT_LOAD, or NULL. */
static const uint8_t *code_at(Elf *e, const uint8_t *img, size_t len,
			      uint64_t a, size_t n)
{
	size_t phnum;

	if (elf_getphdrnum(e, &phnum))
		return NULL;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (a >= ph.p_vaddr && a + n <= ph.p_vaddr + ph.p_filesz &&
		    ph.p_offset + (a - ph.p_vaddr) + n <= len)
			return img + ph.p_offset + (a - ph.p_vaddr);
	}
	return NULL;
}

typedef void (*sym_cb)(const char *name, uint64_t addr, uint64_t size,
		       void *arg);

static void for_each_func(Elf *e, sym_cb cb, void *arg)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s) ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    s.st_shndx == SHN_UNDEF || !s.st_value)
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			cb(name ? name : "", s.st_value, s.st_size, arg);
		}
	}
}

struct find_ctx {
	const char *want;
	uint64_t addr, size;
	bool found;
};

static void find_cb(const char *n, uint64_t a, uint64_t s, void *arg)
{
	struct find_ctx *c = arg;

	if (!c->found && !strcmp(n, c->want)) {
		c->addr = a;
		c->size = s;
		c->found = true;
	}
}

static bool find_func(Elf *e, const char *want, uint64_t *addr, uint64_t *sz)
{
	struct find_ctx c = {.want = want};

	for_each_func(e, find_cb, &c);
	*addr = c.addr;
	*sz = c.size;
	return c.found;
}

struct prop {
	const struct unwind_table *t;
	Dwarf_CFI *cfi;
	Elf *e;
	const uint8_t *img;
	size_t len;
	unsigned checked, pushes, failed;
	const char *path;
};

/*
 * At the first byte of every function that has an FDE the call has just
 * pushed the return address: CFA = rsp + 8, RA at CFA - 8 (a row with
 * UNWIND_CFA_SP 8). After a leading push it is rsp + 16, and if the
 * register pushed was rbp, rbp is saved at CFA - 16.
 */
static void prop_cb(const char *name, uint64_t a, uint64_t size, void *arg)
{
	struct prop *p = arg;
	const struct unwind_row *r;
	Dwarf_Frame *f = NULL;
	Dwarf_Addr s, e;
	const uint8_t *c;
	uint64_t push_at = 0;
	bool rbp = false;

	(void)size;
	/* Only symbols an FDE covers, starting exactly at the FDE's row. */
	if (dwarf_cfi_addrframe(p->cfi, a, &f) || !f)
		return;
	dwarf_frame_info(f, &s, &e, NULL);
	free(f);
	if (s != a)
		return;
	r = unwind_table_lookup(p->t, a);
	assert_non_null(r);
	p->checked++;
	if (r->rule.cfa_base == UNWIND_CFA_STOP ||
	    r->rule.cfa_base == UNWIND_CFA_SIGNAL ||
	    r->rule.cfa_base == UNWIND_CFA_PLT)
		return;
	if (r->rule.cfa_base != UNWIND_CFA_SP || r->rule.cfa_offset != 8) {
		print_error("%s: %s@%#lx base %u off %d\n", p->path, name, a,
			    r->rule.cfa_base, r->rule.cfa_offset);
		p->failed++;
		return;
	}
	c = code_at(p->e, p->img, p->len, a, 6);
	if (!c)
		return;
	if (!memcmp(c, "\xf3\x0f\x1e\xfa", 4)) { /* endbr64 */
		c += 4;
		a += 4;
	}
	/* push %reg (not %rsp), with or without REX.B */
	if (c[0] >= 0x50 && c[0] <= 0x57 && c[0] != 0x54) {
		push_at = a + 1;
		rbp = c[0] == 0x55;
	} else if (c[0] == 0x41 && c[1] >= 0x50 && c[1] <= 0x57) {
		push_at = a + 2;
	}
	f = NULL;
	if (!push_at || dwarf_cfi_addrframe(p->cfi, push_at, &f) || !f)
		return; /* no prologue push, or past the FDE */
	free(f);
	r = unwind_table_lookup(p->t, push_at);
	assert_non_null(r);
	p->pushes++;
	if (r->rule.cfa_base != UNWIND_CFA_SP || r->rule.cfa_offset != 16 ||
	    (rbp && (r->rule.fp_rule != UNWIND_FP_CFA_OFFSET ||
		     r->rule.fp_offset != -16))) {
		print_error("%s: %s@%#lx after push: base %u off %d fp %u/%d\n",
			    p->path, name, push_at, r->rule.cfa_base,
			    r->rule.cfa_offset, r->rule.fp_rule,
			    r->rule.fp_offset);
		p->failed++;
	}
}

static void test_real_files(void **state)
{
	unsigned files = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(real_files) / sizeof(*real_files); i++) {
		struct unwind_table t;
		struct unwind_table_stats st = {0};
		struct prop p = {.path = real_files[i]};
		uint8_t *img;
		size_t len;
		Elf *e;

		if (load(real_files[i], &img, &len))
			continue;
		assert_int_equal(build_path(real_files[i], &t, &st), 0);
		check_shape(&t, &st);
		assert_true(st.rows > 100);
		assert_int_equal(st.fdes_skipped, 0);
		assert_true(st.flags & UNWIND_ST_EH_FRAME);

		/* The memory entry point gives the same table. */
		{
			struct unwind_table t2;
			struct unwind_table_stats st2 = {0};

			assert_int_equal(
				unwind_table_build_mem(img, len, &t2, &st2), 0);
			assert_int_equal(t2.nrows, t.nrows);
			assert_memory_equal(t2.rows, t.rows,
					    t.nrows * sizeof(*t.rows));
			unwind_table_free(&t2);
		}

		e = elf_memory((char *)img, len);
		assert_non_null(e);
		p.t = &t;
		p.e = e;
		p.img = img;
		p.len = len;
		p.cfi = dwarf_getcfi_elf(e);
		assert_non_null(p.cfi);
		for_each_func(e, prop_cb, &p);
		print_message("%s: rows %lu, fdes %lu, %u funcs checked, "
			      "%u push prologues\n",
			      real_files[i], st.rows, st.fdes_total, p.checked,
			      p.pushes);
		assert_int_equal(p.failed, 0);
		dwarf_cfi_end(p.cfi);
		elf_end(e);
		free(img);
		unwind_table_free(&t);
		files++;
	}
	assert_true(files >= 3);
}

static Elf *open_elf(const char *path, int *fd)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	return elf_begin(*fd, ELF_C_READ, NULL);
}

/* Section [addr, addr + size) by name, false if absent. */
static bool find_sec(Elf *e, const char *want, uint64_t *addr, uint64_t *sz)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(e, &shstrndx))
		return false;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		n = elf_strptr(e, shstrndx, sh.sh_name);
		if (n && !strcmp(n, want)) {
			*addr = sh.sh_addr;
			*sz = sh.sh_size;
			return true;
		}
	}
	return false;
}

/* _start marks rip undefined (glibc start.S): the walk stops there. */
static void test_start_is_stop(void **state)
{
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	const struct unwind_row *r;

	(void)state;
	assert_int_equal(build_path("/usr/bin/ls", &t, &st), 0);
	assert_true(t.entry != 0);
	r = unwind_table_lookup(&t, t.entry);
	assert_non_null(r);
	assert_int_equal(r->rule.cfa_base, UNWIND_CFA_STOP);
	/* A few bytes in, too (the whole of _start is outermost). */
	r = unwind_table_lookup(&t, t.entry + 4);
	assert_int_equal(r->rule.cfa_base, UNWIND_CFA_STOP);
	unwind_table_free(&t);

	/* ld.so's _start has no FDE: the entry point gets a STOP row. */
	assert_int_equal(build_path(LDSO, &t, &st), 0);
	assert_true(st.flags & UNWIND_ST_ENTRY_STOP);
	r = unwind_table_lookup(&t, t.entry);
	assert_int_equal(r->rule.cfa_base, UNWIND_CFA_STOP);
	unwind_table_free(&t);
}

/* libc's clone/clone3 child paths mark rip undefined: thread roots. */
static void test_libc_thread_roots(void **state)
{
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	uint64_t a, sz;
	bool in_clone = false;
	int fd;
	Elf *e;

	(void)state;
	assert_int_equal(build_path(LIBC, &t, &st), 0);
	assert_true(st.rows_stop >= 2);
	e = open_elf(LIBC, &fd);
	assert_non_null(e);
	assert_true(find_func(e, "__clone", &a, &sz));
	for (size_t i = 0; i < t.nrows; i++)
		if (t.rows[i].rule.cfa_base == UNWIND_CFA_STOP &&
		    t.rows[i].pc >= a && t.rows[i].pc < a + sz)
			in_clone = true;
	assert_true(in_clone);
	elf_end(e);
	close(fd);
	unwind_table_free(&t);
}

static void check_plt(const char *path)
{
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	uint64_t a, sz;
	int fd;
	Elf *e;

	assert_int_equal(build_path(path, &t, &st), 0);
	e = open_elf(path, &fd);
	assert_non_null(e);
	if (find_sec(e, ".plt", &a, &sz) && sz > 32) {
		/* Entry 0 pushes GOT[1] (own rows); stubs from entry 1 on. */
		for (uint64_t pc = a + 16; pc < a + sz; pc++) {
			const struct unwind_row *r =
				unwind_table_lookup(&t, pc);

			assert_non_null(r);
			assert_int_equal(r->rule.cfa_base, UNWIND_CFA_PLT);
		}
	}
	if (find_sec(e, ".plt.got", &a, &sz) ||
	    find_sec(e, ".plt.sec", &a, &sz)) {
		/* These stubs never push: an FDE (rsp+8) or the PLT rule. */
		for (uint64_t pc = a; pc < a + sz; pc++) {
			const struct unwind_row *r =
				unwind_table_lookup(&t, pc);

			assert_non_null(r);
			assert_true(r->rule.cfa_base == UNWIND_CFA_PLT ||
				    (r->rule.cfa_base == UNWIND_CFA_SP &&
				     r->rule.cfa_offset == 8));
		}
	}
	elf_end(e);
	close(fd);
	unwind_table_free(&t);
}

static void test_plt(void **state)
{
	(void)state;
	check_plt("/usr/bin/ls");
	check_plt(LIBC);
}

static void dummy_handler(int sig)
{
	(void)sig;
}

static int find_libc_base(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if (strstr(info->dlpi_name, "libc.so.6")) {
		*(uint64_t *)arg = info->dlpi_addr;
		return 1;
	}
	return 0;
}

/*
 * glibc's sigaction() installs __restore_rt as sa_restorer and reports it
 * back: its file address must have the SIGNAL rule.
 */
static void test_restore_rt_is_signal(void **state)
{
	struct sigaction sa = {.sa_handler = dummy_handler}, old;
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	const struct unwind_row *r;
	uint64_t base = 0, restorer;

	(void)state;
	assert_int_equal(sigaction(SIGUSR2, &sa, NULL), 0);
	assert_int_equal(sigaction(SIGUSR2, NULL, &old), 0);
	restorer = (uint64_t)(uintptr_t)old.sa_restorer;
	assert_true(restorer != 0);
	assert_int_equal(dl_iterate_phdr(find_libc_base, &base), 1);
	assert_int_equal(build_path(LIBC, &t, &st), 0);
	assert_true(st.rows_signal >= 1);
	r = unwind_table_lookup(&t, restorer - base);
	assert_non_null(r);
	assert_int_equal(r->rule.cfa_base, UNWIND_CFA_SIGNAL);
	unwind_table_free(&t);
}

/* ---- functions compiled at test time ---- */

static char tmpdir[64];

static const char synth_src[] =
	"#include <string.h>\n"
	"__attribute__((noinline)) int sink(char *p, int n) {\n"
	"  __asm__ volatile(\"\" : : \"r\"(p), \"r\"(n) : \"memory\");\n"
	"  return p[n / 2];\n"
	"}\n"
	"int leaf(int x) { return x * 3 + 1; }\n"
	"int vla(int n) {\n"
	"  char buf[n];\n"
	"  memset(buf, n, n);\n"
	"  return sink(buf, n) + 1;\n"
	"}\n"
	"int saver(int a, int b, int c) {\n"
	"  int r = sink((char *)&a, a) + sink((char *)&b, b);\n"
	"  return r + sink((char *)&c, c) + a + b + c;\n"
	"}\n";

static int compile(const char *flags, const char *out)
{
	char src[128], cmd[512];
	FILE *f;

	snprintf(src, sizeof(src), "%s/synth.c", tmpdir);
	f = fopen(src, "w");
	if (!f)
		return -1;
	fputs(synth_src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "gcc -O2 -fomit-frame-pointer -shared -fPIC %s -o %s/%s %s",
		 flags, tmpdir, out, src);
	return system(cmd);
}

static int synth_setup(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/unwind_test.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	return 0;
}

static int synth_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* All rows of [a, a + sz). */
static void rows_in(const struct unwind_table *t, uint64_t a, uint64_t sz,
		    const struct unwind_row **first, size_t *n)
{
	const struct unwind_row *r = unwind_table_lookup(t, a);

	assert_non_null(r);
	*first = r;
	*n = 0;
	while (r < t->rows + t->nrows && (r == *first || r->pc < a + sz)) {
		(*n)++;
		r++;
	}
}

static void check_synth(const char *so, bool debug_frame)
{
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	const struct unwind_row *r;
	char path[128];
	uint64_t a, sz;
	size_t n;
	bool fp16 = false;
	int fd;
	Elf *e;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, so);
	assert_int_equal(build_path(path, &t, &st), 0);
	check_shape(&t, &st);
	if (debug_frame) {
		assert_true(st.flags & UNWIND_ST_DEBUG_FRAME);
		assert_true(st.fdes_debug_frame >= 4);
	}
	e = open_elf(path, &fd);
	assert_non_null(e);

	/* leaf: no frame at all. */
	assert_true(find_func(e, "leaf", &a, &sz));
	rows_in(&t, a, sz, &r, &n);
	assert_int_equal(n, 1); /* may start earlier: merged with sink() */
	assert_int_equal(r->rule.cfa_base, UNWIND_CFA_SP);
	assert_int_equal(r->rule.cfa_offset, 8);
	assert_int_equal(r->rule.fp_rule, UNWIND_FP_SAME);

	/* vla: gcc needs a frame pointer: CFA = rbp + 16, rbp at CFA-16. */
	assert_true(find_func(e, "vla", &a, &sz));
	rows_in(&t, a, sz, &r, &n);
	assert_int_equal(r[0].rule.cfa_base, UNWIND_CFA_SP);
	assert_int_equal(r[0].rule.cfa_offset, 8);
	for (size_t i = 0; i < n; i++)
		if (r[i].rule.cfa_base == UNWIND_CFA_FP &&
		    r[i].rule.cfa_offset == 16 &&
		    r[i].rule.fp_rule == UNWIND_FP_CFA_OFFSET &&
		    r[i].rule.fp_offset == -16)
			fp16 = true;
	assert_true(fp16);

	/* saver: pushes callee-saved registers, CFA grows by 8 per push. */
	assert_true(find_func(e, "saver", &a, &sz));
	rows_in(&t, a, sz, &r, &n);
	assert_true(n >= 3);
	assert_int_equal(r[0].rule.cfa_offset, 8);
	assert_int_equal(r[1].rule.cfa_base, UNWIND_CFA_SP);
	assert_true(r[1].rule.cfa_offset > 8 && r[1].rule.cfa_offset % 8 == 0);
	elf_end(e);
	close(fd);
	unwind_table_free(&t);
}

static void test_synth_eh_frame(void **state)
{
	(void)state;
	assert_int_equal(compile("", "eh.so"), 0);
	check_synth("eh.so", false);
}

/* Without unwind tables gcc -g puts the CFI in .debug_frame only. */
static void test_synth_debug_frame(void **state)
{
	(void)state;
	assert_int_equal(compile("-g -fno-asynchronous-unwind-tables "
				 "-fno-unwind-tables",
				 "dbg.so"),
			 0);
	check_synth("dbg.so", true);
}

/* The same, with zlib-compressed debug sections (SHF_COMPRESSED). */
static void test_synth_debug_frame_compressed(void **state)
{
	(void)state;
	assert_int_equal(compile("-g -fno-asynchronous-unwind-tables "
				 "-fno-unwind-tables "
				 "-Wl,--compress-debug-sections=zlib",
				 "dbgz.so"),
			 0);
	check_synth("dbgz.so", true);
}

/* The vDSO through the memory entry point. */
static void test_vdso(void **state)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	char line[256];
	size_t len = 0;
	FILE *f;

	(void)state;
	if (!base)
		skip();
	f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (strstr(line, "[vdso]") &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == base)
			len = hi - lo;
	}
	fclose(f);
	assert_true(len > 0);
	assert_int_equal(unwind_table_build_mem((void *)base, len, &t, &st), 0);
	check_shape(&t, &st);
	assert_true(st.rows > 4);
	assert_int_equal(st.fdes_skipped, 0);
	unwind_table_free(&t);
}

static void test_lookup(void **state)
{
	struct unwind_row rows[] = {
		{.pc = 0x10,
		 .rule.cfa_base = UNWIND_CFA_SP,
		 .rule.cfa_offset = 8},
		{.pc = 0x20,
		 .rule.cfa_base = UNWIND_CFA_FP,
		 .rule.cfa_offset = 16},
		{.pc = 0x30, .rule.cfa_base = UNWIND_CFA_INVALID},
	};
	struct unwind_table t = {.rows = rows, .nrows = 3};

	(void)state;
	assert_null(unwind_table_lookup(&t, 0xf));
	assert_ptr_equal(unwind_table_lookup(&t, 0x10), &rows[0]);
	assert_ptr_equal(unwind_table_lookup(&t, 0x1f), &rows[0]);
	assert_ptr_equal(unwind_table_lookup(&t, 0x20), &rows[1]);
	assert_ptr_equal(unwind_table_lookup(&t, 0x2f), &rows[1]);
	assert_ptr_equal(unwind_table_lookup(&t, UINT64_MAX), &rows[2]);
	t.nrows = 0;
	assert_null(unwind_table_lookup(&t, 0x10));
	assert_null(unwind_table_lookup(NULL, 0x10));
}

/* ---- hostile input ---- */

/* Build from memory; success must still give a well-formed table. */
static int try_mem(const uint8_t *buf, size_t len)
{
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	int err = unwind_table_build_mem(buf, len, &t, &st);

	if (err == 0)
		check_shape(&t, &st);
	else
		assert_true(err < 0 && t.nrows == 0 && !t.rows);
	unwind_table_free(&t);
	return err;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_corrupt_eh_frame(void **state)
{
	uint8_t *img, *copy;
	size_t len;
	uint64_t ehoff = 0, ehsz = 0;
	unsigned skipped_runs = 0;
	int fd;
	Elf *e;

	(void)state;
	assert_int_equal(load(LIBC, &img, &len), 0);
	/* Locate .eh_frame's file bytes. */
	e = open_elf(LIBC, &fd);
	assert_non_null(e);
	{
		size_t shstrndx;
		Elf_Scn *scn = NULL;

		assert_int_equal(elf_getshdrstrndx(e, &shstrndx), 0);
		while ((scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;
			const char *n;

			gelf_getshdr(scn, &sh);
			n = elf_strptr(e, shstrndx, sh.sh_name);
			if (n && !strcmp(n, ".eh_frame")) {
				ehoff = sh.sh_offset;
				ehsz = sh.sh_size;
			}
		}
	}
	elf_end(e);
	close(fd);
	assert_true(ehsz > 0);
	copy = malloc(len);
	assert_non_null(copy);
	for (int run = 0; run < 60; run++) {
		struct unwind_table t;
		struct unwind_table_stats st = {0};
		int err;

		memcpy(copy, img, len);
		for (int k = 0; k < 1 + run; k++)
			copy[ehoff + rng() % ehsz] ^=
				(uint8_t)(1 + rng() % 255);
		err = unwind_table_build_mem(copy, len, &t, &st);
		if (err == 0) {
			check_shape(&t, &st);
			if (st.fdes_skipped ||
			    (st.flags & UNWIND_ST_CFI_CORRUPT))
				skipped_runs++;
		}
		unwind_table_free(&t);
	}
	/* Random damage is noticed in most runs. */
	assert_true(skipped_runs > 20);
	free(copy);
	free(img);
}

static void test_truncated(void **state)
{
	uint8_t *img;
	size_t len;
	char path[] = "/tmp/unwind_trunc.XXXXXX";
	int fd;

	(void)state;
	assert_int_equal(load(LIBC, &img, &len), 0);
	for (size_t cut = 0; cut < len; cut += len / 37 + 1)
		try_mem(img, cut);
	for (size_t cut = 0; cut < 4096; cut += 61)
		try_mem(img, cut);
	/* The fd path reads with pread: a short file is an error or less. */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	for (size_t cut = len / 2; cut < len; cut += len / 7) {
		struct unwind_table t;
		struct unwind_table_stats st = {0};
		int err;

		assert_int_equal(ftruncate(fd, 0), 0);
		assert_int_equal(pwrite(fd, img, cut, 0), (ssize_t)cut);
		err = unwind_table_build_fd(fd, &t, &st);
		if (!err)
			check_shape(&t, &st);
		unwind_table_free(&t);
	}
	close(fd);
	free(img);
}

static void test_bogus_headers(void **state)
{
	uint8_t *img, *copy;
	size_t len;
	Elf64_Ehdr *eh;

	(void)state;
	assert_int_equal(load(LIBC, &img, &len), 0);
	copy = malloc(len);
	assert_non_null(copy);
	eh = (Elf64_Ehdr *)copy;

	memcpy(copy, img, len);
	eh->e_shoff = len - 10;
	try_mem(copy, len);
	memcpy(copy, img, len);
	eh->e_shoff = UINT64_MAX - 100;
	try_mem(copy, len);
	memcpy(copy, img, len);
	eh->e_shnum = 0xffff;
	try_mem(copy, len);
	memcpy(copy, img, len);
	eh->e_phoff = len - 8;
	try_mem(copy, len);
	memcpy(copy, img, len);
	/* x86_64 and aarch64 only. */
	eh->e_machine = EM_RISCV;
	assert_int_equal(try_mem(copy, len), -ENOEXEC);
	/* Section headers stripped: no CFI found, use frame pointers. */
	memcpy(copy, img, len);
	eh->e_shoff = 0;
	eh->e_shnum = 0;
	eh->e_shstrndx = 0;
	assert_int_equal(try_mem(copy, len), -ENOENT);

	/* Every section header's offset/size bent, one at a time. */
	for (unsigned i = 1; i < ((Elf64_Ehdr *)img)->e_shnum; i++) {
		Elf64_Shdr *sh;

		memcpy(copy, img, len);
		sh = (Elf64_Shdr *)(copy + eh->e_shoff) + i;
		sh->sh_offset = len - 4;
		try_mem(copy, len);
		memcpy(copy, img, len);
		sh->sh_size = (uint64_t)1 << 40;
		try_mem(copy, len);
		memcpy(copy, img, len);
		sh->sh_addr ^= 0x5550000;
		try_mem(copy, len);
	}
	/* Garbage of all sizes. */
	for (size_t n = 0; n < 4096; n += 64) {
		for (size_t k = 0; k < n; k++)
			copy[k] = (uint8_t)rng();
		memcpy(copy, img, n < 16 ? n : 16); /* valid e_ident */
		try_mem(copy, n);
	}
	assert_int_equal(try_mem(NULL, 0), -EINVAL);
	free(copy);
	free(img);
}

static void test_not_regular(void **state)
{
	struct unwind_table t;
	int fd = open("/dev/null", O_RDONLY);

	(void)state;
	assert_int_equal(unwind_table_build_fd(fd, &t, NULL), -ENOEXEC);
	close(fd);
	assert_true(unwind_table_build_fd(-1, &t, NULL) < 0);
}

/* The build is charged to the file's account: libc's table within 8 MiB
 * (its peak is the scratch, the rows stay charged until freed), refused
 * whole under 256 KiB, and nothing stays charged either way. */
static void test_budget(void **state)
{
	struct mem_budget b;
	struct mem_account a;
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	uint64_t rows_bytes;

	(void)state;
	mem_budget_init(&b, 8u << 20, 8u << 20);
	mem_account_init(&a, &b);
	st.acct = &a;
	assert_int_equal(build_path(LIBC, &t, &st), 0);
	rows_bytes = t.nrows * sizeof(struct unwind_row);
	assert_true(t.nrows > 1000);
	assert_int_equal(atomic_load(&a.bytes), rows_bytes);
	assert_true(st.mem_peak > rows_bytes && st.mem_peak < (8u << 20));
	assert_false(st.flags & UNWIND_ST_OVER_BUDGET);
	unwind_table_free(&t);
	assert_int_equal(atomic_load(&a.bytes), 0);
	assert_int_equal(mem_budget_used(&b), 0);

	mem_budget_init(&b, 256u << 10, 256u << 10);
	mem_account_init(&a, &b);
	memset(&st, 0, sizeof(st));
	st.acct = &a;
	assert_int_equal(build_path(LIBC, &t, &st), -EDQUOT);
	assert_true(st.flags & UNWIND_ST_OVER_BUDGET);
	assert_int_equal(t.nrows, 0);
	assert_int_equal(atomic_load(&a.bytes), 0);
	assert_true(atomic_load(&b.refused) >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_real_files),
		cmocka_unit_test(test_start_is_stop),
		cmocka_unit_test(test_libc_thread_roots),
		cmocka_unit_test(test_plt),
		cmocka_unit_test(test_restore_rt_is_signal),
		cmocka_unit_test_setup_teardown(test_synth_eh_frame,
						synth_setup, synth_teardown),
		cmocka_unit_test_setup_teardown(test_synth_debug_frame,
						synth_setup, synth_teardown),
		cmocka_unit_test_setup_teardown(
			test_synth_debug_frame_compressed, synth_setup,
			synth_teardown),
		cmocka_unit_test(test_vdso),
		cmocka_unit_test(test_corrupt_eh_frame),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_bogus_headers),
		cmocka_unit_test(test_not_regular),
		cmocka_unit_test(test_budget),
	};

	elf_version(EV_CURRENT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
