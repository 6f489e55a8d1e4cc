// SPDX-License-Identifier: Apache-2.0
/*
 * Unwind table builder: finds the CFI of one ELF file, asks cfi_entries.c
 * for FDE ranges and cfi_interp.c for their rows, then merges .eh_frame,
 * .debug_frame (only where .eh_frame is silent), PLT sections and the entry
 * point into one sorted, gap-free-by-INVALID row array.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <zlib.h>

#include "elf/go_pclntab.h"
#include "elf/section_pages.h"
#include "unwind/unwind_internal.h"
#include "elf/elf_guard.h"
#include "util/bsearch_le.h"
#include "util/grow.h"

/*
 * CFA program bytes the interpreter may run per file (each FDE's and its
 * CIE's, plus 64 per FDE run): a base plus a multiple of the CFI size,
 * capped. One pass per FDE needs about one unit per CFI byte, so only a
 * file whose FDEs are run many times (hostile .debug_frame gaps) gets near
 * it. The bound was sized for libdw's quadratic re-runs (gcc's cc1 needed
 * 378 M units there); kept as the outer bound on time.
 */
#define UNWIND_WORK_BASE	 (128ULL << 20)
#define UNWIND_WORK_PER_CFI_BYTE 256
#define UNWIND_WORK_MAX		 (2ULL << 30)

bool unwind_mem_charge(struct unwind_mem *m, uint64_t n)
{
	if (!m || !n)
		return true;
	if (m->refused || !mem_account_charge(m->acct, n)) {
		m->refused = true;
		return false;
	}
	m->charged += n;
	if (m->charged > m->peak)
		m->peak = m->charged;
	return true;
}

/* The same for scratch memory the caller can do without: a refusal does
 * not end the build. */
static bool unwind_mem_try_charge(struct unwind_mem *m, uint64_t n)
{
	bool refused = m && m->refused;

	if (refused)
		return false;
	if (unwind_mem_charge(m, n))
		return true;
	m->refused = false;
	return false;
}

void unwind_mem_uncharge(struct unwind_mem *m, uint64_t n)
{
	if (!m || !n)
		return;
	if (n > m->charged)
		n = m->charged;
	mem_account_uncharge(m->acct, n);
	m->charged -= n;
}

static bool spans_charge(void *mem, size_t bytes)
{
	return unwind_mem_charge(mem, bytes);
}

static void spans_uncharge(void *mem, size_t bytes)
{
	unwind_mem_uncharge(mem, bytes);
}

int unwind_spans_push(struct unwind_spans *s, const struct unwind_span *sp)
{
	const struct grow_charge c = {spans_charge, spans_uncharge, s->mem};
	int err;

	if (s->n >= s->max) {
		s->full = true;
		return 0;
	}
	err = grow_array(&s->v, &s->cap, s->n + 1, sizeof(*s->v), 1024, s->max,
			 &c);
	if (err)
		return err;
	s->v[s->n++] = *sp;
	return 0;
}

/* Sorted, merged address intervals already described by better CFI. */
struct cover {
	struct unwind_window *v;
	size_t n;
	uint64_t charged;
};

static int span_cmp(const void *a, const void *b)
{
	const struct unwind_span *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return 0;
}

/* The end of the ascending run of v starting at a. */
static size_t run_end(const struct unwind_span *v, size_t a, size_t n)
{
	while (++a < n && v[a].lo >= v[a - 1].lo)
		;
	return a;
}

/*
 * Spans arrive as a few ascending runs: one per section (.eh_frame,
 * .debug_frame) plus, in a Go binary, the functions of its pclntab.
 * qsort (glibc's merge sort is not adaptive) took 40% of building a Go
 * binary's table (containerd: 327k rows); merging the runs is one pass per
 * halving of their count. By hand: libc has no natural merge sort. Without
 * budget or memory for the merge's copy, qsort (which takes no budget).
 */
void unwind_spans_sort(struct unwind_spans *s)
{
	struct unwind_span *src = s->v, *dst, *tmp;
	size_t n = s->n, bytes = n * sizeof(*s->v), runs;

	if (run_end(s->v, 0, n) >= n)
		return;
	if (!unwind_mem_try_charge(s->mem, bytes)) {
		qsort(s->v, n, sizeof(*s->v), span_cmp);
		return;
	}
	tmp = malloc(bytes);
	if (!tmp) {
		unwind_mem_uncharge(s->mem, bytes);
		qsort(s->v, n, sizeof(*s->v), span_cmp);
		return;
	}
	dst = tmp;
	do {
		struct unwind_span *swap;

		runs = 0;
		for (size_t a = 0; a < n; runs++) {
			size_t m = run_end(src, a, n),
			       b = m < n ? run_end(src, m, n) : m;
			size_t i = a, j = m, k = a;

			while (i < m && j < b)
				dst[k++] = src[j].lo < src[i].lo ? src[j++]
								 : src[i++];
			while (i < m)
				dst[k++] = src[i++];
			while (j < b)
				dst[k++] = src[j++];
			a = b;
		}
		swap = src;
		src = dst;
		dst = swap;
	} while (runs > 1);
	if (src != s->v)
		memcpy(s->v, src, bytes);
	free(tmp);
	unwind_mem_uncharge(s->mem, bytes);
}

