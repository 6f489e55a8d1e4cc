// SPDX-License-Identifier: Apache-2.0
#include "elf/tls_symbols.h"

#include <gelf.h>
#include <libelf.h>
#include <string.h>

/* Bounds on what a hostile file can make us walk. */
#define MAX_DYNSYM_BYTES (64u << 20)
#define MAX_RELA_BYTES	 (256u << 20)

static const char *const ctx_names[TLS_CTX_FORMATS] = {
	[TLS_CTX_OTEL_V1] = "otel_thread_ctx_v1",
	[TLS_CTX_ELASTIC_V1] = "elastic_apm_profiling_correlation_tls_v1",
};
static const char elastic_storage_name[] =
	"elastic_apm_profiling_correlation_process_storage_v1";

/* glibc's static TLS offset of the executable's block on x86_64 (variant
 * II, the TCB above the block): the block ends at the thread pointer,
 * aligned so the first byte keeps its alignment offset. Returned as the
 * distance below the thread pointer. */
static bool exe_tls_block_offset(const GElf_Phdr *tls, uint64_t *off)
{
	uint64_t align = tls->p_align ? tls->p_align : 1, firstbyte;

	if (align & (align - 1) || align > (1u << 20) ||
	    tls->p_memsz > (1ull << 32))
		return false;
	firstbyte = (-(tls->p_vaddr & (align - 1))) & (align - 1);
	*off = ((tls->p_memsz - firstbyte + align - 1) & ~(align - 1)) +
	       firstbyte;
	return true;
}

/* The same on aarch64 (variant I, AArch64 ELF ABI): the executable's block
 * follows the 16-byte TCB {dtv, private} above the thread pointer, at 16
 * rounded up to the block's alignment (what the linker's local-exec code
 * and glibc's _dl_determine_tlsoffset agree on when the segment starts
 * aligned; a misaligned one is refused rather than guessed). Returned as
 * the distance above the thread pointer. */
static bool exe_tls_block_offset_a64(const GElf_Phdr *tls, uint64_t *off)
{
	uint64_t align = tls->p_align ? tls->p_align : 1;

	if (align & (align - 1) || align > (1u << 20) ||
	    tls->p_memsz > (1ull << 32) || (tls->p_vaddr & (align - 1)))
		return false;
	*off = (16 + align - 1) & ~(align - 1);
	return true;
}

/* The access kind a dynamic relocation type gives, per machine (x86_64:
 * R_X86_64_*; aarch64: R_AARCH64_TLS*, whose GOT contents have the same
 * shapes: a {resolver, arg} descriptor, a module id, a thread-pointer
 * offset), NONE for any other type. */
static uint8_t reloc_access(unsigned machine, uint32_t type)
{
	if (machine == EM_AARCH64) {
		switch (type) {
		case R_AARCH64_TLSDESC:
			return TLS_ACCESS_TLSDESC;
		case R_AARCH64_TLS_DTPMOD:
			return TLS_ACCESS_DTPMOD;
		case R_AARCH64_TLS_TPREL:
			return TLS_ACCESS_TPOFF;
		default:
			return TLS_ACCESS_NONE;
		}
	}
	switch (type) {
	case R_X86_64_TLSDESC:
		return TLS_ACCESS_TLSDESC;
	case R_X86_64_DTPMOD64:
		return TLS_ACCESS_DTPMOD;
	case R_X86_64_TPOFF64:
		return TLS_ACCESS_TPOFF;
	default:
		return TLS_ACCESS_NONE;
	}
}

/* Rank of an access kind when several relocations match: the one whose
 * value is final once the library is loaded wins. */
static int rank(uint8_t access)
{
	switch (access) {
	case TLS_ACCESS_TPOFF:
		return 3;
	case TLS_ACCESS_TLSDESC:
		return 2;
	case TLS_ACCESS_DTPMOD:
		return 1;
	default:
		return 0;
	}
}

