/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PLT stubs as symbols named "target@plt", as binutils and perf name them
 * (the stubs have no symbols of their own, so a pc in one would take the
 * name of whatever symbol precedes the PLT, often _init). Lazy-binding
 * layout: entry i of .plt.sec, or else entry i + 1 of .plt (entry 0 calls
 * the resolver), is the stub of .rela.plt's relocation i; 16 bytes each.
 */
#ifndef OTELPROF_ELF_PLT_SYMBOLS_H
#define OTELPROF_ELF_PLT_SYMBOLS_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

#define PLT_SYMBOLS_MAX 65536u

typedef int (*plt_symbol_fn)(void *ctx, uint64_t addr, uint64_t size,
			     const char *name, size_t len);

/* Calls add for every stub found; returns add's first error, else 0.
 * Entries that do not hold up are skipped. */
int plt_symbols_scan(Elf *elf, size_t shstrndx, plt_symbol_fn add, void *ctx);

#endif
