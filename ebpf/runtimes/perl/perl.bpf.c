// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Perl's walk (OTELPROF_RT_MODE_AFTER): Perl keeps its own context stack,
 * so after the native frames this copies the sampled thread's sub calls
 * into the sample, innermost first, as {CV, COP} pairs (perl_types.h),
 * then ends the sample (OTELPROF_PROG_FINISH). The thread's interpreter
 * is its PL_current_context (a non-threaded build's: its globals, on the
 * main thread); its contexts are the cxstack of the current
 * stackinfo, then of each si_prev. Loaded when the first Perl process is
 * found. Every read is of process memory and may fail: the walk then
 * stops, keeping what it has (counted). Loops are bounded: bpf_loop where
 * the kernel has it (perl_walk), a plain bounded loop for older kernels
 * (perl_walk_bounded).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "profiler_types.h"
#include "kernel_compat.bpf.h"
#include "sampler_shared.bpf.h"
#include "runtime_after.bpf.h"
#include "tls_var.bpf.h"
#include "runtimes/perl/perl_types.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Per process: where its interpreter is and its layout (userspace). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, u32);
	__type(value, struct otelprof_perl_proc);
} perl_procs SEC(".maps");

/* Contexts (sub calls, loops, blocks, evals) looked at per sample. */
#define PERL_MAX_CONTEXTS OTELPROF_MAX_INTERP_FRAMES
/* A context index beyond this is not a stack Perl built. */
#define PERL_MAX_CXIX (1 << 20)
#define PERL_BUF      128

/* Walk state in a per-CPU map, not on the stack: the verifier then sees
 * the loop callback converge once (as for the native walker). */
struct perl_scratch {
	struct otelprof_perl_proc pp;
	u64 si, cxstack, cop;
	s32 cxix;
	u32 n, got, si_got;
	u8 buf[PERL_BUF + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct perl_scratch);
} perl_scratch SEC(".maps");

