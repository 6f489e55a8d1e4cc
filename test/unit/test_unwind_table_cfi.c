// SPDX-License-Identifier: Apache-2.0
/*
 * lib/unwind on hand-assembled CFI: every rule of the row format, the
 * .eh_frame-over-.debug_frame priority, the entry point STOP, and the caps
 * that bound hostile input. The ELF and CFI are written byte by byte here so
 * each case is exact and independent of the toolchain.
 */
#include <dirent.h>
#include <elf.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "unwind/unwind_table.h"

/* The fuzz target (no main): replayed below on its regression inputs. */
#include "../fuzz/fuzz_cfi.c"

#define EH_ADDR 0x100000ULL /* vaddr of .eh_frame */

struct buf {
	uint8_t *b;
	size_t n, cap;
};

static int build(const struct buf *elf, struct unwind_table *t,
		 struct unwind_table_stats *st)
{
	memset(st, 0, sizeof(*st));
	return unwind_table_build_mem(elf->b, elf->n, t, st);
}

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		b->b = realloc(b->b, b->cap);
		assert_non_null(b->b);
	}
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put8(struct buf *b, uint8_t v)
{
	put(b, &v, 1);
}

static void put32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}

static void put64(struct buf *b, uint64_t v)
{
	put(b, &v, 8);
}

/* Pad the entry that starts at `start` to 8 bytes and set its length. */
static void close_entry(struct buf *b, size_t start)
{
	uint32_t len;

	while ((b->n - start) % 8)
		put8(b, 0); /* DW_CFA_nop */
	len = (uint32_t)(b->n - start - 4);
	memcpy(b->b + start, &len, 4);
}

/* Standard x86_64 CIE: CFA = rsp + 8, rip at CFA - 8. */
static size_t cie(struct buf *b, bool eh, const char *aug)
{
	size_t start = b->n;

	put32(b, 0);
	put32(b, eh ? 0 : 0xffffffffu);
	put8(b, 1);
	put(b, aug, strlen(aug) + 1);
	put8(b, 1);    /* code alignment */
	put8(b, 0x78); /* data alignment -8 */
	put8(b, 16);   /* return address column */
	if (aug[0] == 'z') {
		put8(b, 1);    /* augmentation data length */
		put8(b, 0x1b); /* FDE pointers: pcrel sdata4 */
	}
	put(b, "\x0c\x07\x08\x90\x01", 5);
	close_entry(b, start);
	return start;
}

static void fde(struct buf *b, bool eh, size_t cie_off, uint64_t lo,
		uint32_t range, const void *insns, size_t n)
{
	size_t start = b->n;

	put32(b, 0);
	if (eh) {
		put32(b, (uint32_t)(b->n - cie_off));
		put32(b, (uint32_t)(lo - (EH_ADDR + b->n)));
		put32(b, range);
		put8(b, 0); /* augmentation data length */
	} else {
		put32(b, (uint32_t)cie_off);
		put64(b, lo);
		put64(b, range);
	}
	put(b, insns, n);
	close_entry(b, start);
}

struct sect {
	const char *name;
	uint64_t addr;
	const struct buf *data;
};