static int cover_build(struct unwind_spans *s, struct cover *c)
{
	free(c->v);
	unwind_mem_uncharge(s->mem, c->charged);
	c->charged = 0;
	c->v = NULL;
	c->n = 0;
	if (!s->n)
		return 0;
	unwind_spans_sort(s);
	if (!unwind_mem_charge(s->mem, s->n * sizeof(*c->v)))
		return -EDQUOT;
	c->charged = s->n * sizeof(*c->v);
	c->v = malloc(s->n * sizeof(*c->v));
	if (!c->v)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		if (c->n && s->v[i].lo <= c->v[c->n - 1].hi) {
			if (s->v[i].hi > c->v[c->n - 1].hi)
				c->v[c->n - 1].hi = s->v[i].hi;
			continue;
		}
		c->v[c->n].lo = s->v[i].lo;
		c->v[c->n].hi = s->v[i].hi;
		c->n++;
	}
	return 0;
}

/* First interval whose hi > addr (past every one that ends at or below
 * it). */
static size_t cover_find(const struct cover *c, uint64_t addr)
{
	return bsearch_le_count(c->v, c->n, sizeof(*c->v),
				offsetof(struct unwind_window, hi), addr);
}

/*
 * Next uncovered piece of [*pos, hi): returns false when none is left.
 * On true, [*plo, *phi) is uncovered and *pos is advanced past it.
 */
static bool cover_next_gap(const struct cover *c, uint64_t *pos, uint64_t hi,
			   uint64_t *plo, uint64_t *phi)
{
	while (*pos < hi) {
		size_t i = cover_find(c, *pos);

		if (i < c->n && c->v[i].lo <= *pos) {
			*pos = c->v[i].hi; /* inside a covered interval */
			continue;
		}
		*plo = *pos;
		*phi = hi;
		if (i < c->n && c->v[i].lo < hi)
			*phi = c->v[i].lo;
		*pos = *phi;
		return true;
	}
	return false;
}

struct sec {
	Elf_Scn *scn;
	uint64_t addr, size, offset;
	unsigned int count; /* sections of this name */
	bool nobits;
	bool compressed; /* SHF_COMPRESSED */
	bool gnu_zlib;	 /* .zdebug_* */
	uint32_t link;	 /* sh_link (.dynsym: its string table) */
};

struct elf_info {
	struct sec eh_frame, eh_frame_hdr, debug_frame;
	struct sec gopclntab, text;
	struct sec go_module, noptrdata; /* where Go's moduledata is */
	struct sec plt[3];		 /* .plt, .plt.sec, .plt.got */
	struct sec dynsym; /* aarch64 only: the vDSO's sigreturn symbol */
	struct unwind_window win;
	uint64_t entry;
	bool aarch64; /* EM_AARCH64 (else EM_X86_64) */
};

static void note_sec(struct sec *s, Elf_Scn *scn, const GElf_Shdr *sh)
{
	if (s->count++) /* duplicates: the caller decides */
		return;
	s->scn = scn;
	s->addr = sh->sh_addr;
	s->size = sh->sh_size;
	s->offset = sh->sh_offset;
	s->nobits = sh->sh_type == SHT_NOBITS;
	s->compressed = sh->sh_flags & SHF_COMPRESSED;
}

/*
 * Two sections of one name: which one the loader's unwinder uses is not
 * ours to guess (hostile or broken file); refuse both.
 */
static bool usable(const struct sec *s)
{
	return s->count == 1 && !s->nobits && s->size <= UNWIND_MAX_CFI_SECTION;
}

static int scan_elf(Elf *elf, struct elf_info *ei)
{
	static const char *const plt_names[3] = {".plt", ".plt.sec",
						 ".plt.got"};
	GElf_Ehdr eh;
	size_t phnum, shstrndx;
	Elf_Scn *scn = NULL;
	bool have_x = false;

	memset(ei, 0, sizeof(*ei));
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
		return -ENOEXEC;
	ei->entry = eh.e_entry;
	ei->aarch64 = eh.e_machine == EM_AARCH64;

	if (elf_getphdrnum(elf, &phnum))
		return -ENOEXEC;
	ei->win.lo = UINT64_MAX;
	for (size_t i = 0; i < phnum && i < 65536; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			return -ENOEXEC;
		if (ph.p_vaddr < ei->win.lo)
			ei->win.lo = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_memsz > ei->win.hi)
			ei->win.hi = ph.p_vaddr + ph.p_memsz;
		have_x = true;
	}
	if (!have_x)
		return -ENOEXEC;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".eh_frame"))
			note_sec(&ei->eh_frame, scn, &sh);
		else if (!strcmp(name, ".eh_frame_hdr"))
			note_sec(&ei->eh_frame_hdr, scn, &sh);
		else if (!strcmp(name, ".debug_frame"))
			note_sec(&ei->debug_frame, scn, &sh);
		else if (!strcmp(name, ".zdebug_frame")) {
			/* Same slot: libdw takes either, first one wins. */
			note_sec(&ei->debug_frame, scn, &sh);
			if (ei->debug_frame.count == 1)
				ei->debug_frame.gnu_zlib = true;
		} else if (!strcmp(name, ".gopclntab")) {
			note_sec(&ei->gopclntab, scn, &sh);
		} else if (!strcmp(name, ".go.module")) {
			note_sec(&ei->go_module, scn, &sh);
		} else if (!strcmp(name, ".noptrdata")) {
			note_sec(&ei->noptrdata, scn, &sh);
		} else if (!strcmp(name, ".text")) {
			note_sec(&ei->text, scn, &sh);
		} else if (ei->aarch64 && sh.sh_type == SHT_DYNSYM) {
			note_sec(&ei->dynsym, scn, &sh);
			ei->dynsym.link = sh.sh_link;
		}
		if ((sh.sh_flags & SHF_EXECINSTR) && sh.sh_type != SHT_NOBITS)
			for (int k = 0; k < 3; k++)
				if (!strcmp(name, plt_names[k]))
					note_sec(&ei->plt[k], scn, &sh);
	}
	return 0;
}

