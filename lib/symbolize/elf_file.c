// SPDX-License-Identifier: Apache-2.0
#include "symbolize/elf_file.h"
#include "symbolize/go_pclntab.h"
#include "symbolize/plt_symbols.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <openssl/evp.h>
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

static int push_name(struct elf_symbols *s, size_t *cap, const char *name,
		     size_t n, uint32_t *off)
{
	if (s->names_len + n + 1 > UINT32_MAX)
		return -E2BIG;
	if (s->names_len + n + 1 > *cap) {
		size_t ncap = *cap ? *cap * 2 : 4096;
		char *nb;

		while (ncap < s->names_len + n + 1)
			ncap *= 2;
		nb = realloc(s->names, ncap);
		if (!nb)
			return -ENOMEM;
		s->names = nb;
		*cap = ncap;
	}
	memcpy(s->names + s->names_len, name, n);
	s->names[s->names_len + n] = '\0';
	*off = (uint32_t)s->names_len;
	s->names_len += n + 1;
	return 0;
}

static int add_sym(struct elf_symbols *s, size_t *cap, size_t *names_cap,
		   uint64_t addr, uint64_t size, uint32_t flags,
		   const char *name, size_t nlen)
{
	int err;

	if (s->n >= ELF_FILE_MAX_SYMBOLS)
		return -E2BIG;
	if (s->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		struct elf_sym *nv = realloc(s->syms, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->syms = nv;
		*cap = ncap;
	}
	err = push_name(s, names_cap, name, nlen, &s->syms[s->n].name);
	if (err)
		return err;
	s->syms[s->n].addr = addr;
	s->syms[s->n].size = size;
	s->syms[s->n].flags = flags;
	s->n++;
	return 0;
}

struct plt_ctx {
	struct elf_symbols *s;
	size_t *cap, *names_cap;
};

static int add_plt(void *ctx, uint64_t addr, uint64_t size, const char *name,
		   size_t len)
{
	struct plt_ctx *c = ctx;

	return add_sym(c->s, c->cap, c->names_cap, addr, size, 0, name, len);
}

/* Sort by address; on ties the earlier-read symbol (.symtab before .dynsym,
 * global before local within a table is not guaranteed) keeps its place. */
static int cmp_sym(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static int read_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
		       struct elf_symbols *s, size_t *cap, size_t *names_cap)
{
	Elf_Data *data;
	size_t count;

	if (sh->sh_entsize != sizeof(Elf64_Sym) ||
	    sh->sh_size > ELF_FILE_MAX_SYMTAB_BYTES)
		return -ENOEXEC;
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf)
		return -ENOEXEC;
	count = data->d_size / sizeof(Elf64_Sym);
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		const char *name;
		size_t nlen;
		int err;

		if (!gelf_getsym(data, (int)i, &sym)) {
			s->skipped_symbols++;
			continue;
		}
		if (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
		    GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		/* elf_strptr checks the offset against the string section. */
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name) {
			s->skipped_symbols++;
			continue;
		}
		nlen = strnlen(name, ELF_FILE_MAX_NAME);
		if (!nlen || nlen == ELF_FILE_MAX_NAME) {
			s->skipped_symbols++;
			continue;
		}
		err = add_sym(s, cap, names_cap, sym.st_value, sym.st_size, 0,
			      name, nlen);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Go functions from .gopclntab: a stripped Go binary has no .symtab, but
 * the runtime's own table names every function. Read after the symbol
 * tables; where both name an address, the two entries merge.
 */
static int read_gopclntab(Elf_Scn *scn, const GElf_Shdr *sh,
			  uint64_t text_start, struct elf_symbols *s,
			  size_t *cap, size_t *names_cap)
{
	struct go_pclntab t;
	Elf_Data *data;

	if (sh->sh_type != SHT_PROGBITS || sh->sh_size > GO_PCLNTAB_MAX_BYTES)
		return -ENOEXEC;
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf ||
	    go_pclntab_open(&t, data->d_buf, data->d_size, text_start))
		return -ENOEXEC;
	for (uint64_t i = 0; i < t.nfunc; i++) {
		uint64_t entry, end;
		const char *name;
		size_t nlen;
		int err;

		if (!go_pclntab_func(&t, i, &entry, &end, &name, &nlen,
				     ELF_FILE_MAX_NAME)) {
			s->skipped_symbols++;
			continue;
		}
		err = add_sym(s, cap, names_cap, entry, end - entry, ELF_SYM_GO,
			      name, nlen);
		if (err)
			return err;
	}
	/* Kept for source lines; without it Go frames still have names. */
	if (data->d_size <= ELF_FILE_MAX_GO_TAB) {
		s->go_tab = malloc(data->d_size);
		if (s->go_tab) {
			memcpy(s->go_tab, data->d_buf, data->d_size);
			s->go_tab_len = data->d_size;
			s->go_text = text_start;
		}
	}
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
static void go_build_id(const char *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x21 || p[i] > 0x7e)
			return;
	memcpy(out, p, n);
	out[n] = '\0';
}

static void read_build_id(Elf *elf, size_t phnum, struct elf_symbols *s)
{
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE ||
		    ph.p_filesz > (1u << 20))
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
					 ELF_T_NHDR);
		if (!d)
			continue;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) >
		       0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + name_off, "GNU", 4) &&
			    nh.n_descsz > 0 &&
			    nh.n_descsz <= ELF_FILE_MAX_BUILD_ID) {
				to_hex((unsigned char *)d->d_buf + desc_off,
				       nh.n_descsz, s->build_id);
			} else if (nh.n_type == 4 /* Go build id */ &&
				   (nh.n_namesz == 3 || nh.n_namesz == 4) &&
				   !memcmp((char *)d->d_buf + name_off, "Go",
					   3) &&
				   nh.n_descsz > 0 &&
				   nh.n_descsz <= ELF_FILE_MAX_GO_BUILD_ID) {
				go_build_id((const char *)d->d_buf + desc_off,
					    nh.n_descsz, s->go_build_id);
			}
		}
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

