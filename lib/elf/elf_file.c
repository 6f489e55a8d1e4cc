// SPDX-License-Identifier: Apache-2.0
#include "elf/elf_file.h"
#include "elf/elf_guard.h"
#include "elf/go_pclntab.h"
#include "elf/section_pages.h"
#include "elf/plt_symbols.h"
#include "util/bsearch_le.h"
#include "util/front_coding.h"
#include "util/grow.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <nettle/sha2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char hexdig[] = "0123456789abcdef";

static void to_hex(const unsigned char *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hexdig[b[i] >> 4];
		out[2 * i + 1] = hexdig[b[i] & 15];
	}
	out[2 * n] = '\0';
}

bool elf_symbols_charge(struct elf_symbols *s, uint64_t n)
{
	if (!mem_account_charge(s->acct, n)) {
		s->over_budget = true;
		return false;
	}
	s->charged += n;
	return true;
}

void elf_symbols_uncharge(struct elf_symbols *s, uint64_t n)
{
	mem_account_uncharge(s->acct, n);
	s->charged -= n;
}

/* Growth of the names, charged first. */
static bool names_charge(void *ctx, size_t new_cap, size_t grow)
{
	(void)new_cap;
	return elf_symbols_charge(ctx, grow);
}

static void names_uncharge(void *ctx, size_t grow)
{
	elf_symbols_uncharge(ctx, grow);
}

/* Room for n more bytes of names and a NUL. */
static int names_reserve(struct elf_symbols *s, size_t n)
{
	const struct str_arena_growth g = {4096, names_charge, names_uncharge,
					   s};

	return str_arena_reserve(&s->names, n + 1, &g);
}

static int push_name(struct elf_symbols *s, const char *name, size_t n,
		     uint32_t *off)
{
	int err = names_reserve(s, n);

	if (err)
		return err;
	*off = str_arena_append(&s->names, name, n);
	return 0;
}

static bool syms_charge(void *s, size_t bytes)
{
	return elf_symbols_charge(s, bytes);
}

static void syms_uncharge(void *s, size_t bytes)
{
	elf_symbols_uncharge(s, bytes);
}

/* Room for one more symbol, charged before it is allocated. */
static int grow_syms(struct elf_symbols *s, size_t *cap)
{
	const struct grow_charge c = {syms_charge, syms_uncharge, s};
	int err;

	if (s->n < *cap)
		return 0;
	if (s->n >= ELF_FILE_MAX_SYMBOLS)
		return -E2BIG;
	err = grow_array(&s->syms, cap, s->n + 1, sizeof(*s->syms), 256,
			 SIZE_MAX / sizeof(*s->syms), &c);
	return err == -EDQUOT ? -E2BIG : err;
}

/* A symbol whose name is already in s->names at `name`. */
static int add_sym_at(struct elf_symbols *s, size_t *cap, uint64_t addr,
		      uint64_t size, uint32_t flags, uint32_t name)
{
	int err = grow_syms(s, cap);

	if (err)
		return err;
	s->syms[s->n].addr = addr;
	s->syms[s->n].size = size;
	s->syms[s->n].name = name;
	s->syms[s->n].flags = flags & 0xff;
	s->syms[s->n].seq = (uint32_t)s->n;
	s->n++;
	return 0;
}

static int add_sym(struct elf_symbols *s, size_t *cap, uint64_t addr,
		   uint64_t size, uint32_t flags, const char *name, size_t nlen)
{
	uint32_t off;
	int err = grow_syms(s, cap);

	if (!err)
		err = push_name(s, name, nlen, &off);
	if (err)
		return err;
	return add_sym_at(s, cap, addr, size, flags, off);
}

struct plt_ctx {
	struct elf_symbols *s;
	size_t *cap;
};

static int add_plt(void *ctx, uint64_t addr, uint64_t size, const char *name,
		   size_t len)
{
	struct plt_ctx *c = ctx;

	return add_sym(c->s, c->cap, addr, size, 0, name, len);
}

/* Sort by address; on ties the earlier-read symbol (.symtab before .dynsym,
 * global before local within a table is not guaranteed) keeps its place. */