/*
 * The rule of a Go function's pc whose SP delta (pcsp) is v. amd64: CFA =
 * rsp + v + 8 (the call pushed the return address), and where the frame
 * is set up the caller's rbp sits at CFA - 16. arm64 (obj7.go's prologue,
 * runtime/traceback.go's usesLR): CFA = sp + v; with a frame (v > 0) the
 * return address is saved at 0(sp) and the caller's x29 at -8(sp)
 * (UNWIND_CFA_GO_FRAME); without (a frameless leaf, or before the
 * prologue's store) it is still in x30. In a function that writes sp
 * itself (fp_based: FuncFlagSPWrite, e.g. nanotime1 moves sp to g0's
 * stack around the vDSO call, systemstack and asmcgocall run a function
 * there) the frame is found from its frame pointer instead, which the
 * prologue sets and the sp write leaves alone: arm64's frame record at
 * x29 = the frame's sp - 8, amd64's rbp = CFA - 16.
 */
static struct unwind_rule go_rule(bool aarch64, bool fp_based, int64_t v)
{
	if (aarch64 && v > 0 && fp_based)
		return (struct unwind_rule){.cfa_base = UNWIND_CFA_FP_SWITCH,
					    .cfa_offset = (int32_t)v + 8,
					    .fp_rule = UNWIND_FP_CFA_OFFSET,
					    .fp_offset = (int16_t)(-v - 8),
					    .ra_rule = UNWIND_RA_AFTER_FP};
	if (aarch64 && v > 0)
		return (struct unwind_rule){.cfa_base = UNWIND_CFA_GO_FRAME,
					    .cfa_offset = (int32_t)v};
	if (aarch64)
		return (struct unwind_rule){.cfa_base = UNWIND_CFA_SP,
					    .ra_rule = UNWIND_RA_LR};
	if (v > 0 && fp_based)
		return (struct unwind_rule){.cfa_base = UNWIND_CFA_FP_SWITCH,
					    .cfa_offset = 16,
					    .fp_rule = UNWIND_FP_CFA_OFFSET,
					    .fp_offset = -16};
	return (struct unwind_rule){.cfa_base = UNWIND_CFA_SP,
				    .cfa_offset = (int32_t)v + 8,
				    .fp_rule = v > 0 ? UNWIND_FP_CFA_OFFSET
						     : UNWIND_FP_SAME,
				    .fp_offset = v > 0 ? -16 : 0};
}

/*
 * Where a function that writes sp (FuncFlagSPWrite) has its frame pointer
 * set: bytes after the start of its first SP delta above 0, or 0 if it
 * has none it can be found by. arm64: 8 (x30's and x29's stores, or
 * x29's store and x29 = sp - 8). amd64: `push rbp` (1 byte) at the entry,
 * then `mov rbp, rsp` (3), as Go 1.22 and 1.26 build it; another prologue
 * (sub, then rbp's store) keeps the SP rules, right until the sp write.
 */
static uint64_t go_fp_delay(bool aarch64, uint64_t entry, uint64_t lo,
			    int64_t v)
{
	if (aarch64)
		return 8;
	return lo == entry + 1 && v == 8 ? 3 : 0;
}

/* Go's signal restorer on x86_64 (the sa_restorer the runtime installs;
 * "runtime.sigreturn" before Go 1.16). arm64 Go installs none: the vDSO's
 * trampoline is the restorer there (add_sigreturn). */
static bool go_sigreturn_name(const char *name, size_t nlen)
{
	return (nlen == 28 &&
		!memcmp(name, "runtime.sigreturn__sigaction", 28)) ||
	       (nlen == 17 && !memcmp(name, "runtime.sigreturn", 17));
}

/*
 * Go's restorer as a SIGNAL row, so that a sample in a signal handler
 * (the runtime's preemption and profiling signals) is followed into the
 * code the signal interrupted. The row starts one byte early: the
 * handler's return address is the restorer's first byte and a return
 * address is looked up at pc - 1, which lies in the padding (int3) after
 * the function before: no row there, or, if that function's rows reach
 * the restorer, they give the byte up.
 */
static int push_go_sigreturn(struct unwind_spans *sp, uint64_t entry,
			     uint64_t end)
{
	struct unwind_span ps = {
		.lo = entry - 1, .hi = end, .rule.cfa_base = UNWIND_CFA_SIGNAL};

	if (sp->n && sp->v[sp->n - 1].hi == entry &&
	    sp->v[sp->n - 1].lo < entry - 1)
		sp->v[sp->n - 1].hi = entry - 1;
	return unwind_spans_push(sp, &ps);
}

static int push_go_stop(struct unwind_spans *sp, uint64_t entry, uint64_t end)
{
	struct unwind_span ps = {
		.lo = entry, .hi = end, .rule.cfa_base = UNWIND_CFA_STOP};

	return unwind_spans_push(sp, &ps);
}

/*
 * A function at the bottom of its stack (FuncFlagTopFrame, where Go's own
 * traceback ends: runtime.goexit under every goroutine, runtime.mstart
 * and runtime.rt0_go under each thread; by name in Go 1.16-1.17, whose
 * table has no flags), and runtime.mcall, the switch to g0's stack that
 * clears rbp there (a frame pointer of 0 cannot be told from one the walk
 * lost). Not runtime.sigtramp, which Go marks so too: the walk goes on
 * through the signal frame (push_go_sigreturn) into the code the signal
 * interrupted.
 */
