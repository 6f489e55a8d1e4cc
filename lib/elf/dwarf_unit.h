/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One compile unit's lines and inlined functions, copied out of libdw into
 * compact sorted arrays (interned strings): what a lookup needs once the
 * unit has been read, so the DWARF image and libdw's state can go while
 * the unit's pcs are still symbolized. Lines: one row per address where
 * the file or line changes (16 bytes). Inlined functions: one entry per
 * address range of a DW_TAG_inlined_subroutine, with the innermost range
 * around it as parent, so the chain at a pc is a binary search and a walk
 * up (it replaces dwarf_getscopes' walk of the unit's DIE tree per pc).
 */
#ifndef OTELPROF_ELF_DWARF_UNIT_H
#define OTELPROF_ELF_DWARF_UNIT_H

#include <elfutils/libdw.h>
#include <stddef.h>
#include <stdint.h>

#include "elf/dwarf_lines.h"
#include "util/grow.h"
#include "util/str_intern.h"

#define DWARF_UNIT_MAX_LINES   (1u << 22) /* rows per unit */
#define DWARF_UNIT_MAX_INLINES (1u << 21) /* inlined ranges per unit */
#define DWARF_UNIT_MAX_DIES    (1u << 22) /* DIEs walked per unit */
#define DWARF_UNIT_MAX_NEST    64u	  /* DIE tree depth walked */
#define DWARF_UNIT_NONE	       UINT32_MAX

struct dwarf_unit_line {
	uint64_t addr;
	uint32_t line;
	uint32_t file; /* string id; DWARF_UNIT_END after a sequence */
};
#define DWARF_UNIT_END (UINT32_MAX - 1)

struct dwarf_unit_inline {
	uint64_t lo, hi;
	uint32_t parent; /* the innermost entry around this one, or NONE */
	uint32_t name, linkage_name, call_file; /* string ids or NONE */
	uint32_t call_line;
	uint32_t depth; /* in the DIE tree: orders equal ranges */
};

struct dwarf_unit {
	struct dwarf_unit_line *lines;
	size_t nlines, lines_cap;
	struct dwarf_unit_inline *inl;
	size_t ninl, inl_cap;
};

/* Reads the unit at cudie into u (zeroed), strings into strs, every
 * allocation charged to c. 0; -E2BIG past a bound above, -EDQUOT,
 * -ENOMEM (u holds what was read: free it). A unit without a line table
 * is read as empty. */
int dwarf_unit_build(struct dwarf_unit *u, Dwarf_Die *cudie,
		     struct str_intern *strs, const struct grow_charge *c);
/* 0 and *out for vaddr, or -ENOENT: no line there. Strings are strs'. */
int dwarf_unit_lookup(const struct dwarf_unit *u, const struct str_intern *strs,
		      uint64_t vaddr, struct dwarf_where *out);
size_t dwarf_unit_memory(const struct dwarf_unit *u);
void dwarf_unit_free(struct dwarf_unit *u, const struct grow_charge *c);

#endif
