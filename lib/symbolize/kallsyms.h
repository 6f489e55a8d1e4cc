/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel symbolization from /proc/kallsyms (core kernel and modules). */
#ifndef OTELPROF_SYMBOLIZE_KALLSYMS_H
#define OTELPROF_SYMBOLIZE_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "util/str_arena.h"

#define KALLSYMS_MAX_BYTES   (64u << 20)
#define KALLSYMS_MAX_SYMBOLS 4000000u

struct ksym {
	uint64_t addr;
	uint32_t name;	 /* offset into kallsyms.names */
	uint32_t module; /* offset into names; 0 = core kernel ("") */
};

struct kallsyms {
	struct ksym *syms; /* sorted by addr */
	size_t n;
	struct str_arena names;
	unsigned bad_lines;
};

/* Parse kallsyms text. Keeps text symbols (t/T/w/W). 0 or -errno. */
int kallsyms_parse(const char *text, size_t len, struct kallsyms *out);
/* Load /proc/kallsyms. -EPERM when addresses are hidden (kptr_restrict). */
int kallsyms_load(struct kallsyms *out);
void kallsyms_free(struct kallsyms *k);
/* Symbol containing addr (greatest start <= addr), or NULL. */
const struct ksym *kallsyms_lookup(const struct kallsyms *k, uint64_t addr);
static inline const char *kallsyms_name(const struct kallsyms *k, uint32_t off)
{
	return k->names.buf + off;
}
size_t kallsyms_memory(const struct kallsyms *k);

#endif
