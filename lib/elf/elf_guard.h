/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shape of an ELF file checked before any ELF library looks at it.
 * libelf trusts a file's own counts: elf_begin allocates a descriptor per
 * announced section (8M sections in a 12 KiB sparse file cost it 2 GB) and
 * caches every section it is asked to read (overlapping 256 MiB sections
 * multiply). These checks are done by hand on purpose, with a few preads:
 * no library offers "validate before you allocate".
 */
#ifndef OTELPROF_ELF_ELF_GUARD_H
#define OTELPROF_ELF_ELF_GUARD_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

/* More sections than any executable or library has: real ones have tens,
 * huge C++ ones a few hundred. */
#define ELF_GUARD_MAX_SECTIONS	  16384u
#define ELF_GUARD_MAX_PHDRS	  4096u
#define ELF_GUARD_MAX_SHSTRTAB	  (4u << 20)
#define ELF_GUARD_MAX_NOTE_BYTES  (1u << 20)  /* one PT_NOTE segment */
#define ELF_GUARD_MAX_NOTES_TOTAL (4u << 20)  /* all of them */
#define ELF_GUARD_CHUNK		  (64u << 10) /* streaming read size */

/* Where the bytes come from: a file (pread, never mmap: a hostile process
 * can truncate it under us) or an image in memory (the vDSO). */
struct elf_source {
	int fd; /* -1 for memory */
	const unsigned char *mem;
	uint64_t size; /* file size (st_size) or image length */
};

int elf_source_from_fd(int fd, struct elf_source *src);
void elf_source_from_mem(const void *buf, size_t len, struct elf_source *src);
/* Exactly len bytes at off: 0, -ENOEXEC when the range is outside the
 * file, or a read error. */
int elf_source_read(const struct elf_source *src, uint64_t off, void *buf,
		    size_t len);

enum elf_guard_result {
	ELF_GUARD_OK = 0,
	/* The program headers are usable but the section table is not (too
	 * many sections, extended numbering, outside the file, section
	 * contents adding up to more than the file holds): use segments
	 * only, count the file as malformed. */
	ELF_GUARD_SECTIONS_HOSTILE = 1,
};

struct elf_guard {
	Elf64_Ehdr eh;
	Elf64_Phdr *ph; /* eh.e_phnum entries, malloc'd (<= 229 KiB) */
	size_t phnum;
	/* What a library reading this file's headers holds: program and
	 * section headers and the section names (ELF_GUARD_OK only). */
	uint64_t header_bytes;
};

/*
 * Read and check the ELF header (64-bit, little-endian) and program
 * headers. Returns ELF_GUARD_OK, ELF_GUARD_SECTIONS_HOSTILE, or a
 * negative errno (-ENOEXEC: not an ELF we read). On success free g with
 * elf_guard_free().
 */
int elf_guard_check(const struct elf_source *src, struct elf_guard *g);
void elf_guard_free(struct elf_guard *g);

#endif