static bool go_top_frame(const struct go_pclntab *t, uint64_t i,
			 const char *name, size_t nlen)
{
	uint8_t flag;

	if ((nlen == 14 && !memcmp(name, "runtime.goexit", 14)) ||
	    (nlen == 14 && !memcmp(name, "runtime.mstart", 14)) ||
	    (nlen == 13 && !memcmp(name, "runtime.mcall", 13)))
		return true;
	if (nlen == 16 && !memcmp(name, "runtime.sigtramp", 16))
		return false;
	return go_pclntab_flag(t, i, &flag) && (flag & GO_FUNC_FLAG_TOPFRAME);
}

/* moduledata.text where the table's header leaves it out (Go 1.26): in
 * a cgo binary the Go text starts after C code, not at .text's start.
 * Not found: .text's start, right for an internally linked binary. */
static int go_text_from_module(const struct elf_info *ei, struct go_pclntab *t,
			       struct unwind_mem *mem)
{
	const struct sec *m =
		ei->go_module.count == 1 ? &ei->go_module : &ei->noptrdata;
	Elf_Data *d;

	if (m->count != 1 || m->nobits || m->compressed ||
	    m->size > (64u << 20))
		return 0;
	if (!unwind_mem_charge(mem, m->size)) /* libelf's copy */
		return -EDQUOT;
	d = elf_getdata(m->scn, NULL);
	if (d && d->d_buf)
		(void)go_moduledata_text(t, ei->gopclntab.addr, d->d_buf,
					 d->d_size, ei->win.lo, ei->win.hi);
	return 0;
}

/* Each Go function's rows, where no CFI row is (add_go_functions). */
static int go_function_rows(const struct elf_info *ei,
			    const struct go_pclntab *tab,
			    const struct cover *cov, struct unwind_spans *sp,
			    bool *added, bool *entry_stopped)
{
	const struct go_pclntab t = *tab;
	int err;

	for (uint64_t i = 0; i < t.nfunc && !sp->full; i++) {
		uint64_t entry, end, off, lo, hi, pos;
		const char *name;
		size_t nlen;
		int64_t v;
		struct go_pcvalue it;
		struct unwind_span ps = {0};
		uint64_t fp_delay;
		uint8_t flag;
		bool spwrite, framed = false;

		if (!go_pclntab_func(&t, i, &entry, &end, &name, &nlen, 256) ||
		    entry < ei->win.lo || end > ei->win.hi)
			continue;
		/* Only where no CFI row is. */
		pos = entry;
		if (!cover_next_gap(cov, &pos, end, &lo, &hi) || lo != entry ||
		    hi != end)
			continue;
		/* The entry point's function (_rt0_amd64_linux) is outermost
		 * too. Its STOP row is its own, not the 4 KiB build() gives
		 * an entry point without rows: that would cover the Go
		 * functions after it, the runtime's syscall wrappers (futex,
		 * usleep, tgkill, nanotime1) and its signal handler, and end
		 * every sample taken in them after one frame. */
		bool entry_fn = ei->entry >= entry && ei->entry < end;

		if (go_top_frame(&t, i, name, nlen) || entry_fn) {
			*entry_stopped |= entry_fn;
			err = push_go_stop(sp, entry, end);
			if (err)
				return err;
			*added = true;
			continue;
		}
		if (!ei->aarch64 && entry > ei->win.lo &&
		    go_sigreturn_name(name, nlen)) {
			err = push_go_sigreturn(sp, entry, end);
			if (err)
				return err;
			*added = true;
			continue;
		}
		if (!go_pclntab_pcsp(&t, i, &off) || !off)
			continue;
		spwrite = go_pclntab_flag(&t, i, &flag) &&
			  (flag & GO_FUNC_FLAG_SPWRITE);
		fp_delay = 0;
		if (spwrite) {
			/* Its first frame, if any (a second pass: the
			 * table is a few bytes). */
			bool any = false;

			go_pcvalue_start(&it, &t, off, entry, end);
			while (go_pcvalue_next(&it, &lo, &hi, &v))
				if (v > 0) {
					any = true;
					fp_delay = go_fp_delay(ei->aarch64,
							       entry, lo, v);
					break;
				}
			if (!any) {
				/* A stack switch without a frame (morestack,
				 * gogo, clone): past the sp write nothing
				 * says where the caller is. Go's own
				 * traceback stops at such a function too. */
				err = push_go_stop(sp, entry, end);
				if (err)
					return err;
				*added = true;
				continue;
			}
		}
		go_pcvalue_start(&it, &t, off, entry, end);
		while (go_pcvalue_next(&it, &lo, &hi, &v)) {
			/* The prologue's first bytes with the frame have sp
			 * right and the frame pointer not yet set. */
			bool fp_based = spwrite && fp_delay;
			uint64_t fp_from = v > 0 && fp_based && !framed
						   ? lo + fp_delay
						   : lo;

			if (v < 0 || v > (1 << 24))
				break;
			if (fp_from > lo && fp_from < hi) {
				ps.lo = lo;
				ps.hi = fp_from;
				ps.rule = go_rule(ei->aarch64, false, v);
				err = unwind_spans_push(sp, &ps);
				if (err)
					return err;
			}
			ps.lo = fp_from < hi ? fp_from : lo;
			ps.hi = hi;
			ps.rule = go_rule(ei->aarch64, fp_based && fp_from < hi,
					  v);
			framed |= v > 0;
			err = unwind_spans_push(sp, &ps);
			if (err)
				return err;
			*added = true;
		}
	}
	return 0;
}

/*
 * Rows for Go functions that CFI does not cover (Go emits none; with
 * external linking only the C parts have it), from each function's SP
 * delta table in .gopclntab (go_rule). The bottoms of Go's stacks
 * (go_top_frame) and the entry point's function end the walk.
 */