static void consider(struct tls_ctx_symbol *s, uint8_t access, uint64_t got)
{
	if (rank(access) > rank(s->access)) {
		s->access = access;
		s->got_vaddr = got;
	}
}

/* What libelf reads for the scan (it keeps it until elf_end), charged to
 * the file's account first and given back when the scan is done. */
struct scan_charge {
	struct mem_account *acct;
	uint64_t bytes;
};

static bool charge(struct scan_charge *c, uint64_t n)
{
	if (!mem_account_charge(c->acct, n))
		return false;
	c->bytes += n;
	return true;
}

/* The next section of `type` after *scn with sane entries: its data and
 * entry count, or NULL at the end. Bad sections are skipped and counted. */
static Elf_Data *next_table(Elf *elf, Elf_Scn **scn, uint32_t type,
			    size_t entsize, size_t max_bytes, GElf_Shdr *sh,
			    size_t *n, unsigned *bad, struct scan_charge *c)
{
	while ((*scn = elf_nextscn(elf, *scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(*scn, sh) || sh->sh_type != type)
			continue;
		if (sh->sh_entsize != entsize || sh->sh_size > max_bytes ||
		    !charge(c, sh->sh_size)) {
			(*bad)++;
			continue;
		}
		d = elf_getdata(*scn, NULL);
		if (!d || !d->d_buf) {
			(*bad)++;
			continue;
		}
		*n = d->d_size / entsize;
		return d;
	}
	return NULL;
}

static unsigned scan_relocs(Elf *elf, unsigned machine,
			    const size_t symidx[TLS_CTX_FORMATS],
			    struct tls_symbols *out, struct scan_charge *c)
{
	Elf_Scn *scn = NULL;
	unsigned bad = 0;

	GElf_Shdr sh;
	Elf_Data *d;
	size_t n;

	while ((d = next_table(elf, &scn, SHT_RELA, sizeof(Elf64_Rela),
			       MAX_RELA_BYTES, &sh, &n, &bad, c))) {
		for (size_t i = 0; i < n; i++) {
			GElf_Rela r;
			size_t sym;
			uint8_t access;

			if (!gelf_getrela(d, (int)i, &r)) {
				bad++;
				break;
			}
			sym = GELF_R_SYM(r.r_info);
			access = reloc_access(machine, GELF_R_TYPE(r.r_info));
			if (access == TLS_ACCESS_NONE)
				continue;
			for (int f = 0; f < TLS_CTX_FORMATS; f++) {
				struct tls_ctx_symbol *s = &out->sym[f];

				if (!symidx[f])
					continue;
				if (sym == symidx[f]) {
					consider(s, access, r.r_offset);
				} else if (sym == 0) {
					/* A reference bound at link time
					 * (-Bsymbolic, hidden alias): the
					 * addend names the variable; a
					 * module-id slot serves any of the
					 * module's variables. */
					if (access == TLS_ACCESS_DTPMOD ||
					    (uint64_t)r.r_addend == s->st_value)
						consider(s, access, r.r_offset);
				}
			}
		}
	}
	return bad;
}

static unsigned scan(Elf *elf, const char *const names[TLS_CTX_FORMATS],
		     struct tls_symbols *out, struct scan_charge *c);

unsigned tls_symbols_scan(void *handle, struct tls_symbols *out,
			  struct mem_account *acct)
{
	struct scan_charge c = {acct, 0};
	unsigned bad = scan(handle, ctx_names, out, &c);

	mem_account_uncharge(acct, c.bytes);
	return bad;
}

unsigned tls_symbol_lookup(void *handle, const char *name,
			   struct tls_ctx_symbol *out, struct mem_account *acct)
{
	const char *const names[TLS_CTX_FORMATS] = {name, NULL};
	struct scan_charge c = {acct, 0};
	struct tls_symbols all;
	unsigned bad = scan(handle, names, &all, &c);

	mem_account_uncharge(acct, c.bytes);
	*out = all.sym[0];
	return bad;
}

static unsigned scan(Elf *elf, const char *const names[TLS_CTX_FORMATS],
		     struct tls_symbols *out, struct scan_charge *c)
{
	size_t phnum, symidx[TLS_CTX_FORMATS] = {0}, shstrndx;
	bool have_tls = false;
	GElf_Phdr tls = {0};
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf_Scn *scn = NULL;
	Elf_Data *d;
	unsigned bad = 0;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!gelf_getehdr(elf, &eh) || gelf_getclass(elf) != ELFCLASS64 ||
	    (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64))
		return 0;
	if (elf_getphdrnum(elf, &phnum) || phnum > 4096)
		return 1;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return 1;
		if (ph.p_type == PT_TLS) {
			tls = ph;
			have_tls = true;
		}
	}
	if (!have_tls)
		return 0; /* no TLS: not a publisher (Elastic's storage lives
			     in the same library as its TLS variable) */
	/* Section headers are optional for the loader: without them we see
	 * no symbols (documented limit). */
	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((d = next_table(elf, &scn, SHT_DYNSYM, sizeof(Elf64_Sym),
			       MAX_DYNSYM_BYTES, &sh, &n, &bad, c))) {
		Elf_Scn *strscn = elf_getscn(elf, sh.sh_link);
		GElf_Shdr strsh;

		/* elf_strptr reads the whole string table. */
		if (!strscn || !gelf_getshdr(strscn, &strsh) ||
		    strsh.sh_size > MAX_DYNSYM_BYTES ||
		    !charge(c, strsh.sh_size)) {
			bad++;
			break;
		}
		for (size_t i = 1; i < n; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym)) {
				bad++;
				break;
			}
			if (sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			if (GELF_ST_TYPE(sym.st_info) == STT_TLS && have_tls) {
				for (int f = 0; f < TLS_CTX_FORMATS; f++) {
					if (symidx[f] || !names[f] ||
					    strcmp(name, names[f]))
						continue;
					if (sym.st_value + 8 > tls.p_memsz) {
						bad++; /* outside the block */
						continue;
					}
					symidx[f] = i;
					out->sym[f].st_value = sym.st_value;
				}
			} else if (GELF_ST_TYPE(sym.st_info) == STT_OBJECT &&
				   sym.st_size >= 8 &&
				   !strcmp(name, elastic_storage_name)) {
				out->elastic_storage_vaddr = sym.st_value;
				out->any = true;
			}
		}
		break; /* one .dynsym per file */
	}
	if (!symidx[TLS_CTX_OTEL_V1] && !symidx[TLS_CTX_ELASTIC_V1])
		return bad;
	bad += scan_relocs(elf, eh.e_machine, symidx, out, c);
	for (int f = 0; f < TLS_CTX_FORMATS; f++) {
		struct tls_ctx_symbol *s = &out->sym[f];
		uint64_t off;

		if (!symidx[f])
			continue;
		/* No relocation: only the executable (any kind: PIE,
		 * static-pie, ET_EXEC) can reach its own TLS so; whether
		 * this file is the process's executable is checked per
		 * process (tls_location_of). */
		s->tp_above = eh.e_machine == EM_AARCH64;
		if (s->access == TLS_ACCESS_NONE && s->tp_above &&
		    exe_tls_block_offset_a64(&tls, &off)) {
			s->access = TLS_ACCESS_LOCAL_EXEC;
			s->le_offset = (int64_t)(off + s->st_value);
		} else if (s->access == TLS_ACCESS_NONE && !s->tp_above &&
			   exe_tls_block_offset(&tls, &off)) {
			s->access = TLS_ACCESS_LOCAL_EXEC;
			s->le_offset = (int64_t)s->st_value - (int64_t)off;
		}
		if (s->access != TLS_ACCESS_NONE)
			out->any = true;
	}
	return bad;
}