/* ELF with one R+X PT_LOAD over [0, 16 MiB) and the given sections. */
static void make_elf(struct buf *out, uint64_t entry, const struct sect *s,
		     int ns)
{
	Elf64_Ehdr eh = {0};
	Elf64_Phdr ph = {0};
	struct buf str = {0};
	uint64_t offs[8];
	uint32_t names[8], shstr_name;
	size_t shstr_off, shoff;

	put8(&str, 0);
	for (int i = 0; i < ns; i++) {
		names[i] = (uint32_t)str.n;
		put(&str, s[i].name, strlen(s[i].name) + 1);
	}
	shstr_name = (uint32_t)str.n;
	put(&str, ".shstrtab", 10);

	memset(out, 0, sizeof(*out));
	put(out, &eh, sizeof(eh));
	put(out, &ph, sizeof(ph));
	for (int i = 0; i < ns; i++) {
		offs[i] = out->n;
		put(out, s[i].data->b, s[i].data->n);
		while (out->n % 8)
			put8(out, 0);
	}
	shstr_off = out->n;
	put(out, str.b, str.n);
	while (out->n % 8)
		put8(out, 0);
	shoff = out->n;
	{
		Elf64_Shdr sh = {0};

		put(out, &sh, sizeof(sh));
		for (int i = 0; i < ns; i++) {
			bool dbg = !strncmp(s[i].name, ".debug", 6);

			memset(&sh, 0, sizeof(sh));
			sh.sh_name = names[i];
			sh.sh_type = SHT_PROGBITS;
			sh.sh_flags = dbg ? 0 : SHF_ALLOC;
			if (!strncmp(s[i].name, ".plt", 4))
				sh.sh_flags |= SHF_EXECINSTR;
			sh.sh_addr = s[i].addr;
			sh.sh_offset = offs[i];
			sh.sh_size = s[i].data->n;
			sh.sh_addralign = 8;
			put(out, &sh, sizeof(sh));
		}
		memset(&sh, 0, sizeof(sh));
		sh.sh_name = shstr_name;
		sh.sh_type = SHT_STRTAB;
		sh.sh_offset = shstr_off;
		sh.sh_size = str.n;
		sh.sh_addralign = 1;
		put(out, &sh, sizeof(sh));
	}
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_entry = entry;
	eh.e_phoff = sizeof(eh);
	eh.e_shoff = shoff;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(ph);
	eh.e_phnum = 1;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = (uint16_t)(ns + 2);
	eh.e_shstrndx = (uint16_t)(ns + 1);
	ph.p_type = PT_LOAD;
	ph.p_flags = PF_R | PF_X;
	ph.p_memsz = 16u << 20;
	ph.p_filesz = out->n;
	ph.p_align = 4096;
	memcpy(out->b, &eh, sizeof(eh));
	memcpy(out->b + sizeof(eh), &ph, sizeof(ph));
	free(str.b);
}

struct want {
	uint64_t pc;
	uint8_t base;
	int32_t off;
	uint8_t fp;
	int16_t fpoff;
};

static void expect_rows(const struct unwind_table *t, const struct want *w,
			size_t n)
{
	for (size_t i = 0; i < t->nrows; i++)
		print_message(
			"  row %#lx base %u off %d fp %u/%d\n", t->rows[i].pc,
			t->rows[i].rule.cfa_base, t->rows[i].rule.cfa_offset,
			t->rows[i].rule.fp_rule, t->rows[i].rule.fp_offset);
	assert_int_equal(t->nrows, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(t->rows[i].pc, w[i].pc);
		assert_int_equal(t->rows[i].rule.cfa_base, w[i].base);
		assert_int_equal(t->rows[i].rule.cfa_offset, w[i].off);
		assert_int_equal(t->rows[i].rule.fp_rule, w[i].fp);
		assert_int_equal(t->rows[i].rule.fp_offset, w[i].fpoff);
	}
}

/* DW_CFA_def_cfa_expression of the lazy PLT (GNU ld). */
static const uint8_t plt_expr[] = {0x0f, 11,   0x77, 0x08, 0x80, 0x00, 0x3f,
				   0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22};

