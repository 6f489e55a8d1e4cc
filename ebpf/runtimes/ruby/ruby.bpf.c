// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * CRuby's walk (OTELPROF_RT_MODE_AFTER): Ruby keeps its own stack of
 * control frames, so after the native frames this copies the sampled
 * thread's Ruby frames into the sample as {iseq, pc} pairs, innermost
 * first, and ends the sample (OTELPROF_PROG_FINISH). The thread's own
 * execution context comes from its thread-local ruby_current_ec, so a
 * thread without the GVL shows its own (blocked) frames, never another
 * thread's. A C function's frame (a cfunc: no iseq) is reported by its
 * method entry alone ({me | tag, 0}), which names it; ifunc and dummy
 * frames are not reported;
 * a method frame's method entry (a block frame's: its method's) goes
 * before it where userspace names methods by their class. The first frame of
 * each vm_exec call carries OTELPROF_INTERP_F_LAST, so userspace can splice
 * each run above the native call that ran it. Every read is of process memory
 * and may fail: the walk then stops with what it has (counted). Loaded when the
 * first Ruby process is found.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "profiler_types.h"
#include "unwind_types.h"
#include "kernel_compat.bpf.h"
#include "sampler_shared.bpf.h"
#include "runtime_after.bpf.h"
#include "tls_var.bpf.h"
#include "runtimes/ruby/ruby_proc.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "runtime_walk.bpf.h"
#include "runtime_jit_step.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, u32);
	__type(value, struct otelprof_ruby_proc);
} ruby_procs SEC(".maps");

/* pc, iseq and ep lie in a control frame's first 40 bytes. */
#define RUBY_CFP_READ 40

struct ruby_scratch {
	struct otelprof_ruby_proc rp;
	u64 cfp, end; /* next control frame, end of the frames */
	u32 n, got;
	u32 prev_cfunc; /* the frame before was a C function's: its pair's
			   index + 1 (0: it was not) */
	u64 w0, w1;	/* the frame's pair, on its way into the sample */
	u64 mh[2];	/* a method entry's (or svar's) first words */
	u8 buf[64 + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct ruby_scratch);
} ruby_scratch SEC(".maps");