static int cmp_sym(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Append the first `len` bytes of a string table to s->names (one read,
 * charged), NUL-terminated. *base gets where it starts.
 */
static int read_strtab(struct elf_symbols *s, const struct elf_source *src,
		       const GElf_Shdr *str, uint64_t len, uint32_t *base)
{
	int err;

	if (len > str->sh_size)
		len = str->sh_size;
	err = names_reserve(s, len);
	if (err)
		return err;
	err = elf_source_read(src, str->sh_offset, s->names.buf + s->names.len,
			      len);
	if (err)
		return err == -EIO ? -ENOEXEC : err;
	s->names.buf[s->names.len + len] = '\0';
	*base = (uint32_t)s->names.len;
	s->names.len += len + 1;
	return 0;
}

/*
 * One symbol table, streamed through a fixed buffer (never whole in
 * memory: a sparse file can announce 256 MiB of it). Function symbols are
 * kept with their name offset; the string table is read afterwards, only
 * as far as the last name used, and each name is checked there.
 */
static int read_symtab(Elf *elf, const struct elf_source *src,
		       const GElf_Shdr *sh, struct elf_symbols *s, size_t *cap)
{
	Elf64_Sym *chunk;
	GElf_Shdr str;
	Elf_Scn *strscn;
	uint64_t count, max_name = 0;
	size_t first = s->n, out;
	uint32_t base = 0;
	int err = 0;

	if (sh->sh_entsize != sizeof(Elf64_Sym) ||
	    sh->sh_size > ELF_FILE_MAX_SYMTAB_BYTES ||
	    sh->sh_offset > src->size ||
	    sh->sh_size > src->size - sh->sh_offset)
		return -ENOEXEC;
	strscn = elf_getscn(elf, sh->sh_link);
	if (!strscn || !gelf_getshdr(strscn, &str) ||
	    str.sh_type != SHT_STRTAB || str.sh_offset > src->size ||
	    str.sh_size > src->size - str.sh_offset)
		return -ENOEXEC;
	chunk = malloc(ELF_GUARD_CHUNK);
	if (!chunk)
		return -ENOMEM;
	count = sh->sh_size / sizeof(Elf64_Sym);
	for (uint64_t i = 0; i < count && !err;) {
		uint64_t k = count - i;

		if (k > ELF_GUARD_CHUNK / sizeof(Elf64_Sym))
			k = ELF_GUARD_CHUNK / sizeof(Elf64_Sym);
		err = elf_source_read(src, sh->sh_offset + i * sizeof(*chunk),
				      chunk, k * sizeof(*chunk));
		if (err) {
			err = err == -EIO ? -ENOEXEC : err;
			break;
		}
		for (uint64_t j = 0; j < k; j++, i++) {
			const Elf64_Sym *sym = &chunk[j];
			unsigned type = ELF64_ST_TYPE(sym->st_info);

			if (!i || (type != STT_FUNC && type != STT_GNU_IFUNC))
				continue;
			if (sym->st_shndx == SHN_UNDEF || !sym->st_value)
				continue;
			if (!sym->st_name || sym->st_name >= str.sh_size) {
				s->skipped_symbols++;
				continue;
			}
			err = add_sym_at(s, cap, sym->st_value, sym->st_size, 0,
					 sym->st_name);
			if (err)
				break;
			if (sym->st_name > max_name)
				max_name = sym->st_name;
		}
	}
	free(chunk);
	if (!err && s->n > first)
		err = read_strtab(s, src, &str, max_name + ELF_FILE_MAX_NAME,
				  &base);
	if (err) {
		s->n = first;
		return err;
	}
	/* Names must end inside the table, within ELF_FILE_MAX_NAME. */
	out = first;
	for (size_t i = first; i < s->n; i++) {
		const char *name = s->names.buf + base + s->syms[i].name;
		size_t room = s->names.len - (base + s->syms[i].name);
		size_t nlen = strnlen(name, room < ELF_FILE_MAX_NAME
						    ? room
						    : ELF_FILE_MAX_NAME);

		/* The terminator read_strtab adds ends every table: a name
		 * running into it was not terminated in the file. */
		if (!nlen || nlen == ELF_FILE_MAX_NAME ||
		    base + s->syms[i].name + nlen + 1 == s->names.len) {
			s->skipped_symbols++;
			continue;
		}
		s->syms[out] = s->syms[i];
		s->syms[out++].name += base;
	}
	s->n = out;
	return 0;
}

/*
 * Go functions from .gopclntab: a stripped Go binary has no .symtab, but
 * the runtime's own table names every function. Read after the symbol
 * tables; where both name an address, the two entries merge. libelf keeps
 * the section until elf_end: charged as scratch.
 */
/* The bytes of go:func.* from moduledata.gofunc to the end of its
 * section, where Go 1.18 on keeps the inline trees. */
/* The section moduledata is in: .go.module (Go 1.26 gives it one of its
 * own), else .noptrdata. */
static Elf_Data *module_section(Elf *elf, size_t shstrndx)
{
	Elf_Scn *scn = NULL;
	Elf_Data *d = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS &&
		    (n = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    (!strcmp(n, ".go.module") ||
		     (!strcmp(n, ".noptrdata") && !d)) &&
		    sh.sh_size <= (64u << 20))
			d = elf_getdata(scn, NULL);
	}
	return d && d->d_buf ? d : NULL;
}

