/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a frame became in the current window, by where it was: a native or
 * kernel pc of one process, in one mapping of one file. Most samples of a
 * busy process differ only in their leaf frames (an interpreter's loop, a
 * server's request path), so the stack cache misses while most of their
 * frames were named and interned before; here they are found by their
 * address alone, skipping the file's symbols, its DWARF lines and the
 * encoder's interning. The value is opaque to the symbolizer: the caller
 * sets it once the frame is encoded (the encoder's index of its Location)
 * and clears the memo when that index stops meaning anything (a new
 * window).
 *
 * Only frames named for good are kept: none whose file still wants
 * something (lines to read, a reload, a debuginfod answer) or whose code
 * moves (JIT, runtime frames).
 */
#ifndef OTELPROF_FRAMES_FRAME_MEMO_H
#define OTELPROF_FRAMES_FRAME_MEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "util/idxmap.h"

/* Entries per window at most; a full memo is emptied before the next
 * stack (frame_memo_begin) and fills again (a 60 s window of the real
 * host's services holds a few thousand). */
#define FRAME_MEMO_MAX (1u << 15)

/* Where a frame was: every field compared. serial 0 with no mapping is
 * a kernel frame. */
struct frame_memo_key {
	uint64_t serial;	     /* the process's (never reused) */
	uint64_t pc;		     /* as unwound, flags included */
	uint64_t map_start, map_end; /* the mapping it lay in */
	uint64_t map_offset, inode;  /* and its file */
	uint32_t dev;		     /* major << 20 | minor */
	uint32_t return_address;     /* 1: named at pc - 1 */
};

struct frame_memo_entry {
	struct frame_memo_key key;
	int32_t value;	    /* 0: not set yet */
	uint32_t loop_mask; /* runtimes whose loop function this frame is */
};

struct frame_memo {
	struct frame_memo_entry *v;
	size_t n, cap;
	struct idxmap index;
	uint64_t hits, misses; /* for tests and benchmarks */
};

void frame_memo_init(struct frame_memo *m);
void frame_memo_free(struct frame_memo *m);
/* Forget every entry (their values meant the window that ended). */
void frame_memo_clear(struct frame_memo *m);
/* Before a stack's frames are looked up: a full memo is emptied here, so
 * that ids reserved for one stack stay valid until its frames are set. */
void frame_memo_begin(struct frame_memo *m);
/* The entry of k with its value set, or NULL. */
const struct frame_memo_entry *frame_memo_find(struct frame_memo *m,
					       const struct frame_memo_key *k);
/* An entry for k whose value the caller sets after encoding (its index
 * + 1, for frame_memo_set), or 0 if none could be made (full, or out of
 * memory). The same key gives the same entry until the memo is cleared. */
uint32_t frame_memo_reserve(struct frame_memo *m,
			    const struct frame_memo_key *k, uint32_t loop_mask);
/* Sets the value of entry id (frame_memo_reserve's); 0 and values <= 0
 * are ignored. */
void frame_memo_set(struct frame_memo *m, uint32_t id, int32_t value);

#endif
