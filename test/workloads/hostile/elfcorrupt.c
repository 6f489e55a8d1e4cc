// SPDX-License-Identifier: Apache-2.0
/*
 * Corrupts a copy of a 64-bit ELF shared library in every place the dynamic
 * loader does not read, so that the copy still loads and runs while the
 * parts a profiler reads are hostile. The loader needs the ELF header's
 * e_ph* fields, the program headers, the PT_LOAD contents it maps and,
 * through PT_DYNAMIC, .dynsym/.dynstr/.gnu.hash/relocations: those are
 * left alone. Section headers (all of them, including the ones describing
 * .dynsym), .eh_frame, .eh_frame_hdr, .symtab/.strtab and note contents
 * are fair game.
 *
 * Usage: elfcorrupt MODE[,MODE...] IN OUT   (modes below; deterministic)
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct img {
	unsigned char *b;
	size_t len;
};

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* splitmix64: fixed seed per mode, so every build is the same. */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void garble(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)rng();
}

static void die(const char *msg)
{
	fprintf(stderr, "elfcorrupt: %s\n", msg);
	exit(1);
}

static Elf64_Ehdr *ehdr(struct img *im)
{
	return (Elf64_Ehdr *)im->b;
}

/* The section header table as the (still intact) ELF header describes it,
 * or NULL if a previous mode already made it unusable. */
static Elf64_Shdr *shdrs(struct img *im, size_t *n)
{
	Elf64_Ehdr *eh = ehdr(im);

	*n = eh->e_shnum;
	if (!eh->e_shoff || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    eh->e_shoff > im->len ||
	    *n > (im->len - eh->e_shoff) / sizeof(Elf64_Shdr))
		return NULL;
	return (Elf64_Shdr *)(im->b + eh->e_shoff);
}

static Elf64_Shdr *section(struct img *im, const char *name)
{
	Elf64_Ehdr *eh = ehdr(im);
	Elf64_Shdr *sh, *str;
	size_t n;

	sh = shdrs(im, &n);
	if (!sh || eh->e_shstrndx >= n)
		return NULL;
	str = &sh[eh->e_shstrndx];
	for (size_t i = 0; i < n; i++) {
		if (sh[i].sh_name >= str->sh_size ||
		    str->sh_offset + str->sh_size > im->len)
			continue;
		if (!strcmp((const char *)im->b + str->sh_offset +
				    sh[i].sh_name,
			    name))
			return &sh[i];
	}
	return NULL;
}

/* Contents of a section that has bytes in the file, or NULL. */
static unsigned char *contents(struct img *im, const char *name, size_t *len)
{
	Elf64_Shdr *s = section(im, name);

	if (!s || s->sh_type == SHT_NOBITS || s->sh_offset > im->len ||
	    s->sh_size > im->len - s->sh_offset)
		return NULL;
	*len = s->sh_size;
	return im->b + s->sh_offset;
}

static void need(const void *p, const char *what)
{
	if (!p) {
		fprintf(stderr, "elfcorrupt: no %s to corrupt\n", what);
		exit(1);
	}
}

/* Every section header random bytes (the table's place and size kept). */
static void shdr_garbage(struct img *im)
{
	size_t n;
	Elf64_Shdr *sh = shdrs(im, &n);

	need(sh, "section header table");
	garble((unsigned char *)sh, n * sizeof(*sh));
}

static void shdr_zero(struct img *im)
{
	size_t n;
	Elf64_Shdr *sh = shdrs(im, &n);

	need(sh, "section header table");
	memset(sh, 0, n * sizeof(*sh));
}

/* The ELF header points the section table far past the end of the file. */
static void shdr_offset(struct img *im)
{
	Elf64_Ehdr *eh = ehdr(im);

	eh->e_shoff = 0x7ffffffffff0ull;
	eh->e_shnum = 0xffff;
	eh->e_shstrndx = 0xfffe;
}

/* Extended numbering (e_shnum 0: the count is in section 0's sh_size,
 * e_shstrndx SHN_XINDEX: the index is in its sh_link) with absurd values. */
static void shdr_xnum(struct img *im)
{
	Elf64_Ehdr *eh = ehdr(im);
	size_t n;
	Elf64_Shdr *sh = shdrs(im, &n);

	need(sh, "section header table");
	eh->e_shnum = 0;
	eh->e_shstrndx = SHN_XINDEX;
	sh[0].sh_size = 0xffffffffull;
	sh[0].sh_link = 0xfffffff0u;
}

/* Cut the file right after the last byte a PT_LOAD maps: .symtab, .strtab,
 * .shstrtab and the section header table are gone. */