static void read_gofunc(Elf *elf, size_t shstrndx, const struct go_pclntab *t,
			uint64_t tab_addr, struct elf_symbols *s)
{
	Elf_Scn *scn = NULL;
	Elf_Data *d = module_section(elf, shstrndx);
	uint64_t gofunc = 0;

	if (!d ||
	    !go_moduledata_gofunc(t, tab_addr, d->d_buf, d->d_size, &gofunc))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    gofunc < sh.sh_addr || gofunc - sh.sh_addr >= sh.sh_size)
			continue;
		if (sh.sh_offset > UINT64_MAX - sh.sh_size)
			return;
		s->go_func_size = sh.sh_size - (gofunc - sh.sh_addr);
		if (s->go_func_size > ELF_FILE_MAX_GO_TAB)
			s->go_func_size = ELF_FILE_MAX_GO_TAB;
		s->go_func_off = sh.sh_offset + (gofunc - sh.sh_addr);
		return;
	}
}

static int read_gopclntab(Elf *elf, size_t shstrndx,
			  const struct elf_source *src, const GElf_Shdr *sh,
			  uint64_t text_start, struct elf_symbols *s,
			  size_t *cap, uint64_t *scratch)
{
	struct section_pages pages;
	struct go_pclntab t;
	int err = 0;

	if (sh->sh_type != SHT_PROGBITS || sh->sh_size > GO_PCLNTAB_MAX_BYTES ||
	    (sh->sh_flags & SHF_COMPRESSED) || sh->sh_offset > src->size ||
	    sh->sh_size > src->size - sh->sh_offset)
		return -ENOEXEC;
	/* Read through a few pages, not copied: a Go daemon's table is
	 * tens of MB, and the names are copied out one by one anyway. */
	if (!elf_symbols_charge(s, SECTION_PAGES_BYTES))
		return -E2BIG;
	*scratch += SECTION_PAGES_BYTES;
	if (section_pages_init(&pages, src, sh->sh_offset, sh->sh_size))
		return -ENOMEM;
	if (go_pclntab_open_pages(&t, &pages, text_start)) {
		section_pages_free(&pages);
		return -ENOEXEC;
	}
	if (!t.text_in_header) {
		/* Go 1.26 leaves it out; a cgo binary's Go text starts
		 * after C code, not at .text's start. */
		Elf_Data *m = module_section(elf, shstrndx);

		if (m && go_moduledata_text(&t, sh->sh_addr, m->d_buf,
					    m->d_size, text_start, UINT64_MAX))
			text_start = t.text_start;
	}
	for (uint64_t i = 0; i < t.nfunc && !err; i++) {
		uint64_t entry, end;
		const char *name;
		size_t nlen;

		if (!go_pclntab_func(&t, i, &entry, &end, &name, &nlen,
				     ELF_FILE_MAX_NAME)) {
			s->skipped_symbols++;
			continue;
		}
		err = add_sym(s, cap, entry, end - entry, ELF_SYM_GO, name,
			      nlen);
	}
	/* Read again for source lines when a Go frame needs them; without
	 * them Go frames still have names. */
	if (!err && sh->sh_size <= ELF_FILE_MAX_GO_TAB) {
		s->go_tab_off = sh->sh_offset;
		s->go_tab_size = sh->sh_size;
		s->go_text = text_start;
		read_gofunc(elf, shstrndx, &t, sh->sh_addr, s);
	}
	section_pages_free(&pages);
	return err;
}

/* n bytes at off of src into a new buffer, charged to s. */
static uint8_t *read_charged(struct elf_symbols *s,
			     const struct elf_source *src, uint64_t off,
			     uint64_t n)
{
	uint8_t *buf;

	if (!n || off > src->size || n > src->size - off ||
	    !mem_account_charge(s->acct, n))
		return NULL;
	buf = malloc(n);
	if (buf && !elf_source_read(src, off, buf, n)) {
		s->charged += n;
		return buf;
	}
	free(buf);
	mem_account_uncharge(s->acct, n);
	return NULL;
}