static __always_inline u64 read_user_u64(u64 addr)
{
	u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

static __always_inline u64 cx_field(struct perl_scratch *s, u16 off)
{
	u64 v = 0;

	/* the mask keeps the verifier's bounds; userspace checks that the
	 * offsets lie inside the OTELPROF_PERL_CX_READ bytes read */
	__builtin_memcpy(&v, &s->buf[off & (PERL_BUF - 1)], 8);
	return v;
}

/* Enter stackinfo s->si: its context stack and top index. */
static __always_inline bool enter_si(struct perl_scratch *s)
{
	s32 ix;

	s->cxstack = read_user_u64(s->si + s->pp.si_cxstack);
	if (!s->cxstack ||
	    bpf_probe_read_user(&ix, sizeof(ix),
				(const void *)(s->si + s->pp.si_cxix)))
		return false;
	s->cxix = ix;
	s->si_got = 0;
	return true;
}

/* Append pair {w0, w1} at s->n, if it fits. */
static __always_inline bool put_pair(struct otelprof_sample_event *e,
				     struct perl_scratch *s, u64 w0, u64 w1)
{
	u32 n = s->n;

	if (n > OTELPROF_USTACK_WORDS - 2)
		return false;
	e->words[n & (OTELPROF_USTACK_WORDS - 1)] = w0;
	e->words[(n + 1) & (OTELPROF_USTACK_WORDS - 1)] = w1;
	s->n = n + 2;
	s->got++;
	s->si_got++;
	return true;
}

/*
 * The innermost sub still entering (before its first statement) or
 * leaving: PL_curcop is still its caller's statement, the one the next
 * frame is at. Its own line is unknown then (COP 0), unless it called
 * itself (the statement is then one of its own). Once per sample, after
 * the loop (the bounded loop's body stays small).
 */
static __always_inline void entering_or_leaving(struct otelprof_sample_event *e,
						struct perl_scratch *s)
{
	u32 n0 = e->n_user;
	u64 cv0, cop0, cv1, cop1;

	if (s->got < 2 || n0 > OTELPROF_USTACK_WORDS - 4)
		return;
	cv0 = e->words[n0 & (OTELPROF_USTACK_WORDS - 1)];
	cop0 = e->words[(n0 + 1) & (OTELPROF_USTACK_WORDS - 1)];
	cv1 = e->words[(n0 + 2) & (OTELPROF_USTACK_WORDS - 1)];
	cop1 = e->words[(n0 + 3) & (OTELPROF_USTACK_WORDS - 1)];
	if (cop0 == cop1 && ((cv0 ^ cv1) & ~OTELPROF_INTERP_F_LAST))
		e->words[(n0 + 1) & (OTELPROF_USTACK_WORDS - 1)] = 0;
}

/* One context per call, innermost first: a sub call adds its pair. */
static __always_inline long perl_cx_step(u32 k, void *data)
{
	u32 zero = 0;
	struct otelprof_sample_event *e =
		bpf_map_lookup_elem(&sample_scratch, &zero);
	struct perl_scratch *s = bpf_map_lookup_elem(&perl_scratch, &zero);
	u64 cx;
	u8 type;

	if (!e || !s || !s->si)
		return 1;
	if (s->cxix < 0) {
		/* This stackinfo (one runops call) is done: go on in the one
		 * that called it, its outermost frame ending its run. */
		u64 prev = read_user_u64(s->si + s->pp.si_prev);
		u32 n = s->n;

		if (!prev) {
			/* The bottom: the main program, at the statement
			 * that made the outermost call. */
			put_pair(e, s,
				 OTELPROF_PERL_MAIN | OTELPROF_INTERP_F_LAST,
				 s->cop);
			return 1;
		}
		if (s->si_got && n >= 2 && n <= OTELPROF_USTACK_WORDS)
			e->words[(n - 2) & (OTELPROF_USTACK_WORDS - 1)] |=
				OTELPROF_INTERP_F_LAST;
		s->si = prev;
		if (!enter_si(s)) {
			count(OTELPROF_CNT_INTERP_ERR);
			s->si = 0;
			return 1;
		}
		return 0;
	}
	if (s->cxix >= PERL_MAX_CXIX)
		return 1;
	cx = s->cxstack + (u64)s->cxix * s->pp.cx_size;
	s->cxix--;
	if (bpf_probe_read_user(s->buf, OTELPROF_PERL_CX_READ,
				(const void *)cx)) {
		count(OTELPROF_CNT_INTERP_ERR);
		s->si = 0;
		return 1;
	}
	type = s->buf[s->pp.cx_type & (PERL_BUF - 1)] & s->pp.cxt_mask;
	if (type != s->pp.cxt_sub)
		return 0; /* a loop, block or eval: no frame of its own */
	if (!put_pair(e, s,
		      cx_field(s, s->pp.cx_sub_cv) & ~OTELPROF_INTERP_F_LAST,
		      s->cop)) {
		s->si = 0;
		return 1;
	}
	s->cop = cx_field(s, s->pp.cx_oldcop);
	return 0;
}

OTELPROF_BOUNDED_LOOP(perl_cx_walk, perl_cx_step)

/* have_loop: the program may use bpf_loop (5.17). */
static __always_inline void walk_perl(struct otelprof_sample_event *e, u32 tgid,
				      const bool have_loop)
{
	const struct otelprof_perl_proc *pp =
		bpf_map_lookup_elem(&perl_procs, &tgid);
	u32 zero = 0;
	struct perl_scratch *s;
	u64 tp, var, interp;

	if (!pp || e->n_user > OTELPROF_USTACK_WORDS - 2)
		return; /* frames are added while they fit */
	s = bpf_map_lookup_elem(&perl_scratch, &zero);
	if (!s)
		return;
	s->pp = *pp;
	if (s->pp.global_curstackinfo) {
		/* Non-threaded: the one interpreter is the main thread's; a
		 * thread a library started runs no Perl. */
		if (e->hdr.tid != tgid)
			return;
		s->cop = read_user_u64(s->pp.global_curcop);
		s->si = read_user_u64(s->pp.global_curstackinfo);
	} else {
		tp = thread_pointer();
		if (!tp)
			return;
		var = tls_var_addr(&s->pp.ctx, tp);
		if (!var)
			return;
		/* 0: a thread that runs no Perl (or not yet) */
		interp = read_user_u64(var);
		if (!interp)
			return;
		s->cop = read_user_u64(interp + s->pp.interp_curcop);
		s->si = read_user_u64(interp + s->pp.interp_curstackinfo);
	}
	if (!s->si || !enter_si(s)) {
		count(OTELPROF_CNT_INTERP_ERR);
		return;
	}
	s->n = e->n_user;
	s->got = 0;
	if (have_loop)
		perl_cx_walk_loop(PERL_MAX_CONTEXTS, NULL);
	else
		OTELPROF_BOUNDED(perl_cx_step, PERL_MAX_CONTEXTS, NULL);
	if (s->n > OTELPROF_USTACK_WORDS)
		return;
	entering_or_leaving(e, s);
	after_frames_done(e, s->n, s->got, OTELPROF_RT_PERL);
}

OTELPROF_AFTER_RUNTIME_PROGRAMS(perl, walk_perl)
