// SPDX-License-Identifier: Apache-2.0
#include "elf/go_pclntab.h"
#include "elf/section_pages.h"
#include "util/bsearch_le.h"

#include <errno.h>
#include <string.h>

static uint64_t rd(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* n bytes at off, if they lie inside the table: in memory, or read
 * through the page cache (valid until the next access). */
static const uint8_t *bytes(const struct go_pclntab *t, uint64_t off, size_t n)
{
	if (off > t->len || t->len - off < n)
		return NULL;
	return t->pages ? section_pages_get(t->pages, off, n) : t->data + off;
}

/* The little-endian word of n bytes at off, if it lies inside the table. */
static bool word(const struct go_pclntab *t, uint64_t off, unsigned n,
		 uint64_t *v)
{
	const uint8_t *p = bytes(t, off, n);

	if (!p)
		return false;
	*v = rd(p, n);
	return true;
}

static int open_header(struct go_pclntab *t, uint64_t text_start)
{
	uint64_t magic, hdr, w[8], len = t->len;
	const uint8_t *head;
	unsigned nw;

	if (len < 16 || len > GO_PCLNTAB_MAX_BYTES || !(head = bytes(t, 0, 8)))
		return -ENOEXEC;
	magic = rd(head, 4);
	if (head[4] || head[5])
		return -ENOEXEC;
	t->quantum = head[6];
	t->ptrsize = head[7];
	if ((t->quantum != 1 && t->quantum != 2 && t->quantum != 4) ||
	    t->ptrsize != 8)
		return -ENOEXEC;
	switch (magic) {
	case 0xfffffffa:
		t->version = 116;
		nw = 7; /* nfunc nfiles funcname cu filetab pctab pcln */
		break;
	case 0xfffffff0:
		t->version = 118;
		nw = 8; /* nfunc nfiles text funcname cu filetab pctab pcln */
		break;
	case 0xfffffff1:
		t->version = 120;
		nw = 8;
		break;
	default:
		return -ENOEXEC;
	}
	hdr = 8;
	for (unsigned i = 0; i < nw; i++)
		if (!word(t, hdr + 8 * i, 8, &w[i]))
			return -ENOEXEC;
	t->nfunc = w[0];
	if (t->version == 116) {
		t->text_start = text_start;
		t->funcname = w[2];
		t->cutab = w[3];
		t->filetab = w[4];
		t->pctab = w[5];
		t->pcln = w[6];
	} else {
		t->text_start = w[2] ? w[2] : text_start;
		t->text_in_header = w[2] != 0;
		t->funcname = w[3];
		t->cutab = w[4];
		t->filetab = w[5];
		t->pctab = w[6];
		t->pcln = w[7];
	}
	if (t->nfunc > GO_PCLNTAB_MAX_FUNCS || t->funcname >= len ||
	    t->cutab > len || t->filetab > len || t->pctab > len ||
	    t->pcln >= len)
		return -ENOEXEC;
	/* The function table: nfunc + 1 pairs (the last entry is the end
	 * of the text), of two words (1.16-1.17) or two uint32s. */
	if ((t->len - t->pcln) / (t->version == 116 ? 16 : 8) < t->nfunc + 1)
		return -ENOEXEC;
	return 0;
}

int go_pclntab_open(struct go_pclntab *t, const uint8_t *data, size_t len,
		    uint64_t text_start)
{
	memset(t, 0, sizeof(*t));
	t->data = data;
	t->len = len;
	return open_header(t, text_start);
}

int go_pclntab_open_pages(struct go_pclntab *t, struct section_pages *pages,
			  uint64_t text_start)
{
	memset(t, 0, sizeof(*t));
	t->pages = pages;
	t->len = pages->len;
	return open_header(t, text_start);
}

static bool functab_entry(const struct go_pclntab *t, uint64_t i,
			  uint64_t *entry, uint64_t *funcoff)
{
	if (t->version == 116) {
		uint64_t off = t->pcln + 16 * i;

		return word(t, off, 8, entry) && word(t, off + 8, 8, funcoff);
	} else {
		uint64_t off = t->pcln + 8 * i, e;

		if (!word(t, off, 4, &e) || !word(t, off + 4, 4, funcoff))
			return false;
		*entry = t->text_start + e;
		return true;
	}
}

bool go_pclntab_func(const struct go_pclntab *t, uint64_t i, uint64_t *entry,
		     uint64_t *end, const char **name, size_t *name_len,
		     size_t max_name)
{
	uint64_t funcoff, next_off, fn, nameoff, at;
	const char *s;
	size_t n;

	if (i >= t->nfunc || !functab_entry(t, i, entry, &funcoff) ||
	    !functab_entry(t, i + 1, end, &next_off) || *end <= *entry)
		return false;
	/* _func starts with its entry (a word, or a uint32 offset from
	 * text_start), then the int32 offset of its name. */
	fn = t->pcln + funcoff;
	if (funcoff >= t->len || fn >= t->len)
		return false;
	if (!word(t, fn + (t->version == 116 ? 8 : 4), 4, &nameoff) ||
	    nameoff >= t->len - t->funcname)
		return false;
	at = t->funcname + nameoff;
	if (t->pages) {
		/* Copied out: no NUL within max_name fails as below. */
		s = section_pages_string(t->pages, at,
					 max_name < SECTION_STRING_MAX
						 ? max_name
						 : SECTION_STRING_MAX,
					 &n);
		if (!s)
			return false;
	} else {
		s = (const char *)t->data + at;
		n = strnlen(s, t->len - at < max_name ? t->len - at : max_name);
	}
	if (!n || n == max_name || at + n >= t->len)
		return false;
	*name = s;
	*name_len = n;
	return true;
}

bool go_pclntab_pcsp(const struct go_pclntab *t, uint64_t i, uint64_t *off)
{
	uint64_t entry, funcoff, fn, pcsp;

	if (i >= t->nfunc || !functab_entry(t, i, &entry, &funcoff) ||
	    funcoff >= t->len)
		return false;
	/* 1.16-1.17: entry word, nameoff, args, deferreturn, pcsp;
	 * 1.18 on: entryoff, nameoff, args, deferreturn, pcsp. */
	fn = t->pcln + funcoff;
	if (fn >= t->len ||
	    !word(t, fn + (t->version == 116 ? 20 : 16), 4, &pcsp))
		return false;
	if (!pcsp) {
		*off = 0;
		return true;
	}
	if (pcsp >= t->len - t->pctab)
		return false;
	*off = t->pctab + pcsp;
	return true;
}

bool go_pclntab_flag(const struct go_pclntab *t, uint64_t i, uint8_t *flag)
{
	uint64_t entry, funcoff, v;

	/* _func: ..., cuOffset u32 @32, then 1.18-1.19: funcID @36, flag
	 * @37; 1.20 on: startLine i32 @36, funcID @40, flag @41. */
	if (t->version == 116 || i >= t->nfunc ||
	    !functab_entry(t, i, &entry, &funcoff) || funcoff >= t->len ||
	    !word(t, t->pcln + funcoff + (t->version == 118 ? 37 : 41), 1, &v))
		return false;
	*flag = (uint8_t)v;
	return true;
}

void go_pcvalue_start(struct go_pcvalue *it, const struct go_pclntab *t,
		      uint64_t off, uint64_t entry, uint64_t end)
{
	memset(it, 0, sizeof(*it));
	it->t = t;
	it->off = off;
	it->pc = entry;
	it->end = end;
	it->val = -1;
	it->first = true;
}

static bool uvarint(struct go_pcvalue *it, uint64_t *v)
{
	uint64_t x = 0, left = it->off < it->t->len ? it->t->len - it->off : 0;
	/* A varint is at most 10 bytes: one access for all of them. */
	size_t n = left < 10 ? (size_t)left : 10;
	const uint8_t *p = n ? bytes(it->t, it->off, n) : NULL;

	if (!p)
		return false;
	for (size_t i = 0; i < n; i++) {
		x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) {
			it->off += i + 1;
			*v = x;
			return true;
		}
	}
	return false;
}

