/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The native walk's hand-over of a frame at a pc without CFI to an
 * after-mode runtime whose JIT code runs on the native stack
 * (OTELPROF_RT_F_JIT_STEP: PHP's opcache JIT, Ruby's YJIT): the runtime's
 * program, entered mid-walk, writes the frame and the caller's registers,
 * or declines it (the native walk then steps it itself), and gives the
 * walk back. Include after runtime_walk.bpf.h.
 */
#ifndef OTELPROF_RUNTIME_JIT_STEP_BPF_H
#define OTELPROF_RUNTIME_JIT_STEP_BPF_H

/* The walk handed over, or NULL: the program was entered after the walk
 * (the sample has frames), or the walk has ended. */
static __always_inline struct unwinder_state *
jit_step_walk(const struct otelprof_sample_event *e)
{
	u32 zero = 0;
	struct unwinder_state *st;

	if (e->n_user)
		return NULL;
	st = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!st || unwind_walk_ended(&st->w))
		return NULL;
	return st;
}

/* The frame's pc: a return address is looked up one byte back. */
static __always_inline u64 jit_step_pc(const struct unwinder_state *st)
{
	return st->w.n ? st->w.r.pc - 1 : st->w.r.pc;
}

/* Write the frame at st->w.r.pc; then the caller is the runtime's to set.
 * false: the frame limit ended the walk. */
static __always_inline bool jit_step_put(struct otelprof_sample_event *e,
					 struct unwinder_state *st)
{
	return !unwind_walk_put(&st->w, e->words, st->max_user_frames);
}

/* Back to the native walk; returns only when the chain of tail calls is
 * spent: the sample then keeps the frames so far, cut. */
static __always_inline void jit_step_give_back(void *ctx,
					       struct otelprof_sample_event *e,
					       struct unwinder_state *st)
{
	walk_resume(ctx, st);
	e->n_user = st->w.n;
	e->flags |= st->w.flags | OTELPROF_SAMPLE_F_TRUNCATED;
	count(OTELPROF_CNT_UNWIND_TRUNCATED);
}

#endif
