// SPDX-License-Identifier: Apache-2.0
#include "elf/dwarf_unit.h"
#include "util/bsearch_le.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DWARF_UNIT_MAX_RANGES_PER_DIE 4096u
#define DWARF_UNIT_MAX_IMPORTS	      16u /* imported units, nested */

static int intern(struct str_intern *strs, const char *s,
		  const struct grow_charge *c, uint32_t *id)
{
	int err;

	*id = DWARF_UNIT_NONE;
	if (!s)
		return 0;
	err = str_intern_add(strs, s, strnlen(s, STR_INTERN_MAX_LEN + 1), c,
			     id);
	/* A name longer than any real one is left unnamed, not fatal. */
	if (err == -E2BIG) {
		*id = DWARF_UNIT_NONE;
		return 0;
	}
	return err;
}

static int read_lines(struct dwarf_unit *u, Dwarf_Die *cudie,
		      struct str_intern *strs, const struct grow_charge *c)
{
	Dwarf_Lines *lines;
	size_t n;
	const char *last_src = NULL;
	uint32_t last_id = DWARF_UNIT_NONE;

	if (dwarf_getsrclines(cudie, &lines, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		struct dwarf_unit_line row, *prev;
		Dwarf_Addr addr;
		bool end = false;
		int lineno = 0, err;
		const char *src;

		if (!l || dwarf_lineaddr(l, &addr))
			continue;
		if (dwarf_lineendsequence(l, &end))
			end = false;
		if (dwarf_lineno(l, &lineno) || lineno < 0)
			lineno = 0;
		row = (struct dwarf_unit_line){addr, (uint32_t)lineno,
					       DWARF_UNIT_END};
		if (!end) {
			src = dwarf_linesrc(l, NULL, NULL);
			if (src != last_src || !i) {
				err = intern(strs, src, c, &last_id);
				if (err)
					return err;
				last_src = src;
			}
			row.file = last_id;
		}
		/* A row saying what the one before said answers nothing
		 * new: the search lands on the one before instead. */
		prev = u->nlines ? &u->lines[u->nlines - 1] : NULL;
		if (!end && prev && prev->file != DWARF_UNIT_END &&
		    prev->file == row.file && prev->line == row.line)
			continue;
		err = grow_array(&u->lines, &u->lines_cap, u->nlines + 1,
				 sizeof(*u->lines), 256, DWARF_UNIT_MAX_LINES,
				 c);
		if (err)
			return err;
		u->lines[u->nlines++] = row;
	}
	return 0;
}

static const char *call_file(Dwarf_Die *cu, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word idx;
	Dwarf_Files *files;
	size_t n;

	if (!dwarf_attr(die, DW_AT_call_file, &a) ||
	    dwarf_formudata(&a, &idx) || dwarf_getsrcfiles(cu, &files, &n) ||
	    idx >= n)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static uint32_t call_line(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word v;

	if (!dwarf_attr(die, DW_AT_call_line, &a) || dwarf_formudata(&a, &v) ||
	    v > UINT32_MAX)
		return 0;
	return (uint32_t)v;
}

static const char *linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		return dwarf_formstring(&a);
	return NULL;
}

struct walk {
	struct dwarf_unit *u;
	Dwarf_Die *cu;
	struct str_intern *strs;
	const struct grow_charge *c;
	size_t dies;
	unsigned imports;
};

static int add_inline(struct walk *w, Dwarf_Die *die, uint32_t depth)
{
	struct dwarf_unit_inline e = {.parent = DWARF_UNIT_NONE,
				      .depth = depth};
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	unsigned nr = 0;
	int err;

	if ((err = intern(w->strs, dwarf_diename(die), w->c, &e.name)) ||
	    (err = intern(w->strs, linkage_name(die), w->c, &e.linkage_name)) ||
	    (err = intern(w->strs, call_file(w->cu, die), w->c, &e.call_file)))
		return err;
	e.call_line = call_line(die);
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0 &&
	       nr++ < DWARF_UNIT_MAX_RANGES_PER_DIE) {
		if (hi <= lo)
			continue;
		err = grow_array(&w->u->inl, &w->u->inl_cap, w->u->ninl + 1,
				 sizeof(*w->u->inl), 64, DWARF_UNIT_MAX_INLINES,
				 w->c);
		if (err)
			return err;
		e.lo = lo;
		e.hi = hi;
		w->u->inl[w->u->ninl++] = e;
	}
	return 0;
}

static bool has_pc_ranges(Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;

	return dwarf_ranges(die, 0, &base, &lo, &hi) > 0;
}

/*
 * The DIEs under parent that may hold code, as dwarf_getscopes visits
 * them: a DIE without address ranges is not entered (types, variables,
 * declarations), an imported unit is entered where it is imported.
 */