bool go_pcvalue_next(struct go_pcvalue *it, uint64_t *lo, uint64_t *hi,
		     int64_t *v)
{
	uint64_t uv, pcd;

	if (!it->off || it->pc >= it->end || ++it->steps > GO_PCVALUE_MAX_STEPS)
		return false;
	if (!uvarint(it, &uv) || (!uv && !it->first))
		return false;
	it->first = false;
	/* zig-zag, low bit the sign; Go's values are int32, so a delta or
	 * value outside that range is garbage */
	if (uv >> 33)
		return false;
	it->val += (uv & 1) ? -(int64_t)(uv >> 1) - 1 : (int64_t)(uv >> 1);
	if (it->val < INT32_MIN || it->val > INT32_MAX)
		return false;
	if (!uvarint(it, &pcd) || !pcd ||
	    pcd > (it->end - it->pc) / it->t->quantum)
		return false;
	*lo = it->pc;
	it->pc += pcd * it->t->quantum;
	*hi = it->pc;
	*v = it->val;
	return true;
}

/* Function i's entry pc, read from the image with its bounds checked. */
static bool functab_key(const void *ctx, size_t i, uint64_t *entry)
{
	uint64_t funcoff;

	return functab_entry(ctx, i, entry, &funcoff);
}

bool go_pclntab_find(const struct go_pclntab *t, uint64_t pc, uint64_t *i)
{
	size_t n;

	if (!bsearch_le_count_fn(t->nfunc, pc, functab_key, t, &n) || !n)
		return false;
	*i = n - 1;
	return true;
}

