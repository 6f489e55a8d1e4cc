// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * HotSpot's walk (OTELPROF_RT_MODE_STEP): the native walk hands over a
 * frame at a pc in anonymous code of a JVM (its code cache, see
 * otelprof_jvm_proc); this program unwinds it, and the Java frames after
 * it, by the JVM's own frame layout instead of the frame pointer, which
 * compiled Java code does not keep, then gives the walk back
 * (OTELPROF_PROG_RESUME). Each Java frame is also noted as a {pointer,
 * bci/pc} pair (runtime_note); after the walk the pairs follow the native
 * frames in the sample, so userspace can name the methods. Loaded when
 * the first JVM is found. Every read is of process memory and may fail:
 * the step then returns an error and the walk stops there, keeping what
 * it has.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "profiler_types.h"
#include "unwind_types.h"
#include "kernel_compat.bpf.h"
#include "sampler_shared.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "runtime_walk.bpf.h"
#include "runtime_step.bpf.h"

/* Per process: its code cache (userspace fills). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, struct otelprof_jvm_proc);
} jvm_procs SEC(".maps");

/* Segment map steps back to a blob's first segment: HotSpot keeps them
 * short (each step skips up to 254 segments). */
#define JVM_MAX_HOPS 16
/* A compiled frame larger than this is not believed. */
#define JVM_MAX_FRAME_WORDS 8192
/* aarch64: how far up a frameless leaf stub's pushes are searched (the
 * SHA-256 stub saves two pairs of vector registers). */
#define JVM_STUB_MAX_PAIRS 4
/* aarch64: the x30 a stub's step leaves for its caller's step when its
 * pops gave the caller's exact sp (no search then); never a return
 * address, and taken off at once. */
#define JVM_STUB_SP_EXACT 1ull

/* Note Java frame i: its Method* (interpreted, flagged) or CodeBlob,
 * and its bcp or pc. */
static __always_inline void jvm_note(struct otelprof_sample_event *e, u32 i,
				     u64 word0, u64 word1)
{
	runtime_note(e, OTELPROF_INTERP_HOTSPOT,
		     ((u64)i << OTELPROF_JVM_INDEX_SHIFT) |
			     (word0 & OTELPROF_JVM_PTR_MASK) |
			     (word0 & OTELPROF_JVM_F_INTERP),
		     word1);
}

/* The CodeBlob holding pc in heap h, or 0. */
static __always_inline u64 jvm_blob(const struct otelprof_jvm_heap *h, u64 pc)
{
	u64 seg = (pc - h->low) >> (h->log2_segment & 31);
	u8 v = 0;

	for (int k = 0; k < JVM_MAX_HOPS; k++) {
		if (bpf_probe_read_user(&v, 1, (const void *)(h->segmap + seg)))
			return 0;
		if (v == 0xff) /* free */
			return 0;
		if (!v)
			return h->low + (seg << (h->log2_segment & 31));
		if (v > seg)
			return 0;
		seg -= v;
	}
	return 0;
}

enum { JVM_NOT_JAVA = UNWIND_STEP_NOT_MINE }; /* not JVM code */

/* Java code is called from Java code, stubs or the interpreter: a return
 * address of a Java frame lies in a code heap. */
static __always_inline bool jvm_in_code(const struct otelprof_jvm_proc *jp,
					u64 a)
{
	bool in = false;

	for (int k = 0; k < OTELPROF_JVM_HEAPS; k++)
		if ((u32)k < jp->nheaps && a >= jp->heaps[k].low &&
		    a < jp->heaps[k].high)
			in = true;
	return in;
}

#if UNWIND_AARCH64
/* aarch64: could {fp, ra}, read where a compiled frame whose top is at sp
 * saved its caller's pair, be that pair? ra must lie in a code heap; a
 * caller in the interpreter (an OSR frame's, an i2c call's) also needs
 * its frame pointer at or above sp: stale words below a frame's true top
 * (an OSR frame reuses the stack of the interpreter frame it replaced)
 * hold old interpreter return addresses with junk beside them. */
