/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A few named symbols of a file's .dynsym, data symbols included (the
 * symbolizer keeps functions only): where an interpreter or a JVM exports
 * the tables the profiler reads.
 */
#ifndef OTELPROF_ELF_ELF_DYNSYM_H
#define OTELPROF_ELF_ELF_DYNSYM_H

#include <stddef.h>
#include <stdint.h>

/* At most this many entries of a .dynsym are looked at. */
#define ELF_DYNSYM_MAX_SYMS (1u << 20)

/*
 * values[k] = the ELF value of names[k] in fd's .dynsym (0: absent or
 * undefined; the last definition if several); a name ending in '*'
 * matches every symbol it starts (V8's v8dbg_* names end in the field's
 * type, which changes between versions). Only names starting with
 * prefix (NULL: any) are compared, a cheap filter for long tables. libelf
 * bounds every read. Returns how many names were found, or -ENOENT if fd
 * is not an ELF file.
 */
int elf_dynsym_lookup(int fd, const char *prefix, const char *const *names,
		      size_t n, uint64_t *values);

/* At most this many program headers are looked at. */
#define ELF_DYNSYM_MAX_PHDRS 256

/*
 * The len bytes a file holds for vaddr (a data symbol's initial value: a
 * constant the process cannot have changed, read from the file and not
 * from its memory), through the PT_LOAD segment whose file bytes cover
 * them. 0, -ENOENT (no such segment, not ELF) or -EIO.
 */
int elf_dynsym_file_bytes(int fd, uint64_t vaddr, void *buf, size_t len);

/* The same from fd's .symtab (a static variable: not in .dynsym). */
int elf_symtab_lookup(int fd, const char *prefix, const char *const *names,
		      size_t n, uint64_t *values);
/* ... with each symbol's size (st_size) in sizes[k]. */
int elf_symtab_lookup_sized(int fd, const char *prefix,
			    const char *const *names, size_t n,
			    uint64_t *values, uint64_t *sizes);

#endif