/* The value at pc of the pc-value table at pctab offset off, which covers
 * the function [entry, end). */
static bool pcvalue_at(const struct go_pclntab *t, uint64_t off, uint64_t entry,
		       uint64_t end, uint64_t pc, int64_t *v)
{
	struct go_pcvalue it;
	uint64_t lo, hi;
	int64_t val;

	go_pcvalue_start(&it, t, t->pctab + off, entry, end);
	while (go_pcvalue_next(&it, &lo, &hi, &val))
		if (pc >= lo && pc < hi) {
			*v = val;
			return true;
		}
	return false;
}

/* The value of the pc-value table at byte offset `field` of function i's
 * _func at pc. */
static bool func_value(const struct go_pclntab *t, uint64_t i, unsigned field,
		       uint64_t pc, int64_t *v)
{
	uint64_t entry, end, funcoff, off;

	if (!functab_entry(t, i, &entry, &funcoff) ||
	    !functab_entry(t, i + 1, &end, &off) || pc < entry || pc >= end ||
	    funcoff >= t->len || !word(t, t->pcln + funcoff + field, 4, &off) ||
	    !off || off >= t->len - t->pctab)
		return false;
	return pcvalue_at(t, off, entry, end, pc, v);
}

bool go_pclntab_line(const struct go_pclntab *t, uint64_t i, uint64_t pc,
		     const char **file, uint32_t *line)
{
	/* _func fields: pcfile, pcln, cuOffset */
	unsigned base = t->version == 116 ? 4 : 0;
	uint64_t funcoff, entry, cu, fileoff, at;
	int64_t fileno, ln;
	size_t n;

	if (t->pages) /* returns pointers into the table: memory only */
		return false;
	if (!func_value(t, i, base + 20, pc, &fileno) ||
	    !func_value(t, i, base + 24, pc, &ln) || fileno < 0 || ln < 0 ||
	    ln > UINT32_MAX || !functab_entry(t, i, &entry, &funcoff) ||
	    !word(t, t->pcln + funcoff + base + 32, 4, &cu))
		return false;
	/* cutab holds uint32 offsets into filetab per (unit, file) */
	if (!word(t, t->cutab + 4 * (cu + (uint64_t)fileno), 4, &fileoff) ||
	    fileoff == UINT32_MAX || fileoff >= t->len - t->filetab)
		return false;
	at = t->filetab + fileoff;
	n = strnlen((const char *)t->data + at, t->len - at);
	if (!n || at + n >= t->len)
		return false;
	*file = (const char *)t->data + at;
	*line = (uint32_t)ln;
	return true;
}

/* The word at `at` of moduledata (Go 1.18 on): the one whose first word
 * is the table's own address and second its function-name table's. */
static bool moduledata_word(const struct go_pclntab *t, uint64_t tab_addr,
			    const uint8_t *noptrdata, size_t len, size_t at,
			    uint64_t *out)
{
	if (t->version < 118 || len < at + 8)
		return false;
	for (size_t off = 0; off + at + 8 <= len; off += 8) {
		if (rd(noptrdata + off, 8) != tab_addr ||
		    rd(noptrdata + off + 8, 8) != tab_addr + t->funcname)
			continue;
		*out = rd(noptrdata + off + at, 8);
		return *out != 0;
	}
	return false;
}

