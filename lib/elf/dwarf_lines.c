// SPDX-License-Identifier: Apache-2.0
#include "elf/dwarf_lines.h"
#include "elf/dwarf_image.h"
#include "util/bsearch_le.h"
#include "util/grow.h"
#include "util/mem_budget.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DWARF_LINES_MAX_RANGES (1u << 20)

/* pcs remembered per file, and the inlined functions an entry holds (a
 * deeper chain is looked up every time). A lookup walks the unit's DIE
 * tree from its root (dwarf_getscopes): in libpython, whose ceval.c a
 * busy interpreter's samples land in over and over, that walk was 66% of
 * the recorder's CPU on the real-host bench (docs/performance.md). */
#define DWARF_LINES_CACHE	1024u
#define DWARF_LINES_CACHE_DEPTH 4u

struct where_entry {
	uint64_t vaddr;
	int32_t rc; /* what the lookup returned; 1: empty entry */
	uint32_t line;
	const char *file;
	uint32_t ninlined;
	struct {
		const char *name, *linkage_name, *file;
		uint32_t line;
	} inl[DWARF_LINES_CACHE_DEPTH];
};

/* Address ranges of the compile units, for DWARF without .debug_aranges
 * (clang emits none): built on first use. */
struct cu_range {
	uint64_t lo, hi;
	Dwarf_Off die;
};

struct dwarf_lines {
	uint8_t *image; /* its DWARF (dwarf_image.h) or the whole file, then
			   DWARF_LINES_GUARD zeros */
	size_t size;
	Elf *elf;
	Dwarf *dw; /* NULL until first use */
	bool broken;
	bool indexed;
	struct cu_range *ranges;
	size_t nranges, ranges_cap;
	struct where_entry *cache; /* NULL until first use, or if refused */
	bool cache_tried;
	struct mem_account *acct;
};

static int range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static bool acct_charge(void *acct, size_t bytes)
{
	return mem_account_charge(acct, bytes);
}

static void acct_uncharge(void *acct, size_t bytes)
{
	mem_account_uncharge(acct, bytes);
}

static void index_units(struct dwarf_lines *d)
{
	const struct grow_charge c = {acct_charge, acct_uncharge, d->acct};
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	Dwarf_Half version;

	d->indexed = true;
	while (!dwarf_get_units(d->dw, cu, &cu, &version, &unit_type, &cudie,
				NULL)) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if (d->nranges >= DWARF_LINES_MAX_RANGES)
				goto done;
			if (grow_array(&d->ranges, &d->ranges_cap,
				       d->nranges + 1, sizeof(*d->ranges), 64,
				       DWARF_LINES_MAX_RANGES, &c))
				goto done;
			d->ranges[d->nranges++] = (struct cu_range){
				lo, hi, dwarf_dieoffset(&cudie)};
		}
	}
done:
	if (d->nranges)
		qsort(d->ranges, d->nranges, sizeof(*d->ranges), range_cmp);
}

/* The compile unit holding vaddr: through .debug_aranges, else our index. */
static bool unit_of(struct dwarf_lines *d, uint64_t vaddr, Dwarf_Die *cu)
{
	size_t lo;

	if (dwarf_addrdie(d->dw, vaddr, cu))
		return true;
	if (!d->indexed)
		index_units(d);
	lo = bsearch_le_count(d->ranges, d->nranges, sizeof(*d->ranges),
			      offsetof(struct cu_range, lo), vaddr);
	/* Ranges may nest or overlap (hostile): look back a few. */
	for (size_t i = lo, k = 0; i > 0 && k < 8; i--, k++) {
		const struct cu_range *r = &d->ranges[i - 1];

		if (vaddr >= r->lo && vaddr < r->hi)
			return dwarf_offdie(d->dw, r->die, cu) != NULL;
	}
	return false;
}

static atomic_uint open_files;

/* .debug_info and .debug_line present, all .debug_* within the bound. */
static bool dwarf_usable(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	uint64_t total = 0;
	bool info = false, line = false;

	if (elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) ||
		    !(n = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strncmp(n, ".debug_", 7))
			continue;
		if (sh.sh_type == SHT_NOBITS || (sh.sh_flags & SHF_COMPRESSED))
			return false; /* keep to plain, present sections */
		total += sh.sh_size;
		if (total > DWARF_LINES_MAX_BYTES)
			return false;
		info |= !strcmp(n, ".debug_info");
		line |= !strcmp(n, ".debug_line");
	}
	return info && line;
}

