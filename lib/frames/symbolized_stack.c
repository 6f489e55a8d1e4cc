// SPDX-License-Identifier: Apache-2.0
#include "frames/symbolized_stack.h"

#include <stdlib.h>
#include <string.h>

#define BLOCK_BYTES (64u << 10)

/* A block is filled and never moved, so copies already handed out stay
 * where they are while later ones are added. */
struct symbolized_strings {
	struct symbolized_strings *next;
	size_t len, cap;
	char data[];
};

void symbolized_stack_init(struct symbolized_stack *st)
{
	memset(st, 0, sizeof(*st));
	st->cacheable = true;
}

void symbolized_stack_free(struct symbolized_stack *st)
{
	struct symbolized_strings *b = st->strings;

	while (b) {
		struct symbolized_strings *next = b->next;

		free(b);
		b = next;
	}
	free(st->inl);
	memset(st, 0, sizeof(*st));
}

void symbolized_stack_clear(struct symbolized_stack *st)
{
	struct symbolized_strings *b = st->strings, *keep = NULL;

	/* Keep one ordinary block for the next stack, free the rest (a
	 * stack of long names must not pin megabytes). */
	while (b) {
		struct symbolized_strings *next = b->next;

		if (!keep && b->cap == BLOCK_BYTES) {
			keep = b;
			keep->len = 0;
			keep->next = NULL;
		} else {
			free(b);
		}
		b = next;
	}
	st->strings = keep;
	st->n = 0;
	st->ninl = 0;
	st->cacheable = true;
	st->strings_dropped = false;
	st->unmapped = false;
	st->nwant = 0;
	st->wants_dropped = false;
}

static size_t strings_used(const struct symbolized_stack *st)
{
	size_t n = 0;

	for (const struct symbolized_strings *b = st->strings; b; b = b->next)
		n += b->cap;
	return n;
}

/* A copy of s owned by the stack; NULL stays NULL. */
static const char *copy_string(struct symbolized_stack *st, const char *s)
{
	struct symbolized_strings *b = st->strings;
	size_t len;

	if (!s)
		return NULL;
	len = strlen(s) + 1;
	if (!b || b->cap - b->len < len) {
		size_t cap = len > BLOCK_BYTES ? len : BLOCK_BYTES;

		if (strings_used(st) + cap > SYMBOLIZED_MAX_STRING_BYTES ||
		    !(b = malloc(sizeof(*b) + cap))) {
			st->strings_dropped = true;
			return NULL;
		}
		b->len = 0;
		b->cap = cap;
		/* New blocks go first; what is left of the last one is not
		 * used again (a little room, never a copy, is lost). */
		b->next = st->strings;
		st->strings = b;
	}
	memcpy(b->data + b->len, s, len);
	b->len += len;
	return b->data + b->len - len;
}

void symbolized_stack_add(struct symbolized_stack *st, const struct frame *f)
{
	uint32_t ninl = f->ninlined < SYMBOLIZED_MAX_INLINES
				? f->ninlined
				: SYMBOLIZED_MAX_INLINES;
	struct frame_inline *x;
	struct frame *d;

	if (st->n >= SYMBOLIZED_MAX_FRAMES)
		return;
	d = &st->frames[st->n++];
	*d = *f;
	d->function = copy_string(st, f->function);
	d->function_system = copy_string(st, f->function_system);
	d->function_file = copy_string(st, f->function_file);
	d->mapping_file = copy_string(st, f->mapping_file);
	d->build_id = copy_string(st, f->build_id);
	d->htlhash = copy_string(st, f->htlhash);
	d->build_id_go = copy_string(st, f->build_id_go);
	d->inlined = NULL;
	d->ninlined = 0;
	if (!ninl)
		return;
	/* Room for every frame's most, taken once: the pool never moves,
	 * so earlier frames' pointers into it hold. */
	if (!st->inl &&
	    !(st->inl = malloc((size_t)SYMBOLIZED_MAX_FRAMES *
			       SYMBOLIZED_MAX_INLINES * sizeof(*st->inl)))) {
		st->strings_dropped = true;
		return;
	}
	x = st->inl + st->ninl;
	for (uint32_t i = 0; i < ninl; i++) {
		x[i].function = copy_string(st, f->inlined[i].function);
		x[i].function_system =
			copy_string(st, f->inlined[i].function_system);
		x[i].function_file =
			copy_string(st, f->inlined[i].function_file);
		x[i].line = f->inlined[i].line;
		x[i].start_line = f->inlined[i].start_line;
	}
	st->ninl += ninl;
	d->inlined = x;
	d->ninlined = ninl;
}

void symbolized_stack_want(struct symbolized_stack *st,
			   enum symbolized_want_kind kind,
			   struct proc_mapping *m, struct elf_file *file)
{
	for (uint32_t i = 0; i < st->nwant; i++)
		if (st->wants[i].kind == kind && st->wants[i].m == m)
			return;
	if (st->nwant == SYMBOLIZED_MAX_WANTS) {
		st->wants_dropped = true;
		return;
	}
	st->wants[st->nwant++] = (struct symbolized_want){kind, m, file};
}