static __always_inline bool jvm_caller_pair(const struct otelprof_jvm_proc *jp,
					    u64 ra, u64 fp, u64 sp)
{
	if (!jvm_in_code(jp, ra))
		return false;
	if (ra < jp->interp_low || ra >= jp->interp_high)
		return true;
	return fp >= sp && fp - sp <= JVM_MAX_FRAME_WORDS * 8;
}
#endif

#if UNWIND_AARCH64
/* How far ahead of a stub's pc its return is looked for: 16 chunks of 16
 * instructions (SHA-256's loop is about 150). */
#define JVM_STUB_SCAN_CHUNKS 16
#define JVM_STUB_CHUNK_INSNS 16

/* What the stub at pc still has to pop before its `ret`: the sp
 * increments of the post-indexed loads from sp (`ldp x, x / d, d / q, q,
 * [sp], #imm`) and the `add sp, sp, #imm` from pc to the first `ret`, in
 * bytes; -1 if no `ret` is in reach or the sum is implausible. The pushes
 * are what lies between the sampled sp and the caller's: exact, where
 * searching the stack for a return address finds stale ones (the caller's
 * frame reuses the stack of frames that returned). A pc on the push
 * itself (the stub's first instruction) gets its caller's sp too high. */
static __always_inline s32 jvm_stub_pops(u64 pc)
{
	u32 insn[JVM_STUB_CHUNK_INSNS];
	s32 pops = 0;

	for (int c = 0; c < JVM_STUB_SCAN_CHUNKS; c++) {
		if (bpf_probe_read_user(insn, sizeof(insn),
					(const void *)(pc + c * sizeof(insn))))
			return -1;
		for (int k = 0; k < JVM_STUB_CHUNK_INSNS; k++) {
			u32 w = insn[k];
			s32 imm7 = (s32)((w >> 15) & 0x7f);

			if (imm7 & 0x40)
				imm7 -= 0x80;
			if ((w & 0xfffffc1f) == 0xd65f0000) /* ret */
				return pops & 15 ? -1 : pops;
			if (((w >> 5) & 31) != 31)
				continue; /* not based on sp */
			if ((w & 0xffc00000) == 0xa8c00000 || /* ldp x, post */
			    (w & 0xffc00000) == 0x6cc00000)   /* ldp d, post */
				pops += imm7 * 8;
			else if ((w & 0xffc00000) == 0xacc00000) /* ldp q */
				pops += imm7 * 16;
			else if ((w & 0xff80001f) == 0x9100001f) /* add sp */
				pops += (s32)((w >> 10) & 0xfff)
					<< ((w >> 22) & 1 ? 12 : 0);
			if (pops > 16 * JVM_STUB_MAX_PAIRS || pops < 0)
				return -1;
		}
	}
	return -1;
}
#endif

/*
 * One frame at a pc in the JVM's anonymous code: r becomes the caller's
 * registers. i: the frame's index in the sample; lookup_pc: pc, or pc - 1
 * for a return address. JVM_NOT_JAVA if the process is no JVM or the pc
 * is in none of its code heaps (the caller then tries the frame pointer).
 */
