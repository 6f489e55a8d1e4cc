/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * What every step-mode runtime's program shares (HotSpot, V8: their
 * frames sit on the native stack, handed over by the native walk): its
 * two programs (bpf_loop, and a bounded run of frames for kernels without
 * it) and the way back to the native walk. Include after runtime_walk.bpf.h.
 */
#ifndef OTELPROF_RUNTIME_STEP_BPF_H
#define OTELPROF_RUNTIME_STEP_BPF_H

/* Back to the native walk; if the chain of tail calls is spent, the
 * sample goes out with the frames so far, cut. */
static __always_inline int step_give_back(void *ctx)
{
	struct otelprof_sample_event *e;
	struct unwinder_state *st;

	if (!walk_scratch(&e, &st))
		return 0;
	walk_resume(ctx, st);
	e->n_user = st->w.n;
	e->flags |= st->w.flags | OTELPROF_SAMPLE_F_TRUNCATED;
	count(OTELPROF_CNT_UNWIND_TRUNCATED);
	runtime_frames_append(e);
	sample_emit(ctx, e);
	return 0;
}

/* NAME_walk (LOOP: the bpf_loop walk of OTELPROF_BOUNDED_LOOP) and
 * NAME_walk_bounded (FRAME, at most BOUNDED frames in a row: more go back
 * through the native walk, which hands them over again). */
#define OTELPROF_STEP_RUNTIME_PROGRAMS(NAME, LOOP, FRAME, BOUNDED)             \
	SEC("perf_event")                                                      \
	int NAME##_walk(struct bpf_perf_event_data *ctx)                       \
	{                                                                      \
		LOOP(OTELPROF_MAX_USER_FRAMES + 1, NULL);                      \
		return step_give_back(ctx);                                    \
	}                                                                      \
	SEC("perf_event")                                                      \
	int NAME##_walk_bounded(struct bpf_perf_event_data *ctx)               \
	{                                                                      \
		OTELPROF_BOUNDED(FRAME, BOUNDED, NULL);                        \
		return step_give_back(ctx);                                    \
	}

#endif