static int add_go_functions(const struct elf_info *ei,
			    const struct elf_source *src,
			    const struct cover *cov, struct unwind_spans *sp,
			    bool *added, bool *entry_stopped)
{
	const struct sec *g = &ei->gopclntab;
	struct section_pages pages;
	struct go_pclntab t;
	int err = 0;

	if (g->count != 1 || g->nobits || g->compressed ||
	    g->size > GO_PCLNTAB_MAX_BYTES || g->offset > src->size ||
	    g->size > src->size - g->offset)
		return 0;
	/* Read through a few pages, not copied (a Go daemon's table is
	 * tens of MB): functions and their SP deltas go mostly forward. */
	if (!unwind_mem_charge(sp->mem, SECTION_PAGES_BYTES))
		return -EDQUOT;
	if (section_pages_init(&pages, src, g->offset, g->size))
		return -ENOMEM;
	if (!go_pclntab_open_pages(&t, &pages, ei->text.addr)) {
		if (!t.text_in_header)
			err = go_text_from_module(ei, &t, sp->mem);
		if (!err)
			err = go_function_rows(ei, &t, cov, sp, added,
					       entry_stopped);
	}
	section_pages_free(&pages);
	return err;
}

/*
 * The arm64 vDSO's signal trampoline as a SIGNAL row, where no CFI covers
 * it: the kernel's vDSO has had no .eh_frame since 5.x (6.12's has none),
 * so only its exported `__kernel_rt_sigreturn` says where the trampoline
 * is. The row starts one instruction early, at the nop the kernel puts
 * there for exactly this: a return address is looked up at pc - 1.
 */
#define SIGRETURN_NAME	 "__kernel_rt_sigreturn"
#define DYNSYM_MAX_BYTES (64u << 10)

static int add_sigreturn(Elf *elf, const struct elf_info *ei,
			 const struct cover *cov, struct unwind_spans *sp,
			 bool *added)
{
	const struct sec *s = &ei->dynsym;
	Elf_Data *d;
	size_t n;

	if (s->count != 1 || s->nobits || s->compressed ||
	    s->size > DYNSYM_MAX_BYTES)
		return 0;
	if (!unwind_mem_charge(sp->mem, s->size)) /* libelf's copy */
		return -EDQUOT;
	d = elf_getdata(s->scn, NULL);
	if (!d || !d->d_buf)
		return 0;
	n = d->d_size / sizeof(Elf64_Sym);
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		uint64_t lo, hi, pos, glo, ghi;

		if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, s->link, sym.st_name);
		if (!name || strcmp(name, SIGRETURN_NAME))
			continue;
		lo = sym.st_value - 4;
		hi = sym.st_value + (sym.st_size ? sym.st_size : 8);
		if (sym.st_value < ei->win.lo + 4 || hi > ei->win.hi ||
		    hi < sym.st_value || sym.st_size > 64)
			return 0;
		pos = lo;
		while (cover_next_gap(cov, &pos, hi, &glo, &ghi)) {
			struct unwind_span ps = {.lo = glo,
						 .hi = ghi,
						 .rule.cfa_base =
							 UNWIND_CFA_SIGNAL};
			int err = unwind_spans_push(sp, &ps);

			if (err)
				return err;
			*added = true;
		}
		return 0;
	}
	return 0;
}

/* Rows for every FDE of one section, skipping what `cov` already has. */
static int add_section(const struct cfi_sec *sec, const struct elf_info *ei,
		       const struct cover *cov, struct unwind_spans *sp,
		       struct unwind_table_stats *st)
{
	int r = 0;

	struct unwind_fde *f = NULL;
	size_t n = 0;
	uint64_t cursor = 0, total0 = st->fdes_total,
		 skipped0 = st->fdes_skipped;
	int err;

	err = unwind_cfi_collect(sec, &ei->win, &f, &n, st, sp->mem);
	if (err == -E2BIG) {
		/* Over UNWIND_MAX_FDES: all its FDEs count as skipped. */
		st->flags |= UNWIND_ST_TRUNCATED;
		st->fdes_skipped = skipped0 + (st->fdes_total - total0);
		return 0;
	}
	if (err)
		return err;
	for (size_t i = 0; i < n && !sp->full; i++) {
		uint64_t pos = f[i].lo > cursor ? f[i].lo : cursor;
		uint64_t plo, phi;
		bool used = false, bad = false;

		if (st->cancel && atomic_load(st->cancel)) {
			r = -ECANCELED;
			break;
		}

		if (pos >= f[i].hi) {
			st->fdes_overlapping++;
			continue;
		}
		while (cover_next_gap(cov, &pos, f[i].hi, &plo, &phi)) {
			r = unwind_cfi_interp_rows(sec, &f[i], plo, phi, sp);
			if (r < 0)
				break;
			if (r > 0)
				bad = true;
			else
				used = true;
		}
		if (r < 0)
			break;
		if (bad) {
			st->fdes_skipped++;
			st->flags |= UNWIND_ST_CFI_CORRUPT;
		} else if (!used)
			st->fdes_overlapping++;
		else if (!sec->eh)
			st->fdes_debug_frame++;
		if (!bad)
			cursor = f[i].hi;
	}
	free(f);
	unwind_mem_uncharge(sp->mem, n * sizeof(*f));
	return r < 0 ? r : 0;
}

/*
 * Decompressed copy of a SHF_COMPRESSED or .zdebug section, or NULL.
 * Done here with a bounded zlib call instead of elf_compress(), which would
 * write into the (const) memory image.
 */
static void *inflate_sec(const Elf_Data *raw, bool gnu, size_t *outlen,
			 struct unwind_mem *mem)
{
	const uint8_t *p = raw->d_buf;
	uint64_t size = 0;
	size_t hdr;
	uLongf len;
	void *buf;