static __always_inline int hotspot_step(struct otelprof_sample_event *e,
					struct unwind_regs *r, u32 i,
					u64 lookup_pc, const bool scan_stubs)
{
	u32 tgid = e->hdr.pid;
	const struct otelprof_jvm_proc *jp =
		bpf_map_lookup_elem(&jvm_procs, &tgid);
	const struct otelprof_jvm_heap *h = NULL;
	u64 block, method = 0, bcp = 0, sp, ra = 0, fp = 0;
	s32 fs = 0;
#if UNWIND_AARCH64
	bool sp_exact = false;
#endif

	if (!jp)
		return JVM_NOT_JAVA;
#if UNWIND_AARCH64
	sp_exact = r->lr == JVM_STUB_SP_EXACT;
	if (sp_exact)
		r->lr = 0;
#endif
	if (lookup_pc >= jp->interp_low && lookup_pc < jp->interp_high) {
		/* Interpreted: rbp frames (the frame-pointer step), the
		 * Method and bcp in slots below rbp, the caller's sp
		 * (before the callee extended it for locals) saved there
		 * too. */
		u64 base = r->fp, callee_sp = r->sp;
		int err;

		if (!base || base < r->sp ||
		    bpf_probe_read_user(
			    &method, 8,
			    (const void *)(base + jp->interp_method * 8)) ||
		    bpf_probe_read_user(
			    &bcp, 8,
			    (const void *)(base + jp->interp_bcp * 8)) ||
		    bpf_probe_read_user(
			    &sp, 8,
			    (const void *)(base + jp->interp_sender_sp * 8)))
			return UNWIND_STEP_ERR_READ;
		/* r is left as it was unless the step is OK */
		err = unwind_step_fp(NULL, r);
		if (err != UNWIND_STEP_OK && err != UNWIND_STEP_DONE)
			return err;
		jvm_note(e, i, method | OTELPROF_JVM_F_INTERP, bcp);
		/* else the raw caller sp, base + 16 */
		if (err == UNWIND_STEP_OK && sp > callee_sp && sp <= base + 16)
			r->sp = sp;
		return err;
	}
	for (int k = 0; k < OTELPROF_JVM_HEAPS; k++) {
		if ((u32)k < jp->nheaps && lookup_pc >= jp->heaps[k].low &&
		    lookup_pc < jp->heaps[k].high) {
			h = &jp->heaps[k];
			break;
		}
	}
	if (!h)
		return JVM_NOT_JAVA;
	block = jvm_blob(h, lookup_pc);
	if (!block) {
		count(OTELPROF_CNT_INTERP_ERR);
		return UNWIND_STEP_ERR_RULE;
	}
	block += jp->blob_offset;
	if (bpf_probe_read_user(&fs, 4,
				(const void *)(block + jp->frame_size_off)))
		return UNWIND_STEP_ERR_READ;
	if (fs <= 0 || fs > JVM_MAX_FRAME_WORDS) {
		/* A stub without a frame of its own: noted (userspace
		 * names it by its blob), then the frame pointer. */
		jvm_note(e, i, block, r->pc);
#if UNWIND_AARCH64
		/* aarch64's stubs (SHA, AES, arraycopy) are leaves that
		 * push vector registers without a frame record and return
		 * through x30: sampled there, the caller is x30; its sp lies
		 * what the stub pushed up (its pops before its `ret`; else
		 * the compiled step below searches for it). */
		if (!i && jvm_in_code(jp, r->lr)) {
			s32 pops = scan_stubs ? jvm_stub_pops(r->pc) : -1;

			r->pc = r->lr;
			/* the caller's sp where the stub's code says; else
			 * the search below */
			r->lr = 0;
			if (pops >= 0) {
				r->sp += (u64)pops;
				r->lr = JVM_STUB_SP_EXACT;
			}
			return UNWIND_STEP_OK;
		}
#endif
		return unwind_step_fp(NULL, r);
	}
	/* Compiled: the caller's sp is frame_size words up, the return
	 * address and the saved rbp just below it (on aarch64 the same:
	 * the prologue stores the {x29, x30} pair at the frame's top). */
	sp = r->sp + (u64)fs * 8;
	if (bpf_probe_read_user(&ra, 8, (const void *)(sp - 8)) ||
	    bpf_probe_read_user(&fp, 8, (const void *)(sp - 16)))
		return UNWIND_STEP_ERR_READ;
	jvm_note(e, i, block, r->pc);
#if UNWIND_AARCH64
	/* The caller of a leaf stub (above): the stub's pushes lie between
	 * the sampled sp and this frame, in 16-byte pairs. */
	for (int k = 0; k < JVM_STUB_MAX_PAIRS; k++) {
		if (i != 1 || sp_exact || jvm_caller_pair(jp, ra, fp, sp))
			break;
		sp += 16;
		if (bpf_probe_read_user(&ra, 8, (const void *)(sp - 8)) ||
		    bpf_probe_read_user(&fp, 8, (const void *)(sp - 16)))
			return UNWIND_STEP_ERR_READ;
	}
#endif
	if (!i && !jvm_in_code(jp, ra)) {
#if UNWIND_AARCH64
		/* The leaf may be in its prologue or epilogue, the pair not
		 * (or no longer) stored: the return address is still in x30
		 * and x29 is the caller's. The stack bang before the prologue's
		 * `sub sp` and the safepoint poll after the epilogue's `add
		 * sp` are most of those instructions: sp is the caller's. */
		ra = r->lr;
		if (!jvm_in_code(jp, ra))
			return UNWIND_STEP_ERR_RULE;
		sp = r->sp;
		fp = r->fp;
#else
		/* The leaf may be in its prologue or epilogue, the frame not
		 * (or no longer) set up: the return address at sp (before
		 * push rbp, at ret) or above the saved rbp. */
		sp = r->sp;
		if (bpf_probe_read_user(&ra, 8, (const void *)sp))
			return UNWIND_STEP_ERR_READ;
		fp = r->fp;
		sp += 8;
		if (!jvm_in_code(jp, ra)) {
			if (bpf_probe_read_user(&fp, 8, (const void *)r->sp) ||
			    bpf_probe_read_user(&ra, 8,
						(const void *)(r->sp + 8)))
				return UNWIND_STEP_ERR_READ;
			sp += 8;
		}
#endif
	}
	if (!ra)
		return UNWIND_STEP_DONE;
	r->pc = ra;
	r->sp = sp;
	r->fp = fp;
#if UNWIND_AARCH64
	r->lr = 0; /* the caller's x30 was overwritten by its call */
#endif
	return UNWIND_STEP_OK;
}