int elf_symbols_load_go_lines(struct elf_symbols *s, int fd)
{
	struct elf_source src;
	struct go_pclntab t;
	int err;

	if (!elf_symbols_go_lines_due(s))
		return s->go_tab ? 0 : -ENOENT;
	s->go_lines_tried = true;
	err = elf_source_from_fd(fd, &src);
	if (err)
		return err;
	s->go_tab = read_charged(s, &src, s->go_tab_off, s->go_tab_size);
	if (!s->go_tab)
		return -EIO;
	s->go_tab_len = s->go_tab_size;
	/* The file changed since it was loaded: no lines from it. */
	if (go_pclntab_open(&t, s->go_tab, s->go_tab_len, s->go_text)) {
		free(s->go_tab);
		s->go_tab = NULL;
		elf_symbols_uncharge(s, s->go_tab_len);
		s->go_tab_len = 0;
		return -ENOEXEC;
	}
	s->go_func = read_charged(s, &src, s->go_func_off, s->go_func_size);
	s->go_func_len = s->go_func ? s->go_func_size : 0;
	return 0;
}

/* .gnu_debuglink: a file name (NUL, padding to 4) and a CRC-32. Only a
 * plain name is kept: a path could lead anywhere. */
static void read_debuglink(Elf_Scn *scn, const GElf_Shdr *sh,
			   struct elf_symbols *s)
{
	Elf_Data *d;
	size_t n;
	const char *p;

	if (sh->sh_type != SHT_PROGBITS || sh->sh_size > 4096)
		return;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || d->d_size < 8)
		return;
	p = d->d_buf;
	n = strnlen(p, d->d_size);
	if (!n || n >= sizeof(s->debuglink) || ((n + 4) & ~3u) + 4 > d->d_size)
		return;
	for (size_t i = 0; i < n; i++)
		if (p[i] == '/' || p[i] < 0x21 || p[i] > 0x7e)
			return;
	if (!strcmp(p, ".") || !strcmp(p, ".."))
		return;
	memcpy(s->debuglink, p, n + 1);
	memcpy(&s->debuglink_crc, p + ((n + 4) & ~3u), 4);
}

/* Go's build id is text ("actionID/contentID"); keep it if printable. */
static void go_build_id(const unsigned char *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x21 || p[i] > 0x7e)
			return;
	memcpy(out, p, n);
	out[n] = '\0';
}

/* Note header and padding, by hand: the notes are read even when the
 * section table is hostile and libelf is not opened at all. */
static void build_ids_from_notes(const unsigned char *d, size_t len,
				 uint64_t align, struct elf_symbols *s)
{
	uint64_t off = 0, a = align == 8 ? 8 : 4;

	while (off + 12 <= len) {
		uint32_t hdr[3];
		uint64_t name_off, desc_off;

		memcpy(hdr, d + off, sizeof(hdr));
		name_off = off + 12;
		desc_off = name_off + (((uint64_t)hdr[0] + a - 1) & ~(a - 1));
		if (desc_off > len || hdr[1] > len - desc_off)
			return;
		if (hdr[2] == NT_GNU_BUILD_ID && hdr[0] == 4 &&
		    !memcmp(d + name_off, "GNU", 4) && hdr[1] > 0 &&
		    hdr[1] <= ELF_FILE_MAX_BUILD_ID) {
			to_hex(d + desc_off, hdr[1], s->build_id);
		} else if (hdr[2] == 4 /* Go build id */ &&
			   (hdr[0] == 3 || hdr[0] == 4) &&
			   !memcmp(d + name_off, "Go", 3) && hdr[1] > 0 &&
			   hdr[1] <= ELF_FILE_MAX_GO_BUILD_ID) {
			go_build_id(d + desc_off, hdr[1], s->go_build_id);
		}
		off = desc_off + (((uint64_t)hdr[1] + a - 1) & ~(a - 1));
	}
}

static void read_build_id(const struct elf_source *src,
			  const struct elf_guard *g, struct elf_symbols *s)
{
	uint64_t total = 0;

	for (size_t i = 0; i < g->phnum; i++) {
		const Elf64_Phdr *ph = &g->ph[i];
		unsigned char *d;

		if (ph->p_type != PT_NOTE || !ph->p_filesz ||
		    ph->p_filesz > ELF_GUARD_MAX_NOTE_BYTES ||
		    total + ph->p_filesz > ELF_GUARD_MAX_NOTES_TOTAL)
			continue;
		total += ph->p_filesz;
		d = malloc(ph->p_filesz);
		if (!d)
			return;
		if (!elf_source_read(src, ph->p_offset, d, ph->p_filesz))
			build_ids_from_notes(d, ph->p_filesz, ph->p_align, s);
		free(d);
	}
}

/*
 * A section table the ELF header announces but that does not hold up: it
 * cannot be read, or the section-name table it names is not a string
 * table. (No section table at all, e_shoff and e_shnum 0, is only a
 * stripped file.)
 */
