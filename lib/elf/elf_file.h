/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What we keep of one ELF file mapped by some process: function symbols
 * (.symtab and .dynsym), loadable segments (to turn file offsets into ELF
 * virtual addresses) and build ids. Every byte comes from a file a process
 * chose to map: all of it is treated as hostile and bounded.
 */
#ifndef OTELPROF_ELF_ELF_FILE_H
#define OTELPROF_ELF_ELF_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf/tls_symbols.h"
#include "util/mem_budget.h"
#include "util/str_arena.h"

#define ELF_FILE_MAX_SYMBOLS	  4000000u
#define ELF_FILE_MAX_SYMTAB_BYTES (256u << 20)
#define ELF_FILE_MAX_NAME	  4096u
#define ELF_FILE_MAX_LOADS	  64u
#define ELF_FILE_MAX_BUILD_ID	  64u
#define ELF_FILE_MAX_GO_BUILD_ID  200u
/* Go's source lines read the table into memory, held while the file's
 * frames are sampled (names are read in place, at any size). Up to half
 * the default per-file budget: a bigger table (the collector's own is 42
 * MB) gets names without lines; before names were read in place, its
 * names did not fit the budget either. */
#define ELF_FILE_MAX_GO_TAB (32u << 20)

struct elf_sym {
	uint64_t addr;
	uint64_t size;
	uint32_t name;	    /* offset into elf_symbols.names (of the name,
			       or once packed, of its record) */
	uint32_t flags : 8; /* ELF_SYM_* */
	uint32_t seq : 24;  /* read order: ties in sorting (< 2^24 =
			       ELF_FILE_MAX_SYMBOLS * 4) */
};

#define ELF_SYM_GO 1u /* a Go function (listed in .gopclntab) */

/*
 * Memory: a symbol costs its 24-byte entry; its name is an offset into the
 * file's own string table, read once (up to the last name used). Once the
 * table is sorted, the names kept are front-coded in address order
 * (util/front_coding.h): neighbours share their package or namespace, so a
 * stripped Go daemon's names take about 30% of their bytes. Everything is
 * charged to the file's budget account before it is allocated.
 */

/* Room for any name (elf_symbols_name's buffer): every source of names
 * refuses one of ELF_FILE_MAX_NAME bytes or more. */
#define ELF_SYM_NAME_BUF ELF_FILE_MAX_NAME

struct elf_load {
	uint64_t offset, vaddr, filesz;
	uint32_t flags; /* PF_R | PF_W | PF_X */
};

struct elf_symbols {
	struct elf_sym *syms; /* sorted by addr, unique addr */
	size_t n;
	struct str_arena names; /* the string tables used, or the names
				   front-coded (names_packed) */
	bool names_packed;
	struct mem_account *acct; /* charged for everything above; NULL:
				     unlimited */
	uint64_t charged;	  /* bytes charged by this struct */
	struct elf_load loads[ELF_FILE_MAX_LOADS];
	size_t nloads;
	char build_id[2 * ELF_FILE_MAX_BUILD_ID + 1]; /* hex, "" if none */
	/* Go's build id (.note.go.buildid, printable text), "" if none */
	char go_build_id[ELF_FILE_MAX_GO_BUILD_ID + 1];
	unsigned skipped_symbols; /* malformed entries ignored (symbols,
				     symbol tables, a broken section
				     table, TLS symbols) */
	bool over_budget;	  /* symbols dropped: the budget was hit */
	struct tls_symbols tls;	  /* trace-correlation symbols */
	/* Where more symbols may be (debug_info.c): */
	bool has_symtab; /* a .symtab with functions was read */
	bool has_dwarf;	 /* .debug_info and .debug_line present */
	/* .gopclntab for file and line of Go frames (at most
	 * ELF_FILE_MAX_GO_TAB bytes), NULL until a Go frame of the file
	 * needs a line (elf_symbols_load_go_lines): a Go daemon's table is
	 * tens of MB, most of them never sampled. */
	uint8_t *go_tab;
	size_t go_tab_len;
	uint64_t go_text; /* .text address, for go_pclntab_open */
	uint8_t *go_func; /* go:func.* from moduledata.gofunc (inline trees) */
	size_t go_func_len;
	/* Where both are in the file (size 0: none), read by
	 * elf_symbols_load_go_lines; go_lines_tried: read, or failed. */
	uint64_t go_tab_off, go_tab_size, go_func_off, go_func_size;
	bool go_lines_tried;
	char debuglink[256];	 /* .gnu_debuglink file name, "" if none */
	uint32_t debuglink_crc;	 /* its CRC-32 */
	uint64_t debugdata_off;	 /* .gnu_debugdata (MiniDebugInfo, xz) */
	uint64_t debugdata_size; /* in the file; 0 if none */
};