	if (gnu) {
		hdr = 12;
		if (raw->d_size < hdr || memcmp(p, "ZLIB", 4))
			return NULL;
		for (int i = 4; i < 12; i++)
			size = size << 8 | p[i]; /* big-endian */
	} else {
		Elf64_Chdr ch;

		hdr = sizeof(ch);
		if (raw->d_size < hdr)
			return NULL;
		memcpy(&ch, p, sizeof(ch));
		if (ch.ch_type != ELFCOMPRESS_ZLIB)
			return NULL;
		size = ch.ch_size;
	}
	if (!size || size > UNWIND_MAX_CFI_SECTION ||
	    !unwind_mem_charge(mem, size))
		return NULL;
	buf = malloc(size);
	if (!buf)
		return NULL;
	len = (uLongf)size;
	if (uncompress(buf, &len, p + hdr, (uLong)(raw->d_size - hdr)) !=
		    Z_OK ||
	    len != size) {
		free(buf);
		return NULL;
	}
	*outlen = size;
	return buf;
}

/* .debug_frame rows where `cov` (from .eh_frame) has none. */
static int add_debug_frame(const struct elf_info *ei, const struct cover *cov,
			   struct unwind_spans *sp,
			   struct unwind_table_stats *st)
{
	const struct sec *s = &ei->debug_frame;
	Elf_Data *raw;
	void *inflated = NULL;
	struct cfi_sec sec = {.eh = false, .aarch64 = ei->aarch64};
	int err;

	/* libelf copies the section in (ELF_C_READ). */
	if (!unwind_mem_charge(sp->mem, s->size))
		return -EDQUOT;
	raw = elf_rawdata(s->scn, NULL);
	if (!raw || !raw->d_buf || raw->d_size != s->size) {
		st->flags |= UNWIND_ST_CFI_CORRUPT;
		return 0;
	}
	sec.buf = raw->d_buf;
	sec.size = raw->d_size;
	if (s->compressed || s->gnu_zlib) {
		inflated = inflate_sec(raw, s->gnu_zlib, &sec.size, sp->mem);
		if (!inflated) {
			st->flags |= UNWIND_ST_CFI_CORRUPT;
			return 0;
		}
		sec.buf = inflated;
	}
	st->bytes_of_cfi += sec.size;
	st->flags |= UNWIND_ST_DEBUG_FRAME;
	err = add_section(&sec, ei, cov, sp, st);
	free(inflated);
	if (inflated)
		unwind_mem_uncharge(sp->mem, sec.size);
	return err;
}

static bool rule_eq(const struct unwind_rule *a, const struct unwind_rule *b)
{
	return a->cfa_base == b->cfa_base && a->cfa_offset == b->cfa_offset &&
	       a->fp_rule == b->fp_rule && a->fp_offset == b->fp_offset &&
	       a->ra_rule == b->ra_rule;
}

/* One pass over the sorted spans: writes rows (or, rows NULL, counts
 * them) up to cap. */
struct row_pass {
	struct unwind_row *rows; /* NULL: count only */
	size_t n, cap;
	struct unwind_row last; /* valid if n */
};

static int emit_row(struct row_pass *w, uint64_t pc,
		    const struct unwind_span *s)
{
	struct unwind_row r;

	if (w->n >= w->cap)
		return -1;
	r.pc = pc;
	r.rule = s->rule;
	if (w->rows)
		w->rows[w->n] = r;
	w->last = r;
	w->n++;
	return 0;
}

/* Sorted spans -> rows; INVALID rows for holes and after the end.
 * Returns true when cap cut the table short. */
static bool row_pass(const struct unwind_spans *sp, struct row_pass *w)
{
	static const struct unwind_span invalid = {0};
	uint64_t prev_hi = 0;
	bool any = false;

	for (size_t i = 0; i < sp->n; i++) {
		struct unwind_span s = sp->v[i];

		if (any && s.lo < prev_hi)
			s.lo = prev_hi; /* defensive: spans never overlap */
		if (s.lo >= s.hi)
			continue;
		if (any && s.lo > prev_hi &&
		    w->last.rule.cfa_base != UNWIND_CFA_INVALID &&
		    emit_row(w, prev_hi, &invalid))
			return true;
		if (!w->n || !rule_eq(&w->last.rule, &s.rule)) {
			if (emit_row(w, s.lo, &s))
				return true;
		}
		prev_hi = s.hi;
		any = true;
	}
	return any && w->last.rule.cfa_base != UNWIND_CFA_INVALID &&
	       emit_row(w, prev_hi, &invalid);
}

/* Rows counted first, then allocated exactly (and charged): twice the
 * spans, the bound, would double the table's peak memory. */
static int finalize(struct unwind_spans *sp, struct unwind_table *t,
		    struct unwind_table_stats *st)
{
	struct row_pass w = {.cap = UNWIND_MAX_ROWS};
	size_t cap;

	unwind_spans_sort(sp);
	row_pass(sp, &w);
	cap = w.n ? w.n : 1;
	if (!unwind_mem_charge(sp->mem, cap * sizeof(*t->rows)))
		return -EDQUOT;
	t->rows = malloc(cap * sizeof(*t->rows));
	if (!t->rows)
		return -ENOMEM;
	t->charged = cap * sizeof(*t->rows);
	memset(&w, 0, sizeof(w));
	w.rows = t->rows;
	w.cap = cap;
	if (row_pass(sp, &w)) {
		/* Keep a valid table: the last row must be INVALID. */
		st->flags |= UNWIND_ST_TRUNCATED;
		t->rows[w.n - 1].rule =
			(struct unwind_rule){.cfa_base = UNWIND_CFA_INVALID,
					     .fp_rule = UNWIND_FP_SAME};
	}
	t->nrows = w.n;
	for (size_t i = 0; i < t->nrows; i++) {
		switch (t->rows[i].rule.cfa_base) {
		case UNWIND_CFA_INVALID:
			st->rows_invalid++;
			break;
		case UNWIND_CFA_PLT:
			st->rows_plt++;
			break;
		case UNWIND_CFA_SIGNAL:
			st->rows_signal++;
			break;
		case UNWIND_CFA_STOP:
			st->rows_stop++;
			break;
		}
	}
	st->rows = t->nrows;
	return 0;
}

