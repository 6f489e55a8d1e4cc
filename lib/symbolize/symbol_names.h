/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Display names of one file's symbols: demangled on first use and kept
 * with the file, so a hot C++ or Rust function is demangled once, not at
 * every stack it appears in. Bounded per file; past the bound names are
 * demangled into the caller's buffer each time (still right, just slower).
 */
#ifndef OTELPROF_SYMBOLIZE_SYMBOL_NAMES_H
#define OTELPROF_SYMBOLIZE_SYMBOL_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "symbolize/demangle.h"
#include "util/idxmap.h"
#include "util/str_arena.h"

struct mem_account;

#define SYMBOL_NAMES_MAX_BYTES (2u << 20) /* per file */

struct symbol_names {
	struct idxmap index; /* hash(symbol id) -> entry */
	struct symbol_name_entry {
		uint32_t id;  /* the caller's symbol id (index in its table) */
		uint32_t off; /* into arena; UINT32_MAX: not mangled */
	} * entries;
	uint32_t n, cap;
	struct str_arena arena;
	struct mem_account *acct; /* charged for what is kept; may be NULL */
	uint64_t charged;
};

void symbol_names_init(struct symbol_names *c);
void symbol_names_free(struct symbol_names *c);
/*
 * Display name of symbol `id` whose raw name is raw: the demangled form,
 * or raw itself if it is not a mangled C++/Rust name. The result lives in
 * the cache or in scratch, until the next call.
 */
const char *symbol_names_get(struct symbol_names *c, uint32_t id,
			     const char *raw,
			     char scratch[DEMANGLE_MAX_OUTPUT]);
size_t symbol_names_memory(const struct symbol_names *c);

#endif