static void test_rules_and_priority(void **state)
{
	struct buf eh = {0}, dbg = {0}, elf = {0};
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	size_t c1, c2, d1;

	(void)state;
	c1 = cie(&eh, true, "zR");
	/* push %rbp; mov %rsp,%rbp: SP+8, SP+16 rbp@-16, FP+16 rbp@-16 */
	fde(&eh, true, c1, 0x1000, 0x10, "\x41\x0e\x10\x86\x02\x43\x0d\x06", 8);
	/* rip undefined: outermost */
	fde(&eh, true, c1, 0x1020, 0x10, "\x07\x10", 2);
	c2 = cie(&eh, true, "zRS");
	fde(&eh, true, c2, 0x1040, 0x10, "", 0); /* signal trampoline */
	fde(&eh, true, c1, 0x1050, 0x10, plt_expr, sizeof(plt_expr));
	/* return address at CFA-16: not expressible, INVALID */
	fde(&eh, true, c1, 0x1060, 0x10, "\x90\x02", 2);
	/* CFA = rbx + 8: INVALID */
	fde(&eh, true, c1, 0x1070, 0x10, "\x0c\x03\x08", 3);
	/* outside the executable segment: skipped */
	fde(&eh, true, c1, 0x4000000, 0x10, "", 0);
	/* CIE pointer into the middle of a CIE: that FDE is skipped */
	fde(&eh, true, c1 + 4, 0x1100, 0x10, "", 0);
	put32(&eh, 0); /* terminator */

	/* .debug_frame says CFA = rsp + 32 over all of [0x1000, 0x1100). */
	d1 = cie(&dbg, false, "");
	fde(&dbg, false, d1, 0x1000, 0x100, "\x0e\x20", 2);

	{
		struct sect s[] = {{".eh_frame", EH_ADDR, &eh},
				   {".debug_frame", 0, &dbg}};

		make_elf(&elf, 0, s, 2);
	}
	assert_int_equal(build(&elf, &t, &st), 0);
	{
		const struct want w[] = {
			{0x1000, UNWIND_CFA_SP, 8, UNWIND_FP_SAME, 0},
			{0x1001, UNWIND_CFA_SP, 16, UNWIND_FP_CFA_OFFSET, -16},
			{0x1004, UNWIND_CFA_FP, 16, UNWIND_FP_CFA_OFFSET, -16},
			{0x1010, UNWIND_CFA_SP, 32, UNWIND_FP_SAME, 0},
			{0x1020, UNWIND_CFA_STOP, 0, UNWIND_FP_SAME, 0},
			{0x1030, UNWIND_CFA_SP, 32, UNWIND_FP_SAME, 0},
			{0x1040, UNWIND_CFA_SIGNAL, 0, UNWIND_FP_SAME, 0},
			{0x1050, UNWIND_CFA_PLT, 0, UNWIND_FP_SAME, 0},
			{0x1060, UNWIND_CFA_INVALID, 0, UNWIND_FP_SAME, 0},
			{0x1080, UNWIND_CFA_SP, 32, UNWIND_FP_SAME, 0},
			{0x1100, UNWIND_CFA_INVALID, 0, UNWIND_FP_SAME, 0},
		};

		expect_rows(&t, w, sizeof(w) / sizeof(*w));
	}
	assert_int_equal(st.fdes_total, 9);
	assert_int_equal(st.fdes_skipped, 2);
	assert_int_equal(st.fdes_debug_frame, 1);
	assert_true(st.flags & UNWIND_ST_EH_FRAME);
	assert_true(st.flags & UNWIND_ST_DEBUG_FRAME);
	assert_int_equal(st.rows_stop, 1);
	assert_int_equal(st.rows_signal, 1);
	assert_int_equal(st.rows_plt, 1);
	assert_int_equal(st.bytes_of_cfi, eh.n + dbg.n);
	unwind_table_free(&t);
	free(eh.b);
	free(dbg.b);
	free(elf.b);
}

#define HDR_ADDR (EH_ADDR - 0x100)

/* .eh_frame_hdr with one search table entry pointing at `fde_off`. */
static void make_hdr(struct buf *h, uint64_t lo, uint64_t fde_off)
{
	put8(h, 1);
	put8(h, 0x1b); /* eh_frame_ptr: pcrel sdata4 */
	put8(h, 0x03); /* fde_count: udata4 */
	put8(h, 0x3b); /* table: datarel sdata4 */
	put32(h, (uint32_t)(EH_ADDR - (HDR_ADDR + 4)));
	put32(h, 1);
	put32(h, (uint32_t)(lo - HDR_ADDR));
	put32(h, (uint32_t)(EH_ADDR + fde_off - HDR_ADDR));
}