static void truncate_after_loads(struct img *im)
{
	Elf64_Ehdr *eh = ehdr(im);
	Elf64_Phdr *ph = (Elf64_Phdr *)(im->b + eh->e_phoff);
	uint64_t end = eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(*ph);

	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_offset + ph[i].p_filesz > end)
			end = ph[i].p_offset + ph[i].p_filesz;
	if (end >= im->len)
		die("nothing after the loaded segments to cut");
	im->len = end;
}

static void ehframe_garbage(struct img *im)
{
	size_t n;
	unsigned char *p = contents(im, ".eh_frame", &n);

	need(p, ".eh_frame");
	garble(p, n);
}

/*
 * Structured hostility: records that parse but lie. FDEs whose CIE pointer
 * points at their own start, into the middle of another record or before the
 * section; address ranges covering the whole address space; a 64-bit
 * length running past the end; a CIE with an unterminated augmentation.
 */
static void ehframe_hostile(struct img *im)
{
	size_t n, off = 0;
	unsigned char *p = contents(im, ".eh_frame", &n);
	int k = 0;

	need(p, ".eh_frame");
	while (off + 8 <= n) {
		uint32_t len, id;

		memcpy(&len, p + off, 4);
		if (!len || len == 0xffffffffu || len > n - off - 4)
			break;
		memcpy(&id, p + off + 4, 4);
		if (id == 0) {
			/* CIE: augmentation string with no terminator. */
			if (k % 2 && len > 8)
				memset(p + off + 9, 'z', len - 5);
		} else {
			uint32_t v;

			switch (k % 4) {
			case 0: /* CIE pointer to this FDE's own start */
				v = 4;
				memcpy(p + off + 4, &v, 4);
				break;
			case 1: /* CIE pointer before the section */
				v = (uint32_t)(off + 4 + 0x100000);
				memcpy(p + off + 4, &v, 4);
				break;
			case 2: /* pc range: the whole address space */
				if (len >= 12) {
					v = 0xffffffffu;
					memcpy(p + off + 12, &v, 4);
				}
				break;
			default: /* CIE pointer into the middle of a record */
				v = (uint32_t)(off + 4 - 6);
				memcpy(p + off + 4, &v, 4);
				break;
			}
		}
		k++;
		off += 4 + (size_t)len;
	}
	if (off + 12 <= n) {
		/* The terminator becomes a 64-bit length far past the end. */
		uint32_t esc = 0xffffffffu;
		uint64_t big = 0x7fffffffffffull;

		memcpy(p + off, &esc, 4);
		memcpy(p + off + 4, &big, 8);
	}
}

/* A binary search table that claims 2^31 entries, with random entries;
 * the header bytes (version, encodings) stay plausible. */
static void ehframehdr_garbage(struct img *im)
{
	size_t n;
	unsigned char *p = contents(im, ".eh_frame_hdr", &n);
	uint32_t count = 0x7fffffffu;

	need(p, ".eh_frame_hdr");
	if (n < 12)
		die(".eh_frame_hdr too small");
	/* version 1, eh_frame_ptr sdata4|pcrel, fde_count udata4, table
	 * sdata4|datarel */
	p[0] = 1;
	p[1] = 0x1b;
	p[2] = 0x03;
	p[3] = 0x3b;
	garble(p + 4, 4); /* eh_frame_ptr anywhere */
	memcpy(p + 8, &count, 4);
	garble(p + 12, n - 12);
}

static void symtab_garbage(struct img *im)
{
	size_t n;
	unsigned char *p = contents(im, ".symtab", &n);

	need(p, ".symtab");
	garble(p, n);
	p = contents(im, ".strtab", &n);
	need(p, ".strtab");
	garble(p, n);
}

/*
 * Symbols that parse but lie: every entry a global function; names past
 * the string table, unterminated at its end, or bytes that are not UTF-8
 * (on the real function addresses, so they would be used); random
 * addresses; sizes covering everything.
 */
static void symtab_wild(struct img *im)
{
	static const char bad[] = "\xff\xfe\xc3\x28hot\x01\x7f\xed\xa0\x80";
	size_t n, sn;
	Elf64_Sym *s = (Elf64_Sym *)contents(im, ".symtab", &n);
	unsigned char *str = contents(im, ".strtab", &sn);

	need(s, ".symtab");
	need(str, ".strtab");
	if (sn < sizeof(bad) + 2)
		die(".strtab too small");
	memset(str, 'A', sn); /* no terminator anywhere but after `bad` */
	memcpy(str + 1, bad, sizeof(bad));
	for (size_t i = 1; i < n / sizeof(*s); i++) {
		if (ELF64_ST_TYPE(s[i].st_info) == STT_FUNC && s[i].st_value) {
			s[i].st_name = 1; /* not UTF-8 */
			continue;
		}
		s[i].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		s[i].st_shndx = 1;
		switch (i % 3) {
		case 0:
			s[i].st_name = 0xfffffff0u;
			break;
		case 1:
			s[i].st_name = (uint32_t)sn - 1;
			break;
		default:
			s[i].st_value = rng();
			s[i].st_size = ~0ull;
			s[i].st_name = 2;
			break;
		}
	}
}