static __always_inline u64 read_u64(u64 addr)
{
	u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

static __always_inline u64 cfp_field(struct ruby_scratch *s, u16 off)
{
	u64 v = 0;

	/* offsets are < 40: the mask keeps the verifier's bounds */
	__builtin_memcpy(&v, &s->buf[off & 63], 8);
	return v;
}

/* The local environment (the method's) a block's ep leads to, or 0:
 * not within OTELPROF_RUBY_EP_HOPS, or not readable. */
static __always_inline u64 ruby_local_ep(u64 ep, u64 flags)
{
	for (int i = 0; i < OTELPROF_RUBY_EP_HOPS; i++) {
		if (flags & OTELPROF_RUBY_ENV_LOCAL)
			return ep;
		ep = read_u64(ep - 8) & ~3ull;
		if (!ep)
			return 0;
		flags = read_u64(ep);
	}
	return flags & OTELPROF_RUBY_ENV_LOCAL ? ep : 0;
}

/* One control frame per call, toward the outermost (higher addresses). */
static __always_inline long ruby_frame_step(u32 k, void *data)
{
	u32 zero = 0;
	struct otelprof_sample_event *e =
		bpf_map_lookup_elem(&sample_scratch, &zero);
	struct ruby_scratch *s = bpf_map_lookup_elem(&ruby_scratch, &zero);
	u64 pc, iseq, ep, flags, magic, cfp;
	u32 n, prev;

	if (!e || !s)
		return 1;
	cfp = s->cfp;
	if (!cfp || cfp >= s->end)
		return 1;
	if (bpf_probe_read_user(s->buf, RUBY_CFP_READ, (const void *)cfp)) {
		count(OTELPROF_CNT_INTERP_ERR);
		return 1;
	}
	s->cfp = cfp + s->rp.cfp_size;
	prev = s->prev_cfunc;
	s->prev_cfunc = 0;
	pc = cfp_field(s, s->rp.cfp_pc);
	iseq = cfp_field(s, s->rp.cfp_iseq);
	ep = cfp_field(s, s->rp.cfp_ep);
	if (!ep)
		return 0; /* a dummy frame */
	flags = read_u64(ep);
	magic = flags & OTELPROF_RUBY_MAGIC_MASK;
	n = s->n;
	if (n > OTELPROF_USTACK_WORDS - 4 ||
	    s->got >= OTELPROF_MAX_INTERP_FRAMES - 1)
		return 1;
	if (magic == OTELPROF_RUBY_MAGIC_CFUNC) {
		/* a C function's frame (no pc, no iseq): its method entry
		 * names it; it never starts a vm_exec call */
		u64 me = read_u64(ep - 16);

		if (!me)
			return 0;
		/* the C function before (inner) was called from this one's
		 * code (rb_funcall: a C function's frame calls nothing
		 * else): it ends a run of its own, which goes above that
		 * native call */
		if (prev)
			e->words[(prev - 1) & (OTELPROF_USTACK_WORDS - 1)] |=
				OTELPROF_INTERP_F_LAST;
		s->prev_cfunc = n + 1;
		s->w0 = (me &
			 ~(OTELPROF_INTERP_F_LAST | OTELPROF_RUBY_ME_TAG)) |
			OTELPROF_RUBY_ME_TAG;
		s->w1 = 0;
	} else {
		if (!pc || !iseq || magic == OTELPROF_RUBY_MAGIC_IFUNC ||
		    magic == OTELPROF_RUBY_MAGIC_DUMMY)
			return 0;
		if ((s->rp.flags & OTELPROF_RUBY_F_METHOD_ENTRY) &&
		    (magic == OTELPROF_RUBY_MAGIC_METHOD ||
		     magic == OTELPROF_RUBY_MAGIC_BLOCK)) {
			u64 me;

			/* a block's method entry is in its method's
			 * environment; through the map, as below */
			s->w0 = magic == OTELPROF_RUBY_MAGIC_BLOCK
					? ruby_local_ep(ep, flags)
					: ep;
			me = s->w0 ? read_u64(s->w0 - 16) : 0;

			/* a frame that set $~ or $_ holds its method entry
			 * in an imemo_svar (cref_or_me, its second word),
			 * which dies with the call: followed here. Through
			 * the map, so both ways end in one verifier state. */
			s->w0 = me;
			s->mh[0] = 0;
			if (me && bpf_probe_read_user(s->mh, sizeof(s->mh),
						      (const void *)me))
				s->mh[0] = 0;
			if ((s->mh[0] & OTELPROF_RUBY_IMEMO_TYPE_MASK) ==
			    OTELPROF_RUBY_IMEMO_SVAR)
				s->w0 = s->mh[1];
			else if ((s->mh[0] & OTELPROF_RUBY_IMEMO_TYPE_MASK) !=
				 OTELPROF_RUBY_IMEMO_MENT)
				s->w0 = 0; /* a cref: a block at the top or
					    * in a class body has no method */
			me = s->w0;
			if (me) {
				e->words[n & (OTELPROF_USTACK_WORDS - 1)] =
					(me & ~(OTELPROF_INTERP_F_LAST |
						OTELPROF_RUBY_ME_TAG)) |
					OTELPROF_RUBY_ME_TAG;
				e->words[(n + 1) &
					 (OTELPROF_USTACK_WORDS - 1)] = iseq;
				s->n = n + 2;
				s->got++;
			}
		}
		s->w0 = (iseq &
			 ~(OTELPROF_INTERP_F_LAST | OTELPROF_RUBY_ME_TAG)) |
			(flags & OTELPROF_RUBY_FLAG_FINISH
				 ? OTELPROF_INTERP_F_LAST
				 : 0);
		s->w1 = pc;
	}
	/* the pair and the count read back from the map: every path
	 * reaches the same verifier state (unknown values, bounded below),
	 * so 5.10's bounded loop does not explore them separately */
	n = s->n;
	if (n > OTELPROF_USTACK_WORDS - 2)
		return 1;
	e->words[n & (OTELPROF_USTACK_WORDS - 1)] = s->w0;
	e->words[(n + 1) & (OTELPROF_USTACK_WORDS - 1)] = s->w1;
	s->n = n + 2;
	s->got++;
	return 0;
}

OTELPROF_BOUNDED_LOOP(ruby_walk_frames, ruby_frame_step)

static __always_inline void walk_ruby(struct otelprof_sample_event *e, u32 tgid,
				      const bool have_loop)
{
	const struct otelprof_ruby_proc *rp =
		bpf_map_lookup_elem(&ruby_procs, &tgid);
	u32 zero = 0;
	struct ruby_scratch *s;
	u64 ec, stack, size, cfp, tp;

	if (!rp || e->n_user > OTELPROF_USTACK_WORDS - 2)
		return; /* frames are added while they fit */
	s = bpf_map_lookup_elem(&ruby_scratch, &zero);
	if (!s)
		return;
	s->rp = *rp;
	tp = thread_pointer();
	ec = tp ? tls_var_addr(&s->rp.ec, tp) : 0;
	if (!ec)
		return;
	ec = read_u64(ec);
	if (!ec)
		return; /* not a Ruby thread */
	stack = read_u64(ec + s->rp.ec_vm_stack);
	size = read_u64(ec + s->rp.ec_vm_stack_size);
	cfp = read_u64(ec + s->rp.ec_cfp);
	/* the frames grow down from the stack's end */
	if (!stack || !cfp || size > (1ull << 28) || cfp < stack ||
	    !s->rp.cfp_size) {
		count(OTELPROF_CNT_INTERP_ERR);
		return;
	}
	s->cfp = cfp;
	s->end = stack + size * 8;
	s->n = e->n_user;
	s->got = 0;
	s->prev_cfunc = 0;
	if (have_loop)
		ruby_walk_frames_loop(OTELPROF_MAX_INTERP_FRAMES, NULL);
	else
		OTELPROF_BOUNDED(ruby_frame_step, OTELPROF_MAX_INTERP_FRAMES,
				 NULL);
	after_frames_done(e, s->n, s->got, OTELPROF_RT_RUBY);
}

/*
 * The native walk's hand-over of a frame at a pc without CFI
 * (OTELPROF_RT_F_JIT_STEP, x86_64 libruby built with YJIT): YJIT's code
 * keeps one native frame per entry from the VM (Ruby calls inside it jump,
 * they do not call), so its caller is the word
 * OTELPROF_RUBY_YJIT_RA_OFFSET above sp, taken only where it returns into
 * the VM's code; the frame is written as is (JIT code) and the native walk
 * goes on from the VM's frame, through rb_vm_exec to main. Anything else
 * (other code without CFI, the few instructions where YJIT has pushed
 * more, or --yjit-perf's frames) is declined: the native walk steps it by
 * its frame pointer, as before.
 */
static __always_inline void
ruby_jit_step(void *ctx, struct otelprof_sample_event *e, u32 tgid)
{
	struct unwinder_state *st = jit_step_walk(e);
	const struct otelprof_ruby_proc *rp;
	u64 ra = 0, sp;

	if (!st)
		return;
	rp = bpf_map_lookup_elem(&ruby_procs, &tgid);
	sp = st->w.r.sp;
	if (!rp ||
	    bpf_probe_read_user(
		    &ra, sizeof(ra),
		    (const void *)(sp + OTELPROF_RUBY_YJIT_RA_OFFSET)) ||
	    ra <= rp->vm_text_lo || ra > rp->vm_text_hi) {
		st->w.declined = 1; /* not YJIT's frame: the native walk's */
	} else if (jit_step_put(e, st)) {
		st->w.r.pc = ra;
		st->w.r.sp = sp + OTELPROF_RUBY_YJIT_RA_OFFSET + 8;
	}
	jit_step_give_back(ctx, e, st);
}

static __always_inline void ruby_run(void *ctx, struct otelprof_sample_event *e,
				     u32 tgid, const bool have_loop)
{
	ruby_jit_step(ctx, e, tgid);
	walk_ruby(e, tgid, have_loop);
}

OTELPROF_AFTER_RUNTIME_PROGRAMS_CTX(ruby, ruby_run)