/*
 * Programs that once had to reject a whole section (libdw sized its state
 * by register numbers and nesting, and trusted .eh_frame_hdr): the
 * interpreter tracks three registers and walks the section itself, so a
 * program it cannot run loses only its FDE, to .debug_frame.
 */
static void test_hostile_sections(void **state)
{
	static const struct {
		const char *insns;
		size_t n;
	} bad[] = {
		{"\x05\xc0\x84\x3d\x01", 5}, /* offset_extended r1000000 */
		{"\x10\x80\x01\x00", 4},     /* expression r128 */
		{"\x41\x17\x00", 3},	     /* reserved opcode */
		{"\x0f\x20\x00", 3},	     /* expression past the end */
	};
	struct buf dbg = {0};
	size_t d1;

	(void)state;
	d1 = cie(&dbg, false, "");
	fde(&dbg, false, d1, 0x1000, 0x100, "\x0e\x20", 2);
	for (size_t k = 0; k < sizeof(bad) / sizeof(*bad) + 2; k++) {
		struct buf eh = {0}, hdr = {0}, elf = {0}, ins = {0};
		struct unwind_table t;
		struct unwind_table_stats st = {0};
		size_t c, f;
		int ns = 2;

		c = cie(&eh, true, "zR");
		fde(&eh, true, c, 0x1000, 0x10, "\x41\x0e\x10", 3);
		f = eh.n;
		if (k < sizeof(bad) / sizeof(*bad)) {
			fde(&eh, true, c, 0x1010, 0x10, bad[k].insns, bad[k].n);
		} else if (k == sizeof(bad) / sizeof(*bad)) {
			/* remember_state nested 100 deep */
			for (int i = 0; i < 100; i++)
				put8(&ins, 0x0a);
			fde(&eh, true, c, 0x1010, 0x10, ins.b, ins.n);
		} else {
			/* search table entry pointing inside an FDE */
			fde(&eh, true, c, 0x1010, 0x10, "", 0);
			make_hdr(&hdr, 0x1010, f + 4);
			ns = 3;
		}
		{
			struct sect s3[] = {{".eh_frame_hdr", HDR_ADDR, &hdr},
					    {".eh_frame", EH_ADDR, &eh},
					    {".debug_frame", 0, &dbg}};

			make_elf(&elf, 0, ns == 3 ? s3 : s3 + 1, ns);
		}
		assert_int_equal(build(&elf, &t, &st), 0);
		{
			/* A program it cannot run (reserved opcode, short
			 * operand, nesting over 64) loses only its FDE. */
			bool lost = k >= 2 && k <= sizeof(bad) / sizeof(*bad);
			const struct unwind_row *r =
				unwind_table_lookup(&t, 0x1010);

			assert_false(st.flags & UNWIND_ST_HOSTILE);
			assert_int_equal(st.fdes_skipped, lost ? 1 : 0);
			assert_int_equal(unwind_table_lookup(&t, 0x1001)
						 ->rule.cfa_offset,
					 16);
			assert_non_null(r);
			assert_int_equal(r->rule.cfa_offset, lost ? 32 : 8);
		}
		unwind_table_free(&t);
		free(eh.b);
		free(hdr.b);
		free(elf.b);
		free(ins.b);
	}
	free(dbg.b);
}