static int load_elf(Elf *elf, struct elf_symbols *s)
{
	size_t phnum, shstrndx, cap = 0, names_cap = 0, out = 0;
	uint64_t text_start = 0;
	size_t before;
	unsigned dwarf_seen = 0;
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL, *gopclntab = NULL;
	int err;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    gelf_getclass(elf) != ELFCLASS64)
		return -ENOEXEC;
	if (elf_getphdrnum(elf, &phnum) || phnum > 4096)
		return -ENOEXEC;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD || s->nloads >= ELF_FILE_MAX_LOADS)
			continue;
		s->loads[s->nloads].offset = ph.p_offset;
		s->loads[s->nloads].vaddr = ph.p_vaddr;
		s->loads[s->nloads].filesz = ph.p_filesz;
		s->loads[s->nloads].flags = ph.p_flags;
		s->nloads++;
	}
	read_build_id(elf, phnum, s);
	s->skipped_symbols += tls_symbols_scan(elf, &s->tls);

	/* Section headers are optional for the loader, so a file whose
	 * section table is broken still loads and runs: keep loads and
	 * build id, report no symbols (and the file as malformed). */
	if (sections_broken(elf, &eh)) {
		s->skipped_symbols++;
		return 0;
	}
	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
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
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		before = s->n;
		err = read_symtab(elf, scn, &sh, s, &cap, &names_cap);
		if (sh.sh_type == SHT_SYMTAB && s->n > before)
			s->has_symtab = true;
		if (err == -ENOMEM)
			return err;
		if (err)
			s->skipped_symbols++;
	}
	s->has_dwarf = dwarf_seen == 3;
	{
		struct plt_ctx pc = {s, &cap, &names_cap};

		err = plt_symbols_scan(elf, shstrndx, add_plt, &pc);
		if (err == -ENOMEM)
			return err;
	}
	if (gopclntab) {
		GElf_Shdr sh;

		err = gelf_getshdr(gopclntab, &sh)
			      ? read_gopclntab(gopclntab, &sh, text_start, s,
					       &cap, &names_cap)
			      : -ENOEXEC;
		if (err == -ENOMEM)
			return err;
		if (err)
			s->skipped_symbols++;
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
	return 0;
}

static int load_common(Elf *elf, struct elf_symbols *out)
{
	int err;

	if (!elf)
		return -ENOEXEC;
	err = load_elf(elf, out);
	elf_end(elf);
	if (err)
		elf_symbols_free(out);
	return err;
}

int elf_symbols_load_fd(int fd, struct elf_symbols *out)
{
	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	return load_common(elf_begin(fd, ELF_C_READ, NULL), out);
}

int elf_symbols_load_mem(const void *buf, size_t len, struct elf_symbols *out)
{
	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	/* elf_memory takes a non-const pointer but does not write with
	 * ELF_C_READ_MMAP semantics; we pass a private copy anyway. */
	return load_common(elf_memory((char *)buf, len), out);
}

void elf_symbols_free(struct elf_symbols *s)
{
	free(s->syms);
	free(s->names);
	free(s->go_tab);
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
	size_t lo = 0, hi = s->n;
	const struct elf_sym *sym;

	if (!s->n || vaddr < s->syms[0].addr)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->syms[mid].addr <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	sym = &s->syms[lo];
	/* A sized symbol that ends before vaddr does not contain it (the
	 * address sits in padding or an unnamed stub). */
	if (sym->size && vaddr - sym->addr >= sym->size)
		return NULL;
	return sym;
}

size_t elf_symbols_memory(const struct elf_symbols *s)
{
	return sizeof(*s) + s->n * sizeof(struct elf_sym) + s->names_len +
	       s->go_tab_len;
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
	unsigned char head[4096], tail[4096], md[EVP_MAX_MD_SIZE], be[8];
	size_t hn, tn;
	unsigned int mdlen = 0;
	struct stat st;
	uint64_t size;
	EVP_MD_CTX *ctx;
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
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -ENOMEM;
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, head, hn) != 1 ||
	    EVP_DigestUpdate(ctx, tail, tn) != 1 ||
	    EVP_DigestUpdate(ctx, be, sizeof(be)) != 1 ||
	    EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen < 16) {
		EVP_MD_CTX_free(ctx);
		return -EIO;
	}
	EVP_MD_CTX_free(ctx);
	to_hex(md, 16, out);
	return 0;
}

int elf_symbols_merge(struct elf_symbols *dst, const struct elf_symbols *src)
{
	size_t n = dst->n, out = 0;
	struct elf_sym *syms;
	char *names;

	if (!src->n)
		return 0;
	if (src->n > ELF_FILE_MAX_SYMBOLS - dst->n ||
	    dst->names_len + src->names_len > UINT32_MAX)
		return -E2BIG;
	syms = realloc(dst->syms, (dst->n + src->n) * sizeof(*syms));
	if (!syms)
		return -ENOMEM;
	dst->syms = syms;
	names = realloc(dst->names, dst->names_len + src->names_len);
	if (!names)
		return -ENOMEM;
	dst->names = names;
	memcpy(names + dst->names_len, src->names, src->names_len);
	for (size_t i = 0; i < src->n; i++) {
		syms[n + i] = src->syms[i];
		syms[n + i].name += (uint32_t)dst->names_len;
	}
	dst->names_len += src->names_len;
	n += src->n;
	/* dst's names sort first on ties (lower offsets): they win. */
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
	return 0;
}