static bool sections_broken(Elf *elf, const GElf_Ehdr *eh)
{
	size_t shstrndx;
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (!eh->e_shoff && !eh->e_shnum)
		return false;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return true;
	if (shstrndx == SHN_UNDEF)
		return false;
	scn = elf_getscn(elf, shstrndx);
	return !scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB;
}

/* s's names become buf (len bytes used, cap charged already), the old
 * buffer given back. */
static void replace_names(struct elf_symbols *s, char *buf, size_t len,
			  size_t cap, bool packed)
{
	elf_symbols_uncharge(s, s->names.cap);
	free(s->names.buf);
	s->names.buf = buf;
	s->names.len = len;
	s->names.cap = cap;
	s->names_packed = packed;
}

/*
 * Keep only the names of the symbols kept, front-coded in address order.
 * The string tables were read whole up to their last function name: they
 * also hold the names of data objects, of .dynsym entries that repeat
 * .symtab's and of anything the merge by address dropped (about half of a
 * big binary's string bytes). The new buffer is charged before it is
 * allocated; without room, or if it would not be smaller, the tables stay
 * as they are (correct, only larger).
 */
static void pack_names(struct elf_symbols *s)
{
	/* Symbols may share names (a string table can point many at one
	 * long name: 1.1M symbols at 4 KiB names took 1.2 s to size here):
	 * reading them one by one stops at twice the table's bytes, and
	 * sizing as soon as packing is no longer smaller. */
	size_t total = 0, at = 0, scanned = 0,
	       scan_max = 2 * s->names.len + (64u << 10);
	const char *prev = NULL;
	char *buf;

	if (!s->n || s->names_packed)
		return;
	for (size_t i = 0; i < s->n; i++) {
		const char *name = s->names.buf + s->syms[i].name;
		size_t len = strnlen(name, ELF_SYM_NAME_BUF);

		scanned += len;
		if (len >= ELF_SYM_NAME_BUF || scanned > scan_max)
			return;
		total += front_coding_size(prev, name,
					   i % FRONT_CODING_BLOCK == 0);
		if (total >= s->names.len)
			return;
		prev = name;
	}
	if (total > UINT32_MAX || !mem_account_charge(s->acct, total))
		return;
	buf = malloc(total);
	if (!buf) {
		mem_account_uncharge(s->acct, total);
		return;
	}
	s->charged += total;
	prev = NULL;
	for (size_t i = 0; i < s->n; i++) {
		const char *name = s->names.buf + s->syms[i].name;

		s->syms[i].name = (uint32_t)at;
		at += front_coding_put(buf + at, prev, name,
				       i % FRONT_CODING_BLOCK == 0);
		prev = name;
	}
	replace_names(s, buf, at, total, true);
}