static int build(Elf *elf, const struct elf_source *src,
		 struct unwind_table *out, struct unwind_table_stats *st,
		 struct unwind_mem *mem)
{
	struct unwind_spans sp = {.max = UNWIND_MAX_ROWS / 2,
				  .work_max = UNWIND_WORK_BASE,
				  .mem = mem};
	struct cover cov = {0};
	struct elf_info ei;
	bool have_cfi = false, entry_stopped = false;
	int err;

	err = scan_elf(elf, &ei);
	if (err)
		return err;
	out->entry = ei.entry;
	sp.work_max += UNWIND_WORK_PER_CFI_BYTE *
		       (ei.eh_frame.size + ei.debug_frame.size);
	if (sp.work_max > UNWIND_WORK_MAX)
		sp.work_max = UNWIND_WORK_MAX;
	if (ei.eh_frame_hdr.scn)
		st->flags |= UNWIND_ST_EH_FRAME_HDR;

	/* .eh_frame: the loaded, authoritative CFI. Its search table
	 * (.eh_frame_hdr) is not needed: the section is walked whole. */
	if (usable(&ei.eh_frame)) {
		Elf_Data *d;

		/* libelf copies the section in (ELF_C_READ). */
		if (!unwind_mem_charge(mem, ei.eh_frame.size)) {
			err = -EDQUOT;
			goto out;
		}
		d = elf_rawdata(ei.eh_frame.scn, NULL);
		have_cfi = true;
		st->bytes_of_cfi += ei.eh_frame.size;
		if (d && d->d_buf && d->d_size == ei.eh_frame.size) {
			struct cfi_sec sec = {d->d_buf, d->d_size,
					      ei.eh_frame.addr, true,
					      ei.aarch64};

			st->flags |= UNWIND_ST_EH_FRAME;
			err = add_section(&sec, &ei, &cov, &sp, st);
			if (err)
				goto out;
		} else {
			st->flags |= UNWIND_ST_CFI_CORRUPT;
		}
	} else if (ei.eh_frame.count && !ei.eh_frame.nobits) {
		st->flags |= UNWIND_ST_CFI_CORRUPT | UNWIND_ST_HOSTILE;
	}

	/* .debug_frame: only where .eh_frame said nothing. */
	if (ei.debug_frame.count > 1 || ei.debug_frame.nobits) {
		if (!ei.debug_frame.nobits)
			st->flags |= UNWIND_ST_CFI_CORRUPT | UNWIND_ST_HOSTILE;
	} else if (ei.debug_frame.scn && !sp.full) {
		have_cfi = true;
		if (ei.debug_frame.size > UNWIND_MAX_CFI_SECTION) {
			st->flags |= UNWIND_ST_TRUNCATED;
		} else {
			err = cover_build(&sp, &cov);
			if (!err)
				err = add_debug_frame(&ei, &cov, &sp, st);
			if (err)
				goto out;
		}
	}

	err = cover_build(&sp, &cov);
	if (err)
		goto out;

	/* PLT sections without FDEs (.plt.got and .plt.sec usually). */
	for (int k = 0; k < 3; k++) {
		const struct sec *s = &ei.plt[k];
		uint64_t pos = s->addr, plo, phi;
		struct unwind_span ps = {.rule.cfa_base = UNWIND_CFA_PLT};

		/* aarch64 PLT entries branch without touching sp or x30.
		 * (The lazy PLT0 pushes {x16, x30} before it jumps to the
		 * resolver: a sample in its last instructions gets the
		 * caller's sp 16 bytes low, its return address right.) */
		if (ei.aarch64)
			ps.rule =
				(struct unwind_rule){.cfa_base = UNWIND_CFA_SP,
						     .ra_rule = UNWIND_RA_LR};
		if (!s->scn || s->addr < ei.win.lo || s->addr > ei.win.hi ||
		    s->size > ei.win.hi - s->addr)
			continue;
		while (cover_next_gap(&cov, &pos, s->addr + s->size, &plo,
				      &phi)) {
			ps.lo = plo;
			ps.hi = phi;
			err = unwind_spans_push(&sp, &ps);
			if (err)
				goto out;
			st->flags |= UNWIND_ST_PLT_FILLED;
		}
	}

	err = add_go_functions(&ei, src, &cov, &sp, &have_cfi, &entry_stopped);
	if (err)
		goto out;
	if (ei.aarch64) {
		err = add_sigreturn(elf, &ei, &cov, &sp, &have_cfi);
		if (err)
			goto out;
	}

	/* Entry point without CFI (ld.so's _start): it is outermost. */
	if (ei.entry && ei.entry >= ei.win.lo && ei.entry < ei.win.hi &&
	    !entry_stopped) {
		size_t i = cover_find(&cov, ei.entry);
		uint64_t end = ei.entry + UNWIND_MAX_ENTRY_STOP;
		struct unwind_span ps = {.rule.cfa_base = UNWIND_CFA_STOP};

		if (end > ei.win.hi || end < ei.entry)
			end = ei.win.hi;
		if (!(i < cov.n && cov.v[i].lo <= ei.entry)) {
			if (i < cov.n && cov.v[i].lo < end)
				end = cov.v[i].lo;
			ps.lo = ei.entry;
			ps.hi = end;
			/* An overlap with a PLT span (hostile) is clipped by
			 * finalize(). */
			err = unwind_spans_push(&sp, &ps);
			if (err)
				goto out;
			st->flags |= UNWIND_ST_ENTRY_STOP;
		}
	}

