/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Turns the raw addresses of one sample into its frames (struct
 * symbolized_stack): kernel frames through kallsyms, user frames through
 * the process's mappings and the ELF symbols of the mapped files, JIT
 * frames through perf maps and jitdump files, the frames a runtime's
 * walk reported through that runtime (runtimes/runtime.h), placed by its
 * mode. It knows nothing of the encoder: the agent hands the frames to
 * the profile builder.
 */
#ifndef OTELPROF_FRAMES_STACK_SYMBOLIZER_H
#define OTELPROF_FRAMES_STACK_SYMBOLIZER_H

#include <stdbool.h>
#include <stdint.h>

#include "elf/dwarf_lines.h"
#include "elf/elf_file.h"
#include "frames/frame.h"
#include "frames/frame_memo.h"
#include "frames/symbolized_stack.h"
#include "process/process_table.h"
#include "profiler_types.h"
#include "runtimes/runtime.h"
#include "symbolize/demangle.h"
#include "symbolize/jit_process.h"
#include "symbolize/kallsyms.h"
#include "util/idxmap.h"

struct file_cache;

/* What the symbolizer counts (for otelprof_stats). */
struct symbolizer_counters {
	uint64_t jit_frames; /* frames named from JIT symbol files */
	struct jit_stats jit;
};

struct stack_symbolizer {
	const struct kallsyms *ksyms; /* may be empty */
	struct process_table *procs;
	struct file_cache *files; /* the mapped files' symbols */
	struct symbolizer_counters counters;
	/* Frames named before in this window, by address (frame_memo.h) */
	struct frame_memo memo;
	/* The runtimes that name frames, by the id samples carry as their
	 * interp_kind (ops NULL: none; its frames are dropped). */
	struct {
		const struct runtime_ops *ops;
		void *state;
		uint8_t frame_kind; /* enum frame_kind */
	} runtimes[OTELPROF_RT_MAX];
	char jit_name[JIT_NAME_MAX + 1];	/* scratch for jit_name_split */
	char demangle_buf[DEMANGLE_MAX_OUTPUT]; /* names past a file's cache */
	char name_buf[ELF_SYM_NAME_BUF];	/* a symbol's name, decoded */
	/* One frame's inlined functions (DWARF) and their demangled names */
	struct dwarf_where where;
	struct frame_inline inl[DWARF_LINES_MAX_DEPTH];
	char inl_names[4][DEMANGLE_MAX_OUTPUT];
};

void stack_symbolizer_init(struct stack_symbolizer *s,
			   const struct kallsyms *ksyms,
			   struct process_table *procs,
			   struct file_cache *files);
/* Runtime ops (its state: rt) names the frames of samples whose
 * interp_kind is its id, as frames of frame_kind. */
void stack_symbolizer_add_runtime(struct stack_symbolizer *s,
				  const struct runtime_ops *ops, void *rt,
				  uint8_t frame_kind);
/* Does a runtime name the frames of samples of this interp_kind? */
bool stack_symbolizer_has_runtime(const struct stack_symbolizer *s,
				  uint32_t interp_kind);
/* The values the caller gave the memo (encoded frames) mean nothing
 * from now on: a new window. */
void stack_symbolizer_new_window(struct stack_symbolizer *s);
/* The n frames of a stack were encoded as values[0..n-1]: the memo
 * keeps the values of those it waits for (frame.memo_id). */
void stack_symbolizer_encoded(struct stack_symbolizer *s,
			      const struct frame *frames, uint32_t n,
			      const int32_t *values);
/* p is about to be freed: drop its JIT symbols (p->jit). */
void stack_symbolizer_forget(struct stack_symbolizer *s, struct process *p);
/* Also drops those of the processes still in the table. */
void stack_symbolizer_free(struct stack_symbolizer *s);
/* The frames of a sample of process p into out (leaf first): its kernel
 * frames and the user frames (pcs, leaf first) unwound for it, of which
 * the last 2 * n_interp words are interpreter frames {code, instruction},
 * put above the interpreter's evaluation-loop frames that ran them; for
 * interp_kind OTELPROF_INTERP_HOTSPOT they are Java frames, each naming
 * the native frame it replaces. Against the mappings the process table
 * knows now: a pc in none sets out->unmapped (the caller may have p
 * rescanned and call again). 0, or -EINVAL for counts out of range. */
int stack_symbolize(struct stack_symbolizer *s, struct process *p,
		    const uint64_t *kstack, uint32_t nk, const uint64_t *ustack,
		    uint32_t nu, uint32_t n_interp, uint32_t interp_kind,
		    uint64_t now_ns, struct symbolized_stack *out);

#endif
