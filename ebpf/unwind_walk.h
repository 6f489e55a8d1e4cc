/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The native user stack walk, one source for every place that walks: the
 * BPF program (profiler.bpf.c: one frame per bpf_loop iteration, or per
 * iteration of the chained programs' bounded loop), the stack-copy
 * unwinder in userspace (lib/unwind/process_unwind.c), the replay test
 * (test/unit/test_unwind_walk.c) and the replay tool over stacks captured
 * from live threads (test/tools/unwind_replay.c). Per frame: the mapping
 * holding the pc (branchless binary search over the process's mappings),
 * the row of its file (branchless binary search in the file's row chunk,
 * over the rows of the pc's page where the file has a page index),
 * then the step (unwind_step.h): from CFI, by frame pointer where the
 * mapping has no table (JIT code, files without CFI), or by the validated
 * frame-pointer fallback where the file has no row for the pc (a gap
 * between FDEs, code above 4 GiB of file vaddr).
 *
 * The includer says how memory is read, with these macros:
 *   UNWIND_READ_U64(ctx, addr, out)  the user stack word at addr, any
 *                                    alignment: 0, or non-zero if unreadable
 *   UNWIND_BIG_MAPPING(ctx, idx)     entry idx of the big mappings array
 *                                    (struct otelprof_bpf_mapping *), NULL
 *                                    past its end
 *   UNWIND_ROWS(ctx, id)             row chunk id (void *), NULL if none
 *   UNWIND_ROW(ctx, rows, idx)       row idx of a chunk (struct
 *                                    unwind_packed_row *), NULL past its end
 * and optionally
 *   UNWIND_RESOLVE_MAPPING(ctx, m)   the mapping the walk stands in, with
 *                                    its file fields (file_id, bias, rows)
 *                                    filled in: the search reads only start
 *                                    and end, so userspace loads a file only
 *                                    once a frame is in it; NULL: none
 *   UNWIND_RUNTIME_HANDOFF(ctx, w)   whether a runtime's own walk takes the
 *                                    frame at w->r.pc instead (code without
 *                                    CFI: a JIT's code cache), non-zero to
 *                                    stop the walk before the frame is
 *                                    written; the includer then hands w to
 *                                    that runtime's program (BPF: a tail
 *                                    call, see sampler_shared.bpf.h), which
 *                                    hands it back. Asked where the pc is in
 *                                    no known mapping (a code cache grows
 *                                    before userspace sees it) and where its
 *                                    mapping has no table, before the
 *                                    frame-pointer step. Default: never.
 *   UNWIND_RUNTIME_HANDOFF_FILE(ctx, w)  the same for a pc in a file
 *                                    whose table has no row for it (V8's
 *                                    builtins, embedded in node), asked
 *                                    only for runtimes that want those
 *                                    (OTELPROF_RT_F_FILE_CODE). Default:
 *                                    never.
 *   UNWIND_PENDING_FP(ctx, w)        whether a frame in a file whose table
 *                                    is still being built is stepped by
 *                                    its frame pointer instead of ending
 *                                    the walk (OTELPROF_RT_F_PENDING_FP).
 *                                    Default: never.
 *   UNWIND_INLINE                    static inline by default
 * ctx is handed through untouched: BPF passes the sample, userspace its
 * stack-copy state.
 *
 * Two seams for runtimes, keyed by process (each runtime's walk is its own
 * BPF program, ebpf/runtimes/):
 * - a hand-off inside the walk (UNWIND_RUNTIME_HANDOFF), for runtimes
 *   whose frames are on the native stack without CFI (HotSpot's compiled
 *   and interpreted frames): the runtime's program writes and steps its
 *   frames with unwind_walk_put and unwind_walk_result below, then gives
 *   the walk back;
 * - a walker after it (CPython), for runtimes that keep their own frame
 *   chain: it runs once this walk has ended, in the same sample, and
 *   appends its frames after the native ones; userspace splices them in.
 *   It needs nothing from this file but the final frame count.
 * The userspace stack-copy walk has neither (a copy's runtime frames
 * unwind by frame pointer).
 */
#ifndef OTELPROF_UNWIND_WALK_H
#define OTELPROF_UNWIND_WALK_H

#include "profiler_types.h"
#include "unwind_types.h"
#include "unwind_step.h"

#if !defined(UNWIND_BIG_MAPPING) || !defined(UNWIND_ROWS) ||                   \
	!defined(UNWIND_ROW)
#error "define UNWIND_BIG_MAPPING, UNWIND_ROWS and UNWIND_ROW before including unwind_walk.h"
#endif

#ifndef UNWIND_RESOLVE_MAPPING
#define UNWIND_RESOLVE_MAPPING(ctx, m) (m)
#endif

#ifndef UNWIND_RUNTIME_HANDOFF
#define UNWIND_RUNTIME_HANDOFF(ctx, w) 0
#endif
#ifndef UNWIND_RUNTIME_HANDOFF_FILE
#define UNWIND_RUNTIME_HANDOFF_FILE(ctx, w) 0
#endif
#ifndef UNWIND_PENDING_FP
#define UNWIND_PENDING_FP(ctx, w) 0
#endif

/*
 * A walk in progress. BPF keeps it in a per-CPU map, not on the stack:
 * values loaded from a map are unknown scalars to the verifier, so it sees
 * the loop body converge after one pass instead of exploring every
 * iteration.
 */
struct unwind_walk {
	struct unwind_regs r;
	uint32_t n;	/* frames written */
	uint32_t error; /* enum otelprof_counter of the stop, 0: none */
	uint32_t flags; /* OTELPROF_SAMPLE_F_COMPLETE / _TRUNCATED */
	/* The current frame came from a frame-pointer step, 0: not;
	 * UNWIND_FP_FALLBACK_FRAME: the fallback's, kept only if its pc is
	 * in a known mapping. */
	uint32_t fp_frame;
	/* The current frame's pc came from a signal frame: exact, not a
	 * return address (looked up at pc, flagged
	 * OTELPROF_USTACK_EXACT_PC). */
	uint32_t exact_pc;
	/* BPF only: the runtime (enum otelprof_runtime) whose program is to
	 * take the frame at r.pc, 0: none; declined: that program found the
	 * frame not its own, so the walk steps it itself. */
	uint32_t runtime;
	uint32_t declined;
	/* The process's mappings: up to OTELPROF_MAX_PROC_MAPPINGS inline,
	 * or (big_n > 0) big_n of the big mappings array from big_base. */
	struct otelprof_bpf_proc proc;
};

/* w->fp_frame of a frame the frame-pointer fallback found. */
#define UNWIND_FP_FALLBACK_FRAME 2

/* 1 if a >= b, without a branch: 1 minus the borrow out of a - b. Any
 * values: [vsyscall] starts above 2^63, where the sign of a - b says
 * nothing. */
UNWIND_INLINE uint64_t unwind_ge_u64(uint64_t a, uint64_t b)
{
	return 1 ^ (((~a & b) | (~(a ^ b) & (a - b))) >> 63);
}

/* The same for 32-bit values (row pcs), where the sign is enough. */
UNWIND_INLINE uint64_t unwind_ge_u32(uint32_t a, uint32_t b)
{
	return 1 ^ (((uint64_t)a - b) >> 63);
}

/*
 * Binary searches here are branchless (a fixed number of halvings, the
 * choice made by arithmetic): branching searches multiply the paths the
 * verifier must walk.
 */
UNWIND_INLINE const struct otelprof_bpf_mapping *
unwind_find_big_mapping(void *ctx, uint32_t first, uint32_t n, uint64_t pc)
{
	const struct otelprof_bpf_mapping *m;
	uint32_t base = first, len = n, half;

	if (!n)
		return NULL;
	/* 2^17 > OTELPROF_BIG_MAPPINGS */
	for (int k = 0; k < 17; k++) {
		if (len <= 1)
			break;
		half = len >> 1;
		m = UNWIND_BIG_MAPPING(ctx, base + half);
		if (!m)
			return NULL;
		base += half * (uint32_t)unwind_ge_u64(pc, m->start);
		len -= half;
	}
	m = UNWIND_BIG_MAPPING(ctx, base);
	if (!m || pc < m->start || pc >= m->end)
		return NULL;
	return m;
}

/* The mapping containing pc, by start and end only (see
 * UNWIND_RESOLVE_MAPPING). */
UNWIND_INLINE const struct otelprof_bpf_mapping *
unwind_find_mapping(void *ctx, const struct otelprof_bpf_proc *proc,
		    uint64_t pc)
{
	uint32_t n = proc->n, base = 0, len, half, idx;

	if (proc->big_n)
		return unwind_find_big_mapping(ctx, proc->big_base, proc->big_n,
					       pc);
	if (n > OTELPROF_MAX_PROC_MAPPINGS)
		n = OTELPROF_MAX_PROC_MAPPINGS;
	if (!n)
		return NULL;
	len = n;
	for (int k = 0; k < OTELPROF_PROC_MAPPINGS_LOG2; k++) {
		half = len >> 1;
		idx = (base + half) & (OTELPROF_MAX_PROC_MAPPINGS - 1);
		base += half * (uint32_t)unwind_ge_u64(pc, proc->m[idx].start);
		len -= half;
	}
	base &= OTELPROF_MAX_PROC_MAPPINGS - 1;
	if (pc < proc->m[base].start || pc >= proc->m[base].end)
		return NULL;
	return &proc->m[base];
}

/* The row covering vaddr: the last row with row.pc <= vaddr among the
 * file's nrows rows from index first of its chunk. */
UNWIND_INLINE const struct unwind_packed_row *
unwind_find_row(void *ctx, void *rows, uint32_t first, uint32_t nrows,
		uint32_t vaddr)
{
	const struct unwind_packed_row *row;
	uint32_t base = first, len = nrows, half;

	if (!nrows)
		return NULL;
	/* 2^24 > UNWIND_MAX_ROWS */
	for (int k = 0; k < 24; k++) {
		if (len <= 1)
			break;
		half = len >> 1;
		row = UNWIND_ROW(ctx, rows, base + half);
		if (!row)
			return NULL;
		base += half * (uint32_t)unwind_ge_u32(vaddr, row->pc);
		len -= half;
	}
	row = UNWIND_ROW(ctx, rows, base);
	if (!row || row->pc > vaddr)
		return NULL;
	return row;
}

/* The row covering vaddr in mapping m's file: in the rows of vaddr's page
 * when the file has a page index (unwind_types.h), else in all of them. */
UNWIND_INLINE const struct unwind_packed_row *
unwind_find_row_paged(void *ctx, void *rows,
		      const struct otelprof_bpf_mapping *m, uint32_t vaddr)
{
	const struct unwind_packed_row *h, *r;
	uint32_t ix = m->index_rows, at, p, npages, lo, hi;

	if (ix < 3 || ix > m->row_base)
		return unwind_find_row(ctx, rows, m->row_base, m->nrows, vaddr);
	at = m->row_base - ix;
	h = UNWIND_ROW(ctx, rows, at);
	if (!h)
		return NULL;
	if (vaddr < h->pc)
		return NULL; /* before the first page: before every row */
	npages = ix - 2;
	p = (vaddr - h->pc) >> (h->rules & 31);
	if (p >= npages)
		p = npages - 1;
	r = UNWIND_ROW(ctx, rows, at + 1 + p);
	if (!r)
		return NULL;
	lo = r->pc;
	r = UNWIND_ROW(ctx, rows, at + 2 + p);
	if (!r)
		return NULL;
	hi = r->pc;
	if (lo > hi || hi >= m->nrows)
		return NULL; /* not an index userspace wrote */
	return unwind_find_row(ctx, rows, m->row_base + lo, hi - lo + 1, vaddr);
}

/* Start a walk at the sampled registers (w->proc is the caller's). */
UNWIND_INLINE void unwind_walk_begin(struct unwind_walk *w, uint64_t pc,
				     uint64_t sp, uint64_t fp)
{
	w->r.pc = pc;
	w->r.sp = sp;
	w->r.fp = fp;
#if UNWIND_AARCH64
	w->r.lr = 0;
#endif
	w->n = 0;
	w->error = 0;
	w->flags = 0;
	w->fp_frame = 0;
	w->exact_pc = 0;
	w->runtime = 0;
	w->declined = 0;
}

/* aarch64: x30 at the sampled frame, for a first frame whose return
 * address is still there (leaf functions, prologues). No-op on x86_64. */
UNWIND_INLINE void unwind_walk_set_lr(struct unwind_walk *w, uint64_t lr)
{
#if UNWIND_AARCH64
	w->r.lr = lr;
#else
	(void)w;
	(void)lr;
#endif
}

/* Has the walk ended (complete, truncated or stopped at an error)? */
UNWIND_INLINE int unwind_walk_ended(const struct unwind_walk *w)
{
	return w->error || (w->flags & (OTELPROF_SAMPLE_F_COMPLETE |
					OTELPROF_SAMPLE_F_TRUNCATED));
}

/* Write the frame at w->r.pc as frame w->n: 0, or 1 when the frame limit
 * (max, OTELPROF_MAX_USER_FRAMES) ends the walk, truncated. */
UNWIND_INLINE int unwind_walk_put(struct unwind_walk *w, uint64_t *frames,
				  uint32_t max)
{
	uint32_t i = w->n;

	if (i >= max || i >= OTELPROF_MAX_USER_FRAMES) {
		w->flags |= OTELPROF_SAMPLE_F_TRUNCATED;
		return 1;
	}
	frames[i & (OTELPROF_USTACK_WORDS - 1)] =
		w->r.pc | (w->fp_frame ? OTELPROF_USTACK_FP_FRAME : 0) |
		(w->exact_pc ? OTELPROF_USTACK_EXACT_PC : 0);
	w->n = i + 1;
	w->fp_frame = 0;
	w->exact_pc = 0;
	return 0;
}

/* The walk after a step: 0 to go on, 1 when it has ended (w->flags or
 * w->error say how). */
UNWIND_INLINE int unwind_walk_result(struct unwind_walk *w, int res)
{
	switch (res) {
	case UNWIND_STEP_OK:
		return 0;
	case UNWIND_STEP_DONE:
		w->flags |= OTELPROF_SAMPLE_F_COMPLETE;
		return 1;
	case UNWIND_STEP_ERR_READ:
		w->error = OTELPROF_CNT_UNWIND_ERR_READ;
		return 1;
	case UNWIND_STEP_ERR_LOOP:
		w->error = OTELPROF_CNT_UNWIND_ERR_LOOP;
		return 1;
	default:
		w->error = OTELPROF_CNT_UNWIND_ERR_RULE;
		return 1;
	}
}

/*
 * One frame: record w->r.pc in frames[w->n] (flagged
 * OTELPROF_USTACK_FP_FRAME if a frame-pointer step found it), then step to
 * the caller. Returns 0 to go on, 1 when the walk has ended: complete or
 * truncated (w->flags), or stopped at w->error (OTELPROF_CNT_UNWIND_*:
 * NO_MAPPING and PENDING mean code the tables do not cover yet, the
 * others a failed step). frames holds at least max entries; at most
 * OTELPROF_MAX_USER_FRAMES are taken.
 */
UNWIND_INLINE int unwind_walk_frame(void *ctx, struct unwind_walk *w,
				    uint64_t *frames, uint32_t max)
{
	const struct otelprof_bpf_mapping *m;
	const struct unwind_packed_row *row;
	uint64_t lookup_pc, vaddr;
	int res;

	/* A return address points after the call, maybe past the end of
	 * the calling function: look up the call instruction instead. (The
	 * frame's index, w->n: the walk may span several BPF programs.) */
	lookup_pc = w->n && !w->exact_pc ? w->r.pc - 1 : w->r.pc;
	m = unwind_find_mapping(ctx, &w->proc, lookup_pc);
	if (w->fp_frame == UNWIND_FP_FALLBACK_FRAME && !m) {
		/* The frame-pointer fallback returned into no code we know:
		 * that step failed. Checked by this frame's own search, not
		 * by a second one after the step: a second inlined search
		 * costs the 5.10 verifier more than the walk can spare. */
		w->error = OTELPROF_CNT_UNWIND_ERR_RULE;
		return 1;
	}
	if (m)
		m = UNWIND_RESOLVE_MAPPING(ctx, m);
	if ((!m || !m->file_id) && UNWIND_RUNTIME_HANDOFF(ctx, w))
		return 1; /* the runtime's program writes this frame */
	if (unwind_walk_put(w, frames, max))
		return 1;
	if (m && m->file_id == OTELPROF_FILE_ID_PENDING &&
	    UNWIND_PENDING_FP(ctx, w)) {
		/* A file whose table is still being built, in a process
		 * whose runtime asked: its frame pointer (plausible, and
		 * returning into code we know), marked as such. The
		 * runtime's own code in the file (V8's builtins: the
		 * interpreter) goes to its program first, as it does once
		 * the table is in. */
		if (UNWIND_RUNTIME_HANDOFF_FILE(ctx, w)) {
			w->n--;
			return 1;
		}
		res = unwind_step_fp_fallback(ctx, &w->r);
		w->fp_frame = UNWIND_FP_FALLBACK_FRAME;
		return unwind_walk_result(w, res);
	}
	if (!m || m->file_id == OTELPROF_FILE_ID_PENDING) {
		/* Code the tables do not cover (mapped since userspace
		 * last looked, or its table is still being built). */
		w->error = m ? OTELPROF_CNT_UNWIND_PENDING
			     : OTELPROF_CNT_UNWIND_NO_MAPPING;
		return 1;
	}
	if (!m->file_id) {
		/* Code without CFI (JIT code no runtime took, a file without
		 * tables): its frame pointer chain, the best we have. */
		res = unwind_step_fp(ctx, &w->r);
		w->fp_frame = 1;
	} else {
		void *rows = UNWIND_ROWS(ctx, m->file_id);

		vaddr = lookup_pc - m->bias;
		row = rows && vaddr <= UNWIND_PACKED_MAX_PC
			      ? unwind_find_row_paged(ctx, rows, m,
						      (uint32_t)vaddr)
			      : NULL;
		if (!row || UNWIND_ROW_CFA_BASE(row) == UNWIND_CFA_INVALID) {
			/* A file's code its tables leave out (V8's
			 * builtins, embedded in the binary): the runtime's
			 * program may take it, writing it again itself. */
			if (UNWIND_RUNTIME_HANDOFF_FILE(ctx, w)) {
				w->n--;
				return 1;
			}
			/* No CFI for this pc: the frame pointer, if the
			 * frame it gives is plausible and returns into
			 * code we know (checked at the next frame). */
			res = unwind_step_fp_fallback(ctx, &w->r);
			w->fp_frame = UNWIND_FP_FALLBACK_FRAME;
		} else {
			/* The kernel enters a signal trampoline; nothing
			 * calls it: its own pc is exact (named at pc, not as
			 * a return address at pc - 1, in the function
			 * before), and so is the pc its signal frame holds,
			 * where the signal interrupted the code. */
			if (UNWIND_ROW_CFA_BASE(row) == UNWIND_CFA_SIGNAL) {
				frames[(w->n - 1) &
				       (OTELPROF_USTACK_WORDS - 1)] |=
					OTELPROF_USTACK_EXACT_PC;
				w->exact_pc = 1;
			}
			res = unwind_step(ctx, UNWIND_ROW_CFA_BASE(row),
					  UNWIND_ROW_CFA_OFFSET(row),
					  UNWIND_ROW_FP_RULE(row),
					  UNWIND_ROW_FP_OFFSET(row),
					  UNWIND_ROW_RA_RULE(row), &w->r);
		}
	}
	return unwind_walk_result(w, res);
}

#endif /* OTELPROF_UNWIND_WALK_H */
