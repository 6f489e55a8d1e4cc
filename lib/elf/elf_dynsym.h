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

/* The same from fd's .symtab (a static variable: not in .dynsym). */
int elf_symtab_lookup(int fd, const char *prefix, const char *const *names,
		      size_t n, uint64_t *values);

#endif