/* Is lookup_pc JVM code this walk steps: the interpreter or a code
 * heap? (Exactly where hotspot_step does not answer JVM_NOT_JAVA.) */
static __always_inline bool jvm_owns(const struct otelprof_jvm_proc *jp,
				     u64 lookup_pc)
{
	return (lookup_pc >= jp->interp_low && lookup_pc < jp->interp_high) ||
	       jvm_in_code(jp, lookup_pc);
}

/* One frame: write and step it while it is Java code; 1 to give the walk
 * back (the frame is not Java, or the walk has ended). scan_stubs: read
 * a leaf stub's code for its pushes (aarch64), in the bpf_loop program
 * only: unrolled in the bounded one, the 5.10 verifier refuses it. */
static __always_inline long jvm_frame_(u32 k, void *data, const bool scan_stubs)
{
	struct otelprof_sample_event *e;
	struct unwinder_state *st;
	const struct otelprof_jvm_proc *jp;
	u64 lookup_pc;
	u32 i, tgid;
	int res;

	if (!walk_scratch(&e, &st))
		return 1;
	tgid = e->hdr.pid;
	jp = bpf_map_lookup_elem(&jvm_procs, &tgid);
	i = st->w.n;
	lookup_pc = i ? st->w.r.pc - 1 : st->w.r.pc;
	if (!jp || !jvm_owns(jp, lookup_pc)) {
		/* The frame handed over is not ours: the native walk
		 * steps it (by frame pointer, or stops there). */
		if (!k)
			st->w.declined = 1;
		return 1;
	}
	if (unwind_walk_put(&st->w, e->words, st->max_user_frames))
		return 1;
	res = hotspot_step(e, &st->w.r, i, lookup_pc, scan_stubs);
	if (res == JVM_NOT_JAVA) {
		st->w.error = OTELPROF_CNT_UNWIND_ERR_RULE;
		return 1;
	}
	return unwind_walk_result(&st->w, res);
}

static __always_inline long jvm_frame_scan(u32 k, void *data)
{
	return jvm_frame_(k, data, true);
}

static __always_inline long jvm_frame(u32 k, void *data)
{
	return jvm_frame_(k, data, false);
}

OTELPROF_BOUNDED_LOOP(jvm_walk, jvm_frame_scan)

/* Java frames in a row per program on kernels without bpf_loop; more go
 * back through the native walk, which hands them over again. */
#define JVM_BOUNDED_FRAMES 16

OTELPROF_STEP_RUNTIME_PROGRAMS(hotspot, jvm_walk_loop, jvm_frame,
			       JVM_BOUNDED_FRAMES)