bool go_moduledata_gofunc(const struct go_pclntab *t, uint64_t tab_addr,
			  const uint8_t *noptrdata, size_t len,
			  uint64_t *gofunc)
{
	/* moduledata: pcHeader, funcnametab (slice) ... gofunc at 320
	 * (Go 1.20 on, with covctrs) or 304 (1.18, 1.19). */
	return moduledata_word(t, tab_addr, noptrdata, len,
			       t->version >= 120 ? 320 : 304, gofunc);
}

bool go_moduledata_text(struct go_pclntab *t, uint64_t tab_addr,
			const uint8_t *noptrdata, size_t len, uint64_t lo,
			uint64_t hi)
{
	/* pcHeader, six slices (funcnametab ... ftab), findfunctab, minpc,
	 * maxpc, then text at 176 (Go 1.18 on). */
	uint64_t text;

	if (!moduledata_word(t, tab_addr, noptrdata, len, 176, &text) ||
	    text < lo || text >= hi)
		return false;
	t->text_start = text;
	return true;
}

/* The pc-value table at pctab offset `off` of function i, at pc. */
static bool table_value(const struct go_pclntab *t, uint64_t i, uint64_t off,
			uint64_t pc, int64_t *v)
{
	uint64_t entry, end, funcoff;

	if (!off || off >= t->len - t->pctab ||
	    !functab_entry(t, i, &entry, &funcoff) ||
	    !functab_entry(t, i + 1, &end, &funcoff))
		return false;
	return pcvalue_at(t, off, entry, end, pc, v);
}

int go_pclntab_inlined(const struct go_pclntab *t, uint64_t i, uint64_t pc,
		       const uint8_t *gofunc, size_t gofunc_len,
		       struct go_inlined *out, unsigned max, const char **file,
		       uint32_t *line)
{
	/* _func header: 40 bytes (1.18, 1.19) or 44 (1.20 on, startLine);
	 * npcdata at 28, nfuncdata in its last byte; then pcdata[npcdata]
	 * and funcdata[nfuncdata] as uint32s. */
	unsigned hdr = t->version >= 120 ? 44 : 40;
	uint64_t entry, funcoff, fn, npcdata, nfuncdata, inl_pc, inl_tree;
	int64_t ix;
	int n = 0;

	if (!go_pclntab_line(t, i, pc, file, line))
		return -1;
	if (t->version < 118 || !gofunc ||
	    !functab_entry(t, i, &entry, &funcoff))
		return 0;
	fn = t->pcln + funcoff;
	if (!word(t, fn + 28, 4, &npcdata) ||
	    !word(t, fn + hdr - 1, 1, &nfuncdata) || npcdata <= 2 ||
	    nfuncdata <= 3 || npcdata > 256 ||
	    !word(t, fn + hdr + 4 * 2, 4, &inl_pc) ||
	    !word(t, fn + hdr + 4 * npcdata + 4 * 3, 4, &inl_tree) ||
	    inl_tree == UINT32_MAX || inl_tree >= gofunc_len)
		return 0;
	while (n < (int)max && table_value(t, i, inl_pc, pc, &ix) && ix >= 0) {
		uint64_t at = inl_tree + 16 * (uint64_t)ix, nameoff, parent;
		const char *name;
		size_t nl;

		if (at + 16 > gofunc_len)
			break;
		nameoff = rd(gofunc + at + 4, 4);
		parent = rd(gofunc + at + 8, 4);
		if (nameoff >= t->len - t->funcname)
			break;
		name = (const char *)t->data + t->funcname + nameoff;
		nl = strnlen(name, t->len - t->funcname - nameoff);
		if (!nl || t->funcname + nameoff + nl >= t->len)
			break;
		out[n].name = name;
		out[n].file = *file;
		out[n].line = *line;
		n++;
		/* The call site: an instruction of the caller at parentPc. */
		pc = entry + (uint32_t)parent;
		if (!go_pclntab_line(t, i, pc, file, line))
			return -1;
	}
	return n;
}
