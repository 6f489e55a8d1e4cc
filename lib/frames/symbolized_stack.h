/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The frames of one sample's stack, leaf first, as the symbolizer hands
 * them to the encoder. The stack owns copies of every string its frames
 * name: a rescan before they are encoded can free the mappings' paths, and
 * loading one file's symbols can evict another's, so pointers into those
 * would not last until the frames are encoded. Reused from stack to stack.
 */
#ifndef OTELPROF_FRAMES_SYMBOLIZED_STACK_H
#define OTELPROF_FRAMES_SYMBOLIZED_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frames/frame.h"
#include "profiler_types.h"

#define SYMBOLIZED_MAX_FRAMES                                                  \
	(OTELPROF_MAX_KERNEL_FRAMES + OTELPROF_MAX_USER_FRAMES +               \
	 OTELPROF_MAX_INTERP_FRAMES)
/* Strings of one stack at most: 767 frames of long C++ names and paths
 * fit many times over; past it a frame keeps its address, loses its
 * names, and the stack counts as `strings_dropped`. */
#define SYMBOLIZED_MAX_STRING_BYTES (4u << 20)
/* Inlined functions kept per frame (as DWARF_LINES_MAX_DEPTH). */
#define SYMBOLIZED_MAX_INLINES 16u

struct symbolized_strings; /* blocks that never move (symbolized_stack.c) */
struct proc_mapping;
struct elf_file;

/* What a frame found missing in its file, for the caller to do: the
 * symbolizer names what is there and changes nothing. */
enum symbolized_want_kind {
	SYMBOLIZED_WANT_RESOLVE,    /* the mapping's file is not resolved */
	SYMBOLIZED_WANT_RELOAD,	    /* its symbols were evicted, reload due */
	SYMBOLIZED_WANT_DEBUGINFOD, /* a server may have its symbols */
	SYMBOLIZED_WANT_LINES,	    /* its DWARF lines not read yet */
	SYMBOLIZED_WANT_GO_LINES,   /* its Go line table not read yet */
};
/* Distinct wants kept per stack; more set wants_dropped. */
#define SYMBOLIZED_MAX_WANTS 16u
struct symbolized_want {
	enum symbolized_want_kind kind;
	struct proc_mapping *m; /* the sample's process's mapping */
	struct elf_file *file;	/* RELOAD, DEBUGINFOD, LINES: its entry */
};

struct symbolized_stack {
	struct frame frames[SYMBOLIZED_MAX_FRAMES];
	uint32_t n;
	/* False when a frame's name may still come (unnamed JIT code, a
	 * debuginfod lookup under way) or its code moves (Java): such a
	 * stack must not be reused for later samples. */
	bool cacheable;
	bool strings_dropped; /* some frame lost its names (see above) */
	/* A native pc lay in no mapping the process table knows: code
	 * mapped since its last scan (dlopen, JIT), or a bad pc. */
	bool unmapped;
	struct symbolized_want wants[SYMBOLIZED_MAX_WANTS];
	uint32_t nwant;
	bool wants_dropped;
	struct frame_inline *inl; /* the frames' inlined functions */
	uint32_t ninl;
	struct symbolized_strings *strings;
};

void symbolized_stack_init(struct symbolized_stack *st);
void symbolized_stack_free(struct symbolized_stack *st);
/* Empty it for the next stack (its memory is kept). */
void symbolized_stack_clear(struct symbolized_stack *st);
/* Append a copy of f, its strings and inlined functions. Frames past
 * SYMBOLIZED_MAX_FRAMES are dropped, as the kernel drops deeper ones. */
void symbolized_stack_add(struct symbolized_stack *st, const struct frame *f);
/* Note a want (once per kind and mapping). */
void symbolized_stack_want(struct symbolized_stack *st,
			   enum symbolized_want_kind kind,
			   struct proc_mapping *m, struct elf_file *file);

#endif