/* The whole file, for what dwarf_image_read does not take apart. */
static int read_whole(int fd, size_t file_size, uint8_t **image)
{
	size_t done = 0;

	*image = calloc(1, file_size + DWARF_LINES_GUARD);
	if (!*image)
		return -ENOMEM;
	while (done < file_size) {
		ssize_t n =
			pread(fd, *image + done, file_size - done, (off_t)done);

		if (n <= 0) {
			free(*image);
			*image = NULL;
			return -EIO;
		}
		done += (size_t)n;
	}
	return 0;
}

/*
 * libdw (0.188) reads strings of .debug_line/.debug_str with strlen and
 * runs past the end of an unterminated section (found by fuzzing). So the
 * image (the DWARF sections libdw reads, or the whole file) is in memory,
 * followed by a zero guard: such a read ends inside our own buffer, at
 * worst with a garbage name, never beyond.
 */
struct dwarf_lines *dwarf_lines_open(int fd, struct mem_account *acct)
{
	struct dwarf_lines *d;
	struct stat st;
	size_t file_size;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > DWARF_LINES_MAX_FILE)
		return NULL;
	if (atomic_fetch_add(&open_files, 1) >= DWARF_LINES_MAX_FILES)
		goto fail;
	d = calloc(1, sizeof(*d));
	if (!d)
		goto fail;
	/* charged for the whole file first (an image is no larger but for
	 * its alignment), then for what the image holds */
	file_size = (size_t)st.st_size;
	d->size = file_size;
	if (!mem_account_charge(acct, d->size + DWARF_LINES_GUARD)) {
		free(d);
		goto fail;
	}
	d->acct = acct;
	err = dwarf_image_read(fd, file_size, DWARF_LINES_MAX_BYTES,
			       DWARF_LINES_GUARD, &d->image, &d->size);
	if (err == -ENOTSUP) {
		d->size = file_size;
		err = read_whole(fd, file_size, &d->image);
	}
	if (err) {
		d->size = file_size;
		goto fail_free;
	}
	if (d->size < file_size) {
		mem_account_uncharge(acct, file_size - d->size);
	} else if (d->size > file_size &&
		   !mem_account_charge(acct, d->size - file_size)) {
		mem_account_uncharge(acct, file_size + DWARF_LINES_GUARD);
		free(d->image);
		free(d);
		goto fail;
	}
	d->elf = elf_memory((char *)d->image, d->size);
	if (!d->elf || !dwarf_usable(d->elf))
		goto fail_free;
	return d;
fail_free:
	if (d->elf)
		elf_end(d->elf);
	free(d->image);
	mem_account_uncharge(acct, d->size + DWARF_LINES_GUARD);
	free(d);
fail:
	atomic_fetch_sub(&open_files, 1);
	return NULL;
}

void dwarf_lines_close(struct dwarf_lines *d)
{
	if (!d)
		return;
	if (d->dw)
		dwarf_end(d->dw);
	elf_end(d->elf);
	free(d->image);
	free(d->ranges);
	if (d->cache)
		mem_account_uncharge(d->acct,
				     DWARF_LINES_CACHE * sizeof(*d->cache));
	free(d->cache);
	mem_account_uncharge(d->acct,
			     d->size + DWARF_LINES_GUARD +
				     d->ranges_cap * sizeof(*d->ranges));
	free(d);
	atomic_fetch_sub(&open_files, 1);
}

static const char *call_file(Dwarf_Die *cu, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word idx;
	Dwarf_Files *files;
	size_t n;

	if (!dwarf_attr(die, DW_AT_call_file, &a) ||
	    dwarf_formudata(&a, &idx) || dwarf_getsrcfiles(cu, &files, &n) ||
	    idx >= n)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static uint32_t call_line(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word v;

	if (!dwarf_attr(die, DW_AT_call_line, &a) || dwarf_formudata(&a, &v) ||
	    v > UINT32_MAX)
		return 0;
	return (uint32_t)v;
}

static const char *linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		return dwarf_formstring(&a);
	return NULL;
}

