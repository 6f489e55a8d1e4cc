/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * What every after-mode runtime's program shares (CPython, PHP, Ruby,
 * Perl: their frames are their own chain, walked after the native walk):
 * the sample it appends to, its two programs (bpf_loop, and bounded loops
 * for kernels without it) and the way out to the sample's finish.
 * Include after sampler_shared.bpf.h.
 */
#ifndef OTELPROF_RUNTIME_AFTER_BPF_H
#define OTELPROF_RUNTIME_AFTER_BPF_H

/* The runtime's walk appended `got` frames, the sample's user words are
 * now `words`; too many and the sample keeps only its native frames. */
static __always_inline void after_frames_done(struct otelprof_sample_event *e,
					      u32 words, u32 got, u32 kind)
{
	if (words > OTELPROF_USTACK_WORDS)
		return;
	e->n_user = words;
	e->n_interp = got;
	e->interp_kind = kind;
	if (got)
		count(OTELPROF_CNT_INTERP_SAMPLES);
}

/* NAME_walk and NAME_walk_bounded, each running CALL (an expression that
 * may use ctx, the perf_event context; e, this CPU's sample; have_loop)
 * and going on to the sample's finish. */
#define OTELPROF_AFTER_PROGRAMS_(NAME, CALL)                                   \
	static __always_inline int NAME##_sample(void *ctx,                    \
						 const bool have_loop)         \
	{                                                                      \
		u32 zero = 0;                                                  \
		struct otelprof_sample_event *e =                              \
			bpf_map_lookup_elem(&sample_scratch, &zero);           \
                                                                               \
		if (!e)                                                        \
			return 0;                                              \
		CALL;                                                          \
		walk_goto(ctx, OTELPROF_PROG_FINISH);                          \
		return 0;                                                      \
	}                                                                      \
	SEC("perf_event")                                                      \
	int NAME##_walk(struct bpf_perf_event_data *ctx)                       \
	{                                                                      \
		return NAME##_sample(ctx, true);                               \
	}                                                                      \
	SEC("perf_event")                                                      \
	int NAME##_walk_bounded(struct bpf_perf_event_data *ctx)               \
	{                                                                      \
		return NAME##_sample(ctx, false);                              \
	}

/* The two programs running
 * WALK(struct otelprof_sample_event *e, u32 pid, bool have_loop). */
#define OTELPROF_AFTER_RUNTIME_PROGRAMS(NAME, WALK)                            \
	OTELPROF_AFTER_PROGRAMS_(NAME, WALK(e, e->hdr.pid, have_loop))

/* The same for a walk that needs the sample's registers (PHP: the
 * interpreter's running instruction is in one):
 * WALK(void *ctx, struct otelprof_sample_event *e, u32 pid, bool
 * have_loop). */
#define OTELPROF_AFTER_RUNTIME_PROGRAMS_CTX(NAME, WALK)                        \
	OTELPROF_AFTER_PROGRAMS_(NAME, WALK(ctx, e, e->hdr.pid, have_loop))

#endif
