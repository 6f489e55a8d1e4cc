/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The user stack walk in progress (unwind_walk.h), shared by the native
 * walk's programs and the runtime programs that write frames into it
 * (OTELPROF_RT_MODE_STEP). Included after unwind_walk.h.
 */
#ifndef OTELPROF_WALK_STATE_BPF_H
#define OTELPROF_WALK_STATE_BPF_H

#ifndef OTELPROF_UNWIND_WALK_H
#error "include unwind_walk.h (struct unwind_walk) before walk_state.bpf.h"
#endif

/* The walk and what the sampler keeps beside it, in a per-CPU map: it
 * outlives each program of the chain, and values loaded from a map are
 * unknown to the verifier, which then sees a loop body converge once. */
struct unwinder_state {
	struct unwind_walk w;
	u32 map_count;	     /* the process's mapping count at the sample */
	u32 max_user_frames; /* the walk's frame limit */
	/* Set by a runtime's program just before it tail-calls
	 * OTELPROF_PROG_RESUME: the program entered goes on with this walk
	 * instead of starting a sample (the bpf_loop kernels' entry program
	 * is also the resume one). Cleared at once by whoever reads it. */
	u32 resume;
	u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct unwinder_state);
} unwind_scratch SEC(".maps");

/* This CPU's sample and walk; false if a lookup failed (never, for
 * per-CPU arrays of one entry, but the verifier wants the check). */
static __always_inline bool walk_scratch(struct otelprof_sample_event **e,
					 struct unwinder_state **st)
{
	u32 zero = 0;

	*e = bpf_map_lookup_elem(&sample_scratch, &zero);
	*st = bpf_map_lookup_elem(&unwind_scratch, &zero);
	return *e && *st;
}

/* Back to the native walk, as OTELPROF_PROG_RESUME; returns only if the
 * tail call failed. */
static __always_inline void walk_resume(void *ctx, struct unwinder_state *st)
{
	st->resume = 1;
	walk_goto(ctx, OTELPROF_PROG_RESUME);
	st->resume = 0;
}

#endif