/*
 * Read symbols, loads and build id from an ELF file descriptor (read with
 * pread, never mmap: a hostile process can truncate a mapped file and turn
 * an mmap read into SIGBUS). Returns 0, or -ENOEXEC for a malformed/non-ELF
 * file, or another negative errno. Memory kept and scratch are charged to
 * acct (NULL: unlimited); over budget, the symbols are dropped (loads and
 * build id stay) and over_budget is set.
 */
int elf_symbols_load_fd(int fd, struct elf_symbols *out,
			struct mem_account *acct);
/* Same from a memory image (the vDSO). */
int elf_symbols_load_mem(const void *buf, size_t len, struct elf_symbols *out,
			 struct mem_account *acct);
/* Charge n more bytes kept with s (released by elf_symbols_free). false:
 * over budget, do not allocate. */
bool elf_symbols_charge(struct elf_symbols *s, uint64_t n);
void elf_symbols_uncharge(struct elf_symbols *s, uint64_t n);
/* Are Go source lines in the file, not read yet? */
static inline bool elf_symbols_go_lines_due(const struct elf_symbols *s)
{
	return s->go_tab_size && !s->go_lines_tried;
}
/* Read .gopclntab and the inline trees from fd, the file s was loaded
 * from (the caller checks its identity), charged to s's account. Tried
 * once: 0, or a negative errno (Go frames keep their names, no lines). */
int elf_symbols_load_go_lines(struct elf_symbols *s, int fd);
/* Free them again (read again when a frame needs them). */
void elf_symbols_drop_go_lines(struct elf_symbols *s);
/* Free the symbols, keep loads and build id (eviction). */
void elf_symbols_drop(struct elf_symbols *s);
void elf_symbols_free(struct elf_symbols *s);

/* File offset -> ELF virtual address through the PT_LOAD segments. Returns
 * false when no segment covers the offset. */
bool elf_symbols_vaddr(const struct elf_symbols *s, uint64_t file_offset,
		       uint64_t *vaddr);
/*
 * ELF virtual address of the first byte of an executable mapping of the
 * file at map_offset, map_len bytes long. The segment is the executable
 * PT_LOAD whose file bytes the mapping holds, not the one holding
 * map_offset: lld and mold start the text segment inside the page the
 * read-only segment ends in, so the first text page (file offset rounded
 * down) belongs to both, at different virtual addresses. Without an
 * executable segment in range, the segment holding map_offset. False if
 * there is neither.
 */
bool elf_symbols_mapping_vaddr(const struct elf_symbols *s, uint64_t map_offset,
			       uint64_t map_len, uint64_t *vaddr);
/* Function containing vaddr, or NULL. */
const struct elf_sym *elf_symbols_lookup(const struct elf_symbols *s,
					 uint64_t vaddr);
/* The function named name, or NULL: a linear scan (the table is sorted by
 * address), for a runtime's trackers, once per process. */
const struct elf_sym *elf_symbols_find(const struct elf_symbols *s,
				       const char *name);
/* The name of sym, one of s's symbols: in s, or decoded into buf (so
 * valid until buf is reused or s changes). */
const char *elf_symbols_name(const struct elf_symbols *s,
			     const struct elf_sym *sym,
			     char buf[ELF_SYM_NAME_BUF]);
/* Every name in order, each decoded once: start with
 * elf_symbols_names_start, then elf_symbols_names_next gives the name of
 * s->syms[it->i] and steps on (NULL after the last). */
struct elf_symbols_names_iter {
	size_t i;   /* the symbol whose name comes next */
	size_t pos; /* its record */
	size_t len; /* the length of the name in buf */
	char buf[ELF_SYM_NAME_BUF];
};
void elf_symbols_names_start(struct elf_symbols_names_iter *it);
const char *elf_symbols_names_next(const struct elf_symbols *s,
				   struct elf_symbols_names_iter *it);
size_t elf_symbols_memory(const struct elf_symbols *s);
/* Add src's function symbols to dst (one per address, dst's first).
 * 0, -ENOMEM or -E2BIG (dst unchanged then). */
int elf_symbols_merge(struct elf_symbols *dst, const struct elf_symbols *src);

/* process.executable.build_id.htlhash of an open file: first 16 bytes of
 * SHA-256(first 4 KiB || last 4 KiB || be64(file size)), as 32 hex digits. */
int elf_htlhash_fd(int fd, char out[33]);

#endif
