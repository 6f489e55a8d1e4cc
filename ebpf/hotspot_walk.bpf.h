/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The HotSpot step of the native walk: a pc in anonymous code of a JVM
 * (its code cache, see otelprof_jvm_proc) is unwound by the JVM's own
 * frame layout instead of the frame pointer, which compiled Java code
 * does not keep. Each Java frame is also noted as a {pointer, bci/pc}
 * pair; after the walk the pairs follow the native frames in the sample
 * (hotspot_finish), so userspace can name the methods. Every read is of
 * process memory and may fail: the step then returns an error and the
 * walk stops there, keeping what it has.
 */
#ifndef OTELPROF_HOTSPOT_WALK_BPF_H
#define OTELPROF_HOTSPOT_WALK_BPF_H

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

/* The Java frames of the sample being walked, in walk order. */
struct jvm_scratch {
	u64 stamp; /* the sample's ktime: pairs of an older sample are
		      stale */
	u32 n;
	u32 pad;
	u64 pairs[2 * OTELPROF_MAX_INTERP_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct jvm_scratch);
} jvm_scratch SEC(".maps");

static __always_inline void jvm_note(struct otelprof_sample_event *e, u32 i,
				     u64 word0, u64 word1)
{
	u32 zero = 0, n;
	struct jvm_scratch *js = bpf_map_lookup_elem(&jvm_scratch, &zero);

	if (!js)
		return;
	if (js->stamp != e->hdr.ktime_boot_ns) {
		js->stamp = e->hdr.ktime_boot_ns;
		js->n = 0;
	}
	n = js->n;
	if (n >= OTELPROF_MAX_INTERP_FRAMES)
		return;
	js->pairs[(2 * n) & (2 * OTELPROF_MAX_INTERP_FRAMES - 1)] =
		((u64)i << OTELPROF_JVM_INDEX_SHIFT) |
		(word0 & OTELPROF_JVM_PTR_MASK) |
		(word0 & OTELPROF_JVM_F_INTERP);
	js->pairs[(2 * n + 1) & (2 * OTELPROF_MAX_INTERP_FRAMES - 1)] = word1;
	js->n = n + 1;
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

/*
 * One frame at a pc in the JVM's anonymous code: r becomes the caller's
 * registers. i: the frame's index in the sample; lookup_pc: pc, or pc - 1
 * for a return address. JVM_NOT_JAVA if the process is no JVM or the pc
 * is in none of its code heaps (the caller then tries the frame pointer).
 */
static __always_inline int hotspot_step(struct otelprof_sample_event *e,
					struct unwind_regs *r, u32 i,
					u64 lookup_pc)
{
	u32 tgid = e->hdr.pid;
	const struct otelprof_jvm_proc *jp =
		bpf_map_lookup_elem(&jvm_procs, &tgid);
	const struct otelprof_jvm_heap *h = NULL;
	u64 block, method = 0, bcp = 0, sp, ra = 0, fp = 0;
	s32 fs = 0;

	if (!jp)
		return JVM_NOT_JAVA;
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
		return unwind_step_fp(NULL, r);
	}
	/* Compiled: the caller's sp is frame_size words up, the return
	 * address and the saved rbp just below it. */
	sp = r->sp + (u64)fs * 8;
	if (bpf_probe_read_user(&ra, 8, (const void *)(sp - 8)) ||
	    bpf_probe_read_user(&fp, 8, (const void *)(sp - 16)))
		return UNWIND_STEP_ERR_READ;
	jvm_note(e, i, block, r->pc);
	if (!i && !jvm_in_code(jp, ra)) {
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
	}
	if (!ra)
		return UNWIND_STEP_DONE;
	r->pc = ra;
	r->sp = sp;
	r->fp = fp;
	return UNWIND_STEP_OK;
}

/* Did the walk of this sample note Java frames? */
static __always_inline bool hotspot_noted(const struct otelprof_sample_event *e)
{
	u32 zero = 0;
	struct jvm_scratch *js = bpf_map_lookup_elem(&jvm_scratch, &zero);

	return js && js->stamp == e->hdr.ktime_boot_ns && js->n;
}

/* After the walk: the Java frames noted go after the native ones. */
static __always_inline void hotspot_finish(struct otelprof_sample_event *e)
{
	u32 zero = 0, n, at;
	struct jvm_scratch *js = bpf_map_lookup_elem(&jvm_scratch, &zero);

	if (!js || js->stamp != e->hdr.ktime_boot_ns || !js->n ||
	    (e->flags & OTELPROF_SAMPLE_F_STACK_COPY) || e->n_interp)
		return;
	n = js->n;
	at = e->n_user;
	if (n > OTELPROF_MAX_INTERP_FRAMES ||
	    at > OTELPROF_USTACK_WORDS - 2 * OTELPROF_MAX_INTERP_FRAMES)
		return;
	if (bpf_probe_read_kernel(&e->ustack[at], (u64)n * 16, js->pairs))
		return;
	e->n_user = at + 2 * n;
	e->n_interp = n;
	e->interp_kind = OTELPROF_INTERP_HOTSPOT;
	count(OTELPROF_CNT_INTERP_SAMPLES);
}

#endif