	if (!have_cfi) {
		/* No CFI section (e.g. section headers stripped): tell the
		 * caller to use frame pointers rather than a table of
		 * INVALID. */
		err = -ENOENT;
		goto out;
	}
	if (sp.full)
		st->flags |= UNWIND_ST_TRUNCATED;
	/* The cover is not needed for the rows: give it back first. */
	free(cov.v);
	cov.v = NULL;
	unwind_mem_uncharge(mem, cov.charged);
	cov.charged = 0;
	err = finalize(&sp, out, st);
out:
	free(cov.v);
	free(sp.v);
	if (mem->refused && err != -ECANCELED)
		err = -EDQUOT;
	if (err) {
		/* Its charge is in mem's, given back by table_done(). */
		free(out->rows);
		out->rows = NULL;
		out->nrows = 0;
		out->charged = 0;
	}
	return err;
}

static void table_init(struct unwind_table *out, struct unwind_table_stats *st,
		       struct unwind_mem *mem)
{
	const atomic_bool *cancel = st->cancel;
	struct mem_account *acct = st->acct;

	memset(out, 0, sizeof(*out));
	memset(st, 0, sizeof(*st));
	st->cancel = cancel;
	st->acct = acct;
	memset(mem, 0, sizeof(*mem));
	mem->acct = acct;
	out->acct = acct;
	elf_version(EV_CURRENT);
}

/* After a build: only the table's rows stay charged. */
static int table_done(struct unwind_table *out, struct unwind_table_stats *st,
		      struct unwind_mem *mem, int err)
{
	st->mem_peak = mem->peak;
	if (err == -EDQUOT)
		st->flags |= UNWIND_ST_OVER_BUDGET;
	mem_account_uncharge(mem->acct, mem->charged - out->charged);
	return err;
}

/* libelf allocates per announced section: refuse a section table that
 * does not hold up before it sees the file (no section table is no CFI).
 * What libelf will read of the headers is charged to mem. */
static int guard(int fd, const void *buf, size_t len, struct unwind_mem *mem)
{
	struct elf_source src;
	struct elf_guard g;
	int err;

	if (fd >= 0) {
		err = elf_source_from_fd(fd, &src);
		if (err)
			return err;
	} else {
		elf_source_from_mem(buf, len, &src);
	}
	err = elf_guard_check(&src, &g);
	if (err < 0)
		return err;
	elf_guard_free(&g);
	if (err == ELF_GUARD_SECTIONS_HOSTILE)
		return -ENOEXEC;
	return unwind_mem_charge(mem, g.header_bytes) ? 0 : -EDQUOT;
}

int unwind_table_build_fd(int fd, struct unwind_table *out,
			  struct unwind_table_stats *st)
{
	struct unwind_table_stats local = {0};
	struct elf_source src;
	struct unwind_mem mem;
	struct stat sb;
	Elf *elf;
	int err;

	if (!st)
		st = &local;
	table_init(out, st, &mem);
	if (fstat(fd, &sb))
		return -errno;
	if (!S_ISREG(sb.st_mode))
		return -ENOEXEC;
	if ((uint64_t)sb.st_size > UNWIND_MAX_FILE_SIZE)
		return -EFBIG;
	err = guard(fd, NULL, 0, &mem);
	if (err)
		return table_done(out, st, &mem, err);
	/* ELF_C_READ: pread into private buffers, no mmap, so a file
	 * truncated under us gives a read error rather than SIGBUS. */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return table_done(out, st, &mem, -ENOEXEC);
	err = elf_source_from_fd(fd, &src);
	if (!err)
		err = build(elf, &src, out, st, &mem);
	elf_end(elf);
	return table_done(out, st, &mem, err);
}

int unwind_table_build_mem(const void *buf, size_t len,
			   struct unwind_table *out,
			   struct unwind_table_stats *st)
{
	struct unwind_table_stats local = {0};
	struct elf_source src;
	struct unwind_mem mem;
	Elf *elf;
	int err;

	if (!st)
		st = &local;
	table_init(out, st, &mem);
	if (!buf)
		return -EINVAL;
	if (len > UNWIND_MAX_FILE_SIZE)
		return -EFBIG;
	err = guard(-1, buf, len, &mem);
	if (err)
		return table_done(out, st, &mem, err);
	/* libelf takes char * but only reads a little-endian native image,
	 * which scan_elf() insists on before any section is touched. */
	elf = elf_memory((char *)(uintptr_t)buf, len);
	if (!elf)
		return table_done(out, st, &mem, -ENOEXEC);
	elf_source_from_mem(buf, len, &src);
	err = build(elf, &src, out, st, &mem);
	elf_end(elf);
	return table_done(out, st, &mem, err);
}

const struct unwind_row *unwind_table_lookup(const struct unwind_table *t,
					     uint64_t pc)
{
	size_t n;

	if (!t)
		return NULL;
	n = bsearch_le_count(t->rows, t->nrows, sizeof(*t->rows),
			     offsetof(struct unwind_row, pc), pc);
	return n ? &t->rows[n - 1] : NULL;
}

void unwind_table_free(struct unwind_table *t)
{
	if (!t)
		return;
	free(t->rows);
	mem_account_uncharge(t->acct, t->charged);
	t->charged = 0;
	t->rows = NULL;
	t->nrows = 0;
}