static int load_sections(Elf *elf, const struct elf_source *src,
			 struct elf_symbols *s, uint64_t *scratch)
{
	size_t shstrndx, cap = 0, out = 0;
	bool have_symtab = false, have_dynsym = false;
	uint64_t text_start = 0;
	size_t before;
	unsigned dwarf_seen = 0;
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL, *gopclntab = NULL;
	int err;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    gelf_getclass(elf) != ELFCLASS64)
		return -ENOEXEC;
	s->skipped_symbols += tls_symbols_scan(elf, &s->tls, s->acct);

	/* Section headers are optional for the loader, so a file whose
	 * section table is broken still loads and runs: keep loads and
	 * build id, report no symbols (and the file as malformed). */
	if (sections_broken(elf, &eh)) {
		s->skipped_symbols++;
		return 0;
	}
	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn)) && !s->over_budget) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		/* elf_guard bounded the section-name table (4 MiB). */
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".text"))
			text_start = sh.sh_addr;
		else if (name && !strcmp(name, ".gopclntab"))
			gopclntab = scn;
		else if (name && (!strcmp(name, ".debug_info") ||
				  !strcmp(name, ".debug_line")))
			dwarf_seen |= !strcmp(name, ".debug_info") ? 1 : 2;
		else if (name && !strcmp(name, ".gnu_debuglink"))
			read_debuglink(scn, &sh, s);
		else if (name && !strcmp(name, ".gnu_debugdata") &&
			 sh.sh_type == SHT_PROGBITS) {
			s->debugdata_off = sh.sh_offset;
			s->debugdata_size = sh.sh_size;
		}
		/* One of each, as the gABI says: a second one is the same
		 * bytes announced again. */
		if (sh.sh_type == SHT_SYMTAB) {
			if (have_symtab) {
				s->skipped_symbols++;
				continue;
			}
			have_symtab = true;
		} else if (sh.sh_type == SHT_DYNSYM) {
			if (have_dynsym) {
				s->skipped_symbols++;
				continue;
			}
			have_dynsym = true;
		} else {
			continue;
		}
		before = s->n;
		err = read_symtab(elf, src, &sh, s, &cap);
		if (sh.sh_type == SHT_SYMTAB && s->n > before)
			s->has_symtab = true;
		if (err == -ENOMEM)
			return err;
		if (err && !s->over_budget)
			s->skipped_symbols++;
	}
	s->has_dwarf = dwarf_seen == 3;
	{
		struct plt_ctx pc = {s, &cap};

		err = plt_symbols_scan(elf, shstrndx, add_plt, &pc);
		if (err == -ENOMEM)
			return err;
	}
	if (gopclntab && !s->over_budget) {
		GElf_Shdr sh;

		err = gelf_getshdr(gopclntab, &sh)
			      ? read_gopclntab(elf, shstrndx, src, &sh,
					       text_start, s, &cap, scratch)
			      : -ENOEXEC;
		if (err == -ENOMEM)
			return err;
		if (err && !s->over_budget)
			s->skipped_symbols++;
	}
	if (s->over_budget) {
		elf_symbols_drop(s);
		*scratch = 0; /* dropped with the rest */
		return 0;
	}
	if (!s->n)
		return 0;
	qsort(s->syms, s->n, sizeof(*s->syms), cmp_sym);
	/* One symbol per address: .symtab and .dynsym repeat each other. */
	for (size_t i = 0; i < s->n; i++) {
		if (out && s->syms[out - 1].addr == s->syms[i].addr) {
			if (!s->syms[out - 1].size)
				s->syms[out - 1].size = s->syms[i].size;
			s->syms[out - 1].flags |= s->syms[i].flags;
			continue;
		}
		s->syms[out++] = s->syms[i];
	}
	s->n = out;
	if (cap > out) {
		struct elf_sym *nv = realloc(s->syms, out * sizeof(*nv));

		if (nv) {
			s->syms = nv;
			elf_symbols_uncharge(s, (cap - out) * sizeof(*nv));
		}
	}
	pack_names(s);
	return 0;
}

static int load_source(const struct elf_source *src, struct elf_symbols *s)
{
	struct elf_guard g;
	uint64_t scratch = 0;
	Elf *elf;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	err = elf_guard_check(src, &g);
	if (err < 0)
		return err;
	for (size_t i = 0; i < g.phnum; i++) {
		const Elf64_Phdr *ph = &g.ph[i];

		if (ph->p_type != PT_LOAD || s->nloads >= ELF_FILE_MAX_LOADS)
			continue;
		s->loads[s->nloads].offset = ph->p_offset;
		s->loads[s->nloads].vaddr = ph->p_vaddr;
		s->loads[s->nloads].filesz = ph->p_filesz;
		s->loads[s->nloads].flags = ph->p_flags;
		s->nloads++;
	}
	read_build_id(src, &g, s);
	elf_guard_free(&g);
	/* The section table would make libelf allocate what the file does
	 * not contain: segments only (the file counts as malformed). */
	if (err == ELF_GUARD_SECTIONS_HOSTILE) {
		s->skipped_symbols++;
		return 0;
	}
	/* ELF_C_READ: pread into private buffers, no mmap. elf_memory takes
	 * a non-const pointer but does not write with ELF_C_READ. */
	elf = src->mem ? elf_memory((char *)(uintptr_t)src->mem, src->size)
		       : elf_begin(src->fd, ELF_C_READ, NULL);
	if (!elf)
		return -ENOEXEC;
	err = load_sections(elf, src, s, &scratch);
	elf_end(elf);
	elf_symbols_uncharge(s, scratch);
	return err;
}

static int load_common(const struct elf_source *src, struct elf_symbols *out,
		       struct mem_account *acct)
{
	int err;

	memset(out, 0, sizeof(*out));
	out->acct = acct;
	err = load_source(src, out);
	if (err)
		elf_symbols_free(out);
	return err;
}

int elf_symbols_load_fd(int fd, struct elf_symbols *out,
			struct mem_account *acct)
{
	struct elf_source src;
	int err = elf_source_from_fd(fd, &src);

	if (err) {
		memset(out, 0, sizeof(*out));
		return err;
	}
	return load_common(&src, out, acct);
}

int elf_symbols_load_mem(const void *buf, size_t len, struct elf_symbols *out,
			 struct mem_account *acct)
{
	struct elf_source src;

	elf_source_from_mem(buf, len, &src);
	return load_common(&src, out, acct);
}