/* A well-formed search table is noted (the section is walked whole). */
static void test_good_hdr(void **state)
{
	struct buf eh = {0}, hdr = {0}, elf = {0};
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	size_t c, f;

	(void)state;
	c = cie(&eh, true, "zR");
	f = eh.n;
	fde(&eh, true, c, 0x1000, 0x10, "\x41\x0e\x10", 3);
	make_hdr(&hdr, 0x1000, f);
	{
		struct sect s[] = {{".eh_frame_hdr", HDR_ADDR, &hdr},
				   {".eh_frame", EH_ADDR, &eh}};

		make_elf(&elf, 0, s, 2);
	}
	assert_int_equal(build(&elf, &t, &st), 0);
	assert_false(st.flags & UNWIND_ST_HOSTILE);
	assert_true(st.flags & UNWIND_ST_EH_FRAME_HDR);
	assert_int_equal(t.nrows, 3);
	assert_int_equal(t.rows[1].rule.cfa_offset, 16);
	unwind_table_free(&t);
	free(eh.b);
	free(hdr.b);
	free(elf.b);
}

/* An entry point without FDE (ld.so's _start) is outermost. */
static void test_entry_stop(void **state)
{
	struct buf eh = {0}, elf = {0};
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	size_t c;

	(void)state;
	c = cie(&eh, true, "zR");
	fde(&eh, true, c, 0x1000, 0x40, "", 0);
	fde(&eh, true, c, 0x1080, 0x40, "", 0);
	{
		struct sect s[] = {{".eh_frame", EH_ADDR, &eh}};

		make_elf(&elf, 0x1040, s, 1);
	}
	assert_int_equal(build(&elf, &t, &st), 0);
	{
		const struct want w[] = {
			{0x1000, UNWIND_CFA_SP, 8, UNWIND_FP_SAME, 0},
			{0x1040, UNWIND_CFA_STOP, 0, UNWIND_FP_SAME, 0},
			{0x1080, UNWIND_CFA_SP, 8, UNWIND_FP_SAME, 0},
			{0x10c0, UNWIND_CFA_INVALID, 0, UNWIND_FP_SAME, 0},
		};

		expect_rows(&t, w, sizeof(w) / sizeof(*w));
	}
	assert_int_equal(t.entry, 0x1040);
	assert_true(st.flags & UNWIND_ST_ENTRY_STOP);
	unwind_table_free(&t);
	free(eh.b);
	free(elf.b);
}

/* .plt without FDE gets the PLT rule; overlapping FDEs: first wins. */
static void test_plt_fill_and_overlap(void **state)
{
	struct buf eh = {0}, plt = {0}, elf = {0};
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	size_t c;

	(void)state;
	c = cie(&eh, true, "zR");
	fde(&eh, true, c, 0x2000, 0x40, "\x41\x0e\x10", 3);
	fde(&eh, true, c, 0x2000, 0x20, "\x0e\x30", 2); /* hidden */
	fde(&eh, true, c, 0x2030, 0x20, "\x0e\x28", 2); /* tail shows */
	for (int i = 0; i < 0x30; i++)
		put8(&plt, 0x90);
	{
		struct sect s[] = {{".eh_frame", EH_ADDR, &eh},
				   {".plt", 0x1fd0, &plt}};

		make_elf(&elf, 0, s, 2);
	}
	assert_int_equal(build(&elf, &t, &st), 0);
	{
		const struct want w[] = {
			{0x1fd0, UNWIND_CFA_PLT, 0, UNWIND_FP_SAME, 0},
			{0x2000, UNWIND_CFA_SP, 8, UNWIND_FP_SAME, 0},
			{0x2001, UNWIND_CFA_SP, 16, UNWIND_FP_SAME, 0},
			{0x2040, UNWIND_CFA_SP, 40, UNWIND_FP_SAME, 0},
			{0x2050, UNWIND_CFA_INVALID, 0, UNWIND_FP_SAME, 0},
		};

		expect_rows(&t, w, sizeof(w) / sizeof(*w));
	}
	assert_int_equal(st.fdes_overlapping, 1);
	assert_true(st.flags & UNWIND_ST_PLT_FILLED);
	unwind_table_free(&t);
	free(eh.b);
	free(plt.b);
	free(elf.b);
}