static int walk_children(struct walk *w, Dwarf_Die *parent, uint32_t depth)
{
	Dwarf_Die child;
	int r;

	if (depth >= DWARF_UNIT_MAX_NEST || dwarf_child(parent, &child))
		return 0;
	do {
		int tag = dwarf_tag(&child), err;

		if (++w->dies > DWARF_UNIT_MAX_DIES)
			return -E2BIG;
		if (tag == DW_TAG_imported_unit) {
			Dwarf_Attribute a;
			Dwarf_Die unit;

			if (w->imports >= DWARF_UNIT_MAX_IMPORTS ||
			    !dwarf_attr(&child, DW_AT_import, &a) ||
			    !dwarf_formref_die(&a, &unit))
				continue;
			w->imports++;
			err = walk_children(w, &unit, depth + 1);
			w->imports--;
			if (err)
				return err;
			continue;
		}
		if (!has_pc_ranges(&child))
			continue;
		if (tag == DW_TAG_inlined_subroutine &&
		    (err = add_inline(w, &child, depth)))
			return err;
		if ((err = walk_children(w, &child, depth + 1)))
			return err;
	} while ((r = dwarf_siblingof(&child, &child)) == 0);
	return 0;
}

static int inline_cmp(const void *a, const void *b)
{
	const struct dwarf_unit_inline *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1; /* the outer one first */
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* Sorted by start, outer ranges first: each entry's parent is the nearest
 * open range before it that holds it (a stack of open ranges). Ranges that
 * overlap without nesting (broken DWARF) just get no parent there. */
static int link_parents(struct dwarf_unit *u, const struct grow_charge *c)
{
	uint32_t *stack = NULL;
	size_t n = 0, cap = 0;

	if (!u->ninl)
		return 0;
	qsort(u->inl, u->ninl, sizeof(*u->inl), inline_cmp);
	for (size_t i = 0; i < u->ninl; i++) {
		struct dwarf_unit_inline *e = &u->inl[i];
		int err;

		while (n && !(u->inl[stack[n - 1]].lo <= e->lo &&
			      e->hi <= u->inl[stack[n - 1]].hi))
			n--;
		e->parent = n ? stack[n - 1] : DWARF_UNIT_NONE;
		err = grow_array(&stack, &cap, n + 1, sizeof(*stack), 64,
				 DWARF_UNIT_MAX_INLINES, c);
		if (err) {
			if (c && c->uncharge)
				c->uncharge(c->ctx, cap * sizeof(*stack));
			free(stack);
			return err;
		}
		stack[n++] = (uint32_t)i;
	}
	if (c && c->uncharge)
		c->uncharge(c->ctx, cap * sizeof(*stack));
	free(stack);
	return 0;
}

int dwarf_unit_build(struct dwarf_unit *u, Dwarf_Die *cudie,
		     struct str_intern *strs, const struct grow_charge *c)
{
	struct walk w = {u, cudie, strs, c, 0, 0};
	int err;

	if ((err = read_lines(u, cudie, strs, c)) ||
	    (err = walk_children(&w, cudie, 1)))
		return err;
	return link_parents(u, c);
}

static const char *str(const struct str_intern *strs, uint32_t id)
{
	return id == DWARF_UNIT_NONE ? NULL : str_intern_get(strs, id);
}

/* How far up from the last range starting at or before a pc the one that
 * holds it may be (siblings that ended before it): past this, broken. */
#define DWARF_UNIT_MAX_CLIMB 256u

int dwarf_unit_lookup(const struct dwarf_unit *u, const struct str_intern *strs,
		      uint64_t vaddr, struct dwarf_where *out)
{
	size_t k =
		bsearch_le_count(u->lines, u->nlines, sizeof(*u->lines),
				 offsetof(struct dwarf_unit_line, addr), vaddr);
	const char *file;
	uint32_t line, r;

	memset(out, 0, sizeof(*out));
	/* as dwarf_getsrc_die: the last row at or before vaddr, unless it
	 * ends a sequence */
	if (!k || u->lines[k - 1].file == DWARF_UNIT_END)
		return -ENOENT;
	file = str(strs, u->lines[k - 1].file);
	line = u->lines[k - 1].line;
	k = bsearch_le_count(u->inl, u->ninl, sizeof(*u->inl),
			     offsetof(struct dwarf_unit_inline, lo), vaddr);
	r = k ? (uint32_t)(k - 1) : DWARF_UNIT_NONE;
	for (unsigned climb = 0; r != DWARF_UNIT_NONE && vaddr >= u->inl[r].hi;
	     climb++)
		r = climb < DWARF_UNIT_MAX_CLIMB ? u->inl[r].parent
						 : DWARF_UNIT_NONE;
	/* Innermost first: each is a function inlined here, its call site
	 * the line in the scope around it. */
	for (; r != DWARF_UNIT_NONE && out->ninlined < DWARF_LINES_MAX_DEPTH;
	     r = u->inl[r].parent) {
		const struct dwarf_unit_inline *e = &u->inl[r];

		out->inl[out->ninlined].name = str(strs, e->name);
		out->inl[out->ninlined].linkage_name =
			str(strs, e->linkage_name);
		out->inl[out->ninlined].file = file;
		out->inl[out->ninlined].line = line;
		out->ninlined++;
		file = str(strs, e->call_file);
		line = e->call_line;
	}
	out->file = file;
	out->line = line;
	return 0;
}

size_t dwarf_unit_memory(const struct dwarf_unit *u)
{
	return u->lines_cap * sizeof(*u->lines) + u->inl_cap * sizeof(*u->inl);
}

void dwarf_unit_free(struct dwarf_unit *u, const struct grow_charge *c)
{
	if (c && c->uncharge)
		c->uncharge(c->ctx, dwarf_unit_memory(u));
	free(u->lines);
	free(u->inl);
	memset(u, 0, sizeof(*u));
}