void elf_symbols_drop_go_lines(struct elf_symbols *s)
{
	if (!s->go_tab)
		return;
	elf_symbols_uncharge(s, s->go_tab_len + s->go_func_len);
	free(s->go_tab);
	free(s->go_func);
	s->go_tab = NULL;
	s->go_func = NULL;
	s->go_tab_len = s->go_func_len = 0;
	s->go_lines_tried = false;
}

void elf_symbols_drop(struct elf_symbols *s)
{
	free(s->syms);
	str_arena_free(&s->names);
	free(s->go_tab);
	free(s->go_func);
	s->syms = NULL;
	s->go_tab = NULL;
	s->go_func = NULL;
	s->n = s->go_tab_len = s->go_func_len = 0;
	s->go_tab_size = s->go_func_size = 0;
	s->names_packed = false;
	elf_symbols_uncharge(s, s->charged);
}

void elf_symbols_free(struct elf_symbols *s)
{
	elf_symbols_drop(s);
	memset(s, 0, sizeof(*s));
}

bool elf_symbols_vaddr(const struct elf_symbols *s, uint64_t file_offset,
		       uint64_t *vaddr)
{
	for (size_t i = 0; i < s->nloads; i++) {
		const struct elf_load *l = &s->loads[i];

		if (file_offset >= l->offset &&
		    file_offset - l->offset < l->filesz) {
			*vaddr = file_offset - l->offset + l->vaddr;
			return true;
		}
	}
	return false;
}

bool elf_symbols_mapping_vaddr(const struct elf_symbols *s, uint64_t map_offset,
			       uint64_t map_len, uint64_t *vaddr)
{
	for (size_t i = 0; i < s->nloads; i++) {
		const struct elf_load *l = &s->loads[i];

		/* Does [offset, offset + filesz) overlap the mapping's
		 * file range? Written so that no sum can wrap. */
		if (!(l->flags & PF_X) || !l->filesz)
			continue;
		if (l->offset >= map_offset) {
			if (l->offset - map_offset >= map_len)
				continue;
			*vaddr = l->vaddr - (l->offset - map_offset);
		} else {
			if (map_offset - l->offset >= l->filesz)
				continue;
			*vaddr = l->vaddr + (map_offset - l->offset);
		}
		return true;
	}
	return elf_symbols_vaddr(s, map_offset, vaddr);
}

const struct elf_sym *elf_symbols_lookup(const struct elf_symbols *s,
					 uint64_t vaddr)
{
	size_t n = bsearch_le_count(s->syms, s->n, sizeof(*s->syms),
				    offsetof(struct elf_sym, addr), vaddr);
	const struct elf_sym *sym;

	if (!n)
		return NULL;
	sym = &s->syms[n - 1];
	/* A sized symbol that ends before vaddr does not contain it (the
	 * address sits in padding or an unnamed stub). */
	if (sym->size && vaddr - sym->addr >= sym->size)
		return NULL;
	return sym;
}

void elf_symbols_names_start(struct elf_symbols_names_iter *it)
{
	it->i = it->pos = it->len = 0;
	it->buf[0] = '\0';
}

const char *elf_symbols_names_next(const struct elf_symbols *s,
				   struct elf_symbols_names_iter *it)
{
	const char *name;
	size_t len;

	if (it->i >= s->n)
		return NULL;
	if (!s->names_packed) {
		name = s->names.buf + s->syms[it->i++].name;
		it->len = strlen(name);
		return name;
	}
	if (it->i % FRONT_CODING_BLOCK == 0) {
		it->pos = s->syms[it->i].name;
		it->len = 0;
	}
	it->i++;
	len = front_coding_next(s->names.buf, s->names.len, &it->pos, it->buf,
				sizeof(it->buf), it->len);
	/* Our own encoding: cannot fail; an empty name if it did. */
	it->len = len == SIZE_MAX ? 0 : len;
	return it->buf;
}

const char *elf_symbols_name(const struct elf_symbols *s,
			     const struct elf_sym *sym,
			     char buf[ELF_SYM_NAME_BUF])
{
	size_t i = (size_t)(sym - s->syms), pos, len = 0;

	if (!s->names_packed)
		return s->names.buf + sym->name;
	pos = s->syms[i - i % FRONT_CODING_BLOCK].name;
	buf[0] = '\0';
	for (size_t k = 0; k <= i % FRONT_CODING_BLOCK; k++) {
		len = front_coding_next(s->names.buf, s->names.len, &pos, buf,
					ELF_SYM_NAME_BUF, len);
		if (len == SIZE_MAX)
			break;
	}
	return buf;
}