/*
 * One FDE of 20000 advance/def_cfa_offset pairs: libdw re-ran the program
 * per row, O(n^2), and the work budget had to stop it; one pass builds all
 * its rows at once.
 */
static void test_work_budget(void **state)
{
	struct buf eh = {0}, ins = {0}, elf = {0};
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	struct timespec a, b;
	size_t c;

	(void)state;
	c = cie(&eh, true, "zR");
	for (int i = 0; i < 20000; i++) {
		put8(&ins, 0x41);
		put8(&ins, 0x0e);
		put8(&ins, (uint8_t)(16 + (i % 8) * 8));
	}
	fde(&eh, true, c, 0x1000, 0x10000, ins.b, ins.n);
	{
		struct sect s[] = {{".eh_frame", EH_ADDR, &eh}};

		make_elf(&elf, 0, s, 1);
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(build(&elf, &t, &st), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(b.tv_sec - a.tv_sec < 10);
	/* One pass: linear, well inside the budget. */
	assert_false(st.flags & UNWIND_ST_TRUNCATED);
	assert_int_equal(t.nrows, 20000 + 2);
	assert_int_equal(t.rows[20000].rule.cfa_offset, 16 + (19999 % 8) * 8);
	unwind_table_free(&t);

	/* Over the per-FDE program cap: that FDE is skipped. */
	free(eh.b);
	free(elf.b);
	memset(&eh, 0, sizeof(eh));
	c = cie(&eh, true, "zR");
	while (ins.n <= UNWIND_MAX_FDE_INSNS)
		put8(&ins, 0);
	fde(&eh, true, c, 0x1000, 0x10000, ins.b, ins.n);
	{
		struct sect s[] = {{".eh_frame", EH_ADDR, &eh}};

		make_elf(&elf, 0, s, 1);
	}
	assert_int_equal(build(&elf, &t, &st), 0);
	assert_int_equal(st.fdes_skipped, 1);
	assert_false(st.flags & UNWIND_ST_HOSTILE);
	assert_int_equal(t.nrows, 0);
	unwind_table_free(&t);
	free(eh.b);
	free(ins.b);
	free(elf.b);
}

/*
 * Every input that once crashed or hung the fuzzer must now finish, fast,
 * with the target's own invariant checks (it aborts on a violation).
 */
static void test_fuzz_regressions(void **state)
{
	char dir[512], path[1024];
	const char *slash = strrchr(__FILE__, '/');
	struct dirent *de;
	unsigned int n = 0;
	DIR *d;

	(void)state;
	snprintf(dir, sizeof(dir), "%.*s/../fuzz/regressions/cfi",
		 slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".");
	d = opendir(dir);
	if (!d)
		skip();
	while ((de = readdir(d))) {
		struct timespec a, b;
		uint8_t *buf;
		long len;
		FILE *f;

		if (de->d_name[0] == '.' || strstr(de->d_name, ".md"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "rb");
		assert_non_null(f);
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		rewind(f);
		buf = malloc(len > 0 ? (size_t)len : 1);
		assert_non_null(buf);
		assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
		fclose(f);
		clock_gettime(CLOCK_MONOTONIC, &a);
		LLVMFuzzerTestOneInput(buf, (size_t)len);
		clock_gettime(CLOCK_MONOTONIC, &b);
		assert_true(b.tv_sec - a.tv_sec < 5);
		free(buf);
		n++;
	}
	closedir(d);
	assert_true(n >= 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules_and_priority),
		cmocka_unit_test(test_hostile_sections),
		cmocka_unit_test(test_good_hdr),
		cmocka_unit_test(test_entry_stop),
		cmocka_unit_test(test_plt_fill_and_overlap),
		cmocka_unit_test(test_work_budget),
		cmocka_unit_test(test_fuzz_regressions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