static int lookup(struct dwarf_lines *d, uint64_t vaddr,
		  struct dwarf_where *out)
{
	Dwarf_Die cu, *scopes = NULL;
	Dwarf_Line *ln;
	const char *file;
	uint32_t line;
	int lineno = 0, n;

	memset(out, 0, sizeof(*out));
	if (d->broken)
		return -EIO;
	if (!d->dw) {
		d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
		if (!d->dw) {
			d->broken = true;
			return -EIO;
		}
	}
	if (!unit_of(d, vaddr, &cu))
		return -ENOENT;
	ln = dwarf_getsrc_die(&cu, vaddr);
	if (!ln)
		return -ENOENT;
	file = dwarf_linesrc(ln, NULL, NULL);
	if (dwarf_lineno(ln, &lineno) || lineno < 0)
		lineno = 0;
	line = (uint32_t)lineno;
	/* Innermost scope first: each inlined_subroutine is a function
	 * inlined here; its call site is the line in the scope around it. */
	n = dwarf_getscopes(&cu, vaddr, &scopes);
	for (int i = 0; i < n && out->ninlined < DWARF_LINES_MAX_DEPTH; i++) {
		Dwarf_Die *s = &scopes[i];

		if (dwarf_tag(s) != DW_TAG_inlined_subroutine)
			continue;
		out->inl[out->ninlined].name = dwarf_diename(s);
		out->inl[out->ninlined].linkage_name = linkage_name(s);
		out->inl[out->ninlined].file = file;
		out->inl[out->ninlined].line = line;
		out->ninlined++;
		file = call_file(&cu, s);
		line = call_line(s);
	}
	free(scopes);
	out->file = file;
	out->line = line;
	return 0;
}

/* The cache entry for vaddr (allocated on first use, charged), or NULL. */
static struct where_entry *cache_slot(struct dwarf_lines *d, uint64_t vaddr)
{
	uint64_t h = vaddr * 0x9e3779b97f4a7c15ull;

	if (!d->cache && !d->cache_tried) {
		d->cache_tried = true;
		if (!mem_account_charge(d->acct,
					DWARF_LINES_CACHE * sizeof(*d->cache)))
			return NULL;
		d->cache = malloc(DWARF_LINES_CACHE * sizeof(*d->cache));
		if (!d->cache) {
			mem_account_uncharge(
				d->acct, DWARF_LINES_CACHE * sizeof(*d->cache));
			return NULL;
		}
		for (uint32_t i = 0; i < DWARF_LINES_CACHE; i++)
			d->cache[i].rc = 1;
	}
	return d->cache ? &d->cache[(h >> 32) % DWARF_LINES_CACHE] : NULL;
}

/* Called from one thread at a time per file (the symbolizer's), as libdw's
 * lazy state here (d->dw) already assumes. */
int dwarf_lines_lookup(struct dwarf_lines *d, uint64_t vaddr,
		       struct dwarf_where *out)
{
	struct where_entry *c = cache_slot(d, vaddr);
	int rc;

	if (c && c->rc != 1 && c->vaddr == vaddr) {
		memset(out, 0, sizeof(*out));
		if (c->rc)
			return c->rc;
		out->ninlined = c->ninlined;
		for (uint32_t i = 0; i < c->ninlined; i++) {
			out->inl[i].name = c->inl[i].name;
			out->inl[i].linkage_name = c->inl[i].linkage_name;
			out->inl[i].file = c->inl[i].file;
			out->inl[i].line = c->inl[i].line;
		}
		out->file = c->file;
		out->line = c->line;
		return 0;
	}
	rc = lookup(d, vaddr, out);
	/* -EIO: the DWARF is broken for good, d->broken says so at once */
	if (!c || rc == -EIO ||
	    (!rc && out->ninlined > DWARF_LINES_CACHE_DEPTH))
		return rc;
	c->vaddr = vaddr;
	c->rc = rc;
	c->ninlined = rc ? 0 : out->ninlined;
	for (uint32_t i = 0; i < c->ninlined; i++) {
		c->inl[i].name = out->inl[i].name;
		c->inl[i].linkage_name = out->inl[i].linkage_name;
		c->inl[i].file = out->inl[i].file;
		c->inl[i].line = out->inl[i].line;
	}
	c->file = rc ? NULL : out->file;
	c->line = rc ? 0 : out->line;
	return rc;
}