const struct elf_sym *elf_symbols_find(const struct elf_symbols *s,
				       const char *name)
{
	struct elf_symbols_names_iter it;
	const char *n;

	elf_symbols_names_start(&it);
	while ((n = elf_symbols_names_next(s, &it)))
		if (!strcmp(n, name))
			return &s->syms[it.i - 1];
	return NULL;
}

size_t elf_symbols_memory(const struct elf_symbols *s)
{
	return sizeof(*s) + s->charged;
}

static int pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = pread(fd, (char *)buf + got, len - got,
				  off + (off_t)got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		got += (size_t)r;
	}
	return 0;
}

int elf_htlhash_fd(int fd, char out[33])
{
	unsigned char head[4096], tail[4096], md[SHA256_DIGEST_SIZE], be[8];
	size_t hn, tn;
	struct sha256_ctx ctx;
	struct stat st;
	uint64_t size;
	int err;

	if (fstat(fd, &st))
		return -errno;
	size = (uint64_t)st.st_size;
	hn = size < sizeof(head) ? (size_t)size : sizeof(head);
	tn = hn;
	err = pread_full(fd, head, hn, 0);
	if (!err)
		err = pread_full(fd, tail, tn, (off_t)(size - tn));
	if (err)
		return err;
	for (int i = 0; i < 8; i++)
		be[i] = (unsigned char)(size >> (56 - 8 * i));
	/* nettle, not OpenSSL: the same SHA-256 without a provider to load
	 * (libcrypto's start-up mapped 3.3 MiB into every process). */
	sha256_init(&ctx);
	sha256_update(&ctx, hn, head);
	sha256_update(&ctx, tn, tail);
	sha256_update(&ctx, sizeof(be), be);
	sha256_digest(&ctx, sizeof(md), md);
	to_hex(md, 16, out);
	return 0;
}

/* The bytes of s's names, plain, each with its NUL. */
static size_t names_plain_bytes(const struct elf_symbols *s,
				struct elf_symbols_names_iter *it)
{
	size_t total = 0;

	elf_symbols_names_start(it);
	while (elf_symbols_names_next(s, it))
		total += it->len + 1;
	return total;
}

int elf_symbols_merge(struct elf_symbols *dst, const struct elf_symbols *src)
{
	size_t n = dst->n, out = 0, total, at = 0;
	struct elf_symbols_names_iter it;
	struct elf_sym *syms;
	const char *name;
	char *names;

	if (!src->n)
		return 0;
	if (src->n > ELF_FILE_MAX_SYMBOLS - dst->n)
		return -E2BIG;
	/* Both tables' names, plain, in one new buffer: packed again once
	 * the symbols are sorted together. */
	total = names_plain_bytes(dst, &it) + names_plain_bytes(src, &it);
	if (total > UINT32_MAX)
		return -E2BIG;
	/* What dst grows by is charged to dst's account first (src, read
	 * with the same account, is released by its owner). */
	if (!elf_symbols_charge(dst, src->n * sizeof(*syms) + total))
		return -E2BIG;
	syms = realloc(dst->syms, (dst->n + src->n) * sizeof(*syms));
	if (!syms)
		return -ENOMEM;
	dst->syms = syms;
	names = malloc(total);
	if (!names)
		return -ENOMEM;
	/* Each name is read before its symbol's offset is rewritten. dst's
	 * read order restarts at 0 (it was the order before its own merge
	 * by address, up to 4x its count) so that src's comes after it. */
	elf_symbols_names_start(&it);
	while ((name = elf_symbols_names_next(dst, &it))) {
		memcpy(names + at, name, it.len + 1);
		syms[it.i - 1].name = (uint32_t)at;
		syms[it.i - 1].seq = (uint32_t)(it.i - 1);
		at += it.len + 1;
	}
	elf_symbols_names_start(&it);
	while ((name = elf_symbols_names_next(src, &it))) {
		size_t i = it.i - 1;

		memcpy(names + at, name, it.len + 1);
		syms[n + i] = src->syms[i];
		syms[n + i].name = (uint32_t)at;
		syms[n + i].seq = (uint32_t)(n + i); /* after dst's on ties */
		at += it.len + 1;
	}
	replace_names(dst, names, at, total, false);
	n += src->n;
	/* dst's symbols sort first on ties (lower seq): they win. */
	qsort(syms, n, sizeof(*syms), cmp_sym);
	for (size_t i = 0; i < n; i++) {
		if (out && syms[out - 1].addr == syms[i].addr) {
			if (!syms[out - 1].size)
				syms[out - 1].size = syms[i].size;
			syms[out - 1].flags |= syms[i].flags;
			continue;
		}
		syms[out++] = syms[i];
	}
	dst->n = out;
	pack_names(dst);
	return 0;
}