/* The loader finds .dynsym/.dynstr/.gnu.hash through PT_DYNAMIC: only the
 * section headers describing them lie (offsets past the end, absurd sizes,
 * links to themselves, a zero entry size). */
static void dynsym_shdr(struct img *im)
{
	Elf64_Shdr *ds = section(im, ".dynsym"), *dstr = section(im, ".dynstr");
	Elf64_Shdr *gh = section(im, ".gnu.hash");
	size_t n;
	Elf64_Shdr *sh = shdrs(im, &n);

	need(ds, ".dynsym");
	need(dstr, ".dynstr");
	ds->sh_size = 0x7fffffffffffull;
	ds->sh_link = (uint32_t)(ds - sh); /* its own string table */
	ds->sh_entsize = 0;
	dstr->sh_offset = im->len + 0x1000;
	if (gh) {
		gh->sh_type = SHT_DYNSYM; /* a second symbol table */
		gh->sh_entsize = sizeof(Elf64_Sym);
		gh->sh_size = 0xffffffffull * sizeof(Elf64_Sym);
	}
}

/* Note contents random (sizes included). */
static void notes_garbage(struct img *im)
{
	size_t n;
	unsigned char *p = contents(im, ".note.gnu.build-id", &n);

	need(p, ".note.gnu.build-id");
	garble(p, n);
}

/* A GNU build-id note whose sizes run past the segment. */
static void notes_wild(struct img *im)
{
	size_t n;
	unsigned char *p = contents(im, ".note.gnu.build-id", &n);
	uint32_t hdr[3] = {4, 0xfffffff0u, NT_GNU_BUILD_ID};

	need(p, ".note.gnu.build-id");
	if (n < 16)
		die("build-id note too small");
	memcpy(p, hdr, sizeof(hdr));
	memcpy(p + 12, "GNU", 4);
}

static const struct {
	const char *name;
	void (*fn)(struct img *);
} modes[] = {
	{"shdr-garbage", shdr_garbage},
	{"shdr-zero", shdr_zero},
	{"shdr-offset", shdr_offset},
	{"shdr-xnum", shdr_xnum},
	{"truncate", truncate_after_loads},
	{"ehframe-garbage", ehframe_garbage},
	{"ehframe-hostile", ehframe_hostile},
	{"ehframehdr-garbage", ehframehdr_garbage},
	{"symtab-garbage", symtab_garbage},
	{"symtab-wild", symtab_wild},
	{"dynsym-shdr", dynsym_shdr},
	{"notes-garbage", notes_garbage},
	{"notes-wild", notes_wild},
};

static void apply(struct img *im, const char *mode)
{
	uint64_t seed = 1469598103934665603ull;

	if (!strcmp(mode, "copy"))
		return;
	for (const char *c = mode; *c; c++)
		seed = (seed ^ (unsigned char)*c) * 1099511628211ull;
	rng_state = seed;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (!strcmp(mode, modes[i].name)) {
			modes[i].fn(im);
			return;
		}
	}
	fprintf(stderr, "elfcorrupt: unknown mode %s; modes: copy", mode);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		fprintf(stderr, " %s", modes[i].name);
	fprintf(stderr, "\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct img im;
	struct stat st;
	char *list, *save = NULL;
	FILE *f;

	if (argc != 4) {
		fprintf(stderr, "usage: elfcorrupt MODE[,MODE...] IN OUT\n");
		return 2;
	}
	f = fopen(argv[2], "rb");
	if (!f || fstat(fileno(f), &st))
		die(strerror(errno));
	im.len = (size_t)st.st_size;
	im.b = malloc(im.len);
	if (!im.b || fread(im.b, 1, im.len, f) != im.len)
		die("cannot read input");
	fclose(f);
	if (im.len < sizeof(Elf64_Ehdr) || memcmp(im.b, ELFMAG, SELFMAG) ||
	    im.b[EI_CLASS] != ELFCLASS64 ||
	    ehdr(&im)->e_phoff +
			    (uint64_t)ehdr(&im)->e_phnum * sizeof(Elf64_Phdr) >
		    im.len)
		die("input is not a 64-bit ELF file");
	list = strdup(argv[1]);
	if (!list)
		die("out of memory");
	/* Modes apply in order: corrupt contents (found through the section
	 * headers) before the section headers themselves. */
	for (char *m = strtok_r(list, ",", &save); m;
	     m = strtok_r(NULL, ",", &save))
		apply(&im, m);
	free(list);
	f = fopen(argv[3], "wb");
	if (!f || fwrite(im.b, 1, im.len, f) != im.len || fclose(f))
		die("cannot write output");
	chmod(argv[3], 0755);
	free(im.b);
	return 0;
}
