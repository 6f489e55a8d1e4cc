// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * V8's walk (OTELPROF_RT_MODE_STEP): the native walk hands over a frame
 * at a pc in code without CFI of a V8 process (its JIT code, or its
 * embedded builtins, the interpreter's among them); this program walks
 * V8's frames by the frame pointer, which every V8 frame keeps, and by
 * the slot each frame has at fp + off_fp_context: a Smi there is a frame
 * type marker (entry, exit, stub, builtin exit, ... frames), anything
 * else the context of a JavaScript frame, whose JSFunction sits at fp +
 * off_fp_function. Each frame is noted as a pair (runtime_note): the
 * JSFunction and the pc, or for a frame running builtins (Ignition's
 * bytecode handlers) the bytecode-offset slot. At the first pc outside V8's
 * code the walk goes back to the native walk (OTELPROF_PROG_RESUME). Loaded
 * when the first V8 process is found. Every read is of process memory and may
 * fail: the walk then stops there, keeping what it has.
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

/* Per process: where V8's code is and its frame layout (userspace). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, struct otelprof_v8_proc);
} v8_procs SEC(".maps");

/* Range k holding pc, or -1. */
static __always_inline int v8_range(const struct otelprof_v8_proc *vp, u64 pc)
{
	int r = -1;

	for (int k = 0; k < OTELPROF_V8_RANGES; k++)
		if ((u32)k < vp->nranges && pc >= vp->low[k] &&
		    pc < vp->high[k])
			r = k;
	return r;
}

/* Note frame i: word0 the JSFunction, word1 the pc or the
 * bytecode-offset slot. */
static __always_inline void v8_note(struct otelprof_sample_event *e, u32 i,
				    u64 word0, u64 word1)
{
	runtime_note(
		e, OTELPROF_RT_V8,
		((u64)(i & OTELPROF_RT_INDEX_MAX) << OTELPROF_JVM_INDEX_SHIFT) |
			(word0 & OTELPROF_JVM_PTR_MASK) |
			(word0 & OTELPROF_RT_WORD0_FLAGS),
		word1);
}

/* Words of the stack searched for a frameless builtin's return address:
 * a leaf builtin pushes few before the sample lands. */
#define V8_RA_WORDS 2

/*
 * The return address a builtin without a frame of its own was called
 * with, at the sampled frame (its caller's code, baseline or optimized,
 * has no other record of its pc): aarch64's link register, else the
 * first of the top V8_RA_WORDS words of the stack that is in V8's JIT
 * code (not in builtins: their return addresses are the builtins' own
 * calls). False if none is.
 */
/* Whether pc is in V8's JIT code (a range past the builtins'): one
 * answer, not a range index, keeps the verifier's states few. */
static __always_inline bool v8_in_jit(const struct otelprof_v8_proc *vp, u64 pc)
{
	bool hit = false;

	for (int k = 0; k < OTELPROF_V8_RANGES; k++)
		if ((u32)k >= vp->nbuiltin && (u32)k < vp->nranges &&
		    pc >= vp->low[k] && pc < vp->high[k])
			hit = true;
	return hit;
}

static __always_inline bool v8_return_pc(const struct otelprof_v8_proc *vp,
					 const struct unwind_regs *r, u64 *ra)
{
	u64 words[V8_RA_WORDS];

#if UNWIND_AARCH64
	if (r->lr && v8_in_jit(vp, r->lr - 1)) {
		*ra = r->lr;
		return true;
	}
#endif
	if (bpf_probe_read_user(words, sizeof(words), (const void *)r->sp))
		return false;
	for (int w = 0; w < V8_RA_WORDS; w++)
		if (v8_in_jit(vp, words[w] - 1)) {
			*ra = words[w];
			return true;
		}
	return false;
}

/*
 * One V8 frame at a pc in range k of V8's code: noted, and r becomes the
 * caller's registers by the frame pointer. A pc in a builtin without a
 * frame of its own (a bytecode handler, a leaf stub) runs in its
 * caller's frame, which fp still points at: that frame is noted at this
 * index, and its caller is next, as the leaf's time belongs to it.
 */
static __always_inline int v8_step(struct otelprof_sample_event *e,
				   const struct otelprof_v8_proc *vp,
				   struct unwind_regs *r, u32 i, int k)
{
	u64 fp = r->fp, marker = 0, fn = 0, slot = 0, ra = 0;

	if (!fp || (fp & 7) || fp < r->sp)
		return UNWIND_STEP_ERR_RULE;
	if (bpf_probe_read_user(&marker, 8,
				(const void *)(fp + vp->off_fp_context)))
		return UNWIND_STEP_ERR_READ;
	if ((marker & vp->smi_tag_mask) == vp->smi_tag) {
		/* A typed frame (entry, exit, stub, ...): not noted, its
		 * native frame (Builtins_JSEntry, ...) stays. Below an entry
		 * frame is native code (unwound by its CFI from sp): on
		 * aarch64 JSEntry saved the callee-saved registers above its
		 * frame record, so the caller's sp is that much further. */
		int res = unwind_step_fp(NULL, r);

		if (res == UNWIND_STEP_OK && vp->entry_saved_words &&
		    (marker == vp->entry_marker ||
		     marker == vp->construct_entry_marker))
			r->sp += (u64)vp->entry_saved_words * 8;
		return res;
	}
	if (bpf_probe_read_user(&fn, 8,
				(const void *)(fp + vp->off_fp_function)))
		return UNWIND_STEP_ERR_READ;
	if ((fn & vp->heap_tag_mask) == vp->heap_tag) {
		if ((u32)k < vp->nbuiltin) {
			u64 bca = 0;

			if (bpf_probe_read_user(
				    &slot, 8,
				    (const void *)(fp +
						   vp->off_fp_bytecode_offset)))
				slot = 0;
			/* An offset (a Smi: low half zero) is trusted only
			 * with the frame's BytecodeArray beside it, matched
			 * in userspace against the function's: an optimized
			 * frame running a frameless builtin has no offset
			 * in that slot. */
			if (!(slot & 0xffffffff) && vp->off_fp_bytecode_array &&
			    !bpf_probe_read_user(
				    &bca, 8,
				    (const void *)(fp +
						   vp->off_fp_bytecode_array)))
				slot |= (u32)bca;
			else if (i == 0 && (slot & 0xffffffff) &&
				 v8_return_pc(vp, r, &ra)) {
				/* baseline or optimized code in a builtin
				 * without a frame: its pc is the return
				 * address the call left */
				v8_note(e, i, fn | OTELPROF_V8_F_RETURN_PC, ra);
				return unwind_step_fp(NULL, r);
			}
			v8_note(e, i, fn | OTELPROF_V8_F_BUILTIN_PC, slot);
		} else {
			v8_note(e, i, fn, r->pc);
		}
	}
	return unwind_step_fp(NULL, r);
}

/* One frame: write and step it while it is V8 code; 1 to give the walk
 * back (the frame is not V8's, or the walk has ended). */
static __always_inline long v8_frame(u32 n, void *data)
{
	struct otelprof_sample_event *e;
	struct unwinder_state *st;
	const struct otelprof_v8_proc *vp;
	u64 lookup_pc;
	u32 i, tgid;
	int k;

	if (!walk_scratch(&e, &st))
		return 1;
	tgid = e->hdr.pid;
	vp = bpf_map_lookup_elem(&v8_procs, &tgid);
	i = st->w.n;
	lookup_pc = i ? st->w.r.pc - 1 : st->w.r.pc;
	k = vp ? v8_range(vp, lookup_pc) : -1;
	if (k < 0) {
		/* The frame handed over is not V8's: the native walk steps
		 * it (by frame pointer, or stops there). */
		if (!n)
			st->w.declined = 1;
		return 1;
	}
	if (unwind_walk_put(&st->w, e->words, st->max_user_frames))
		return 1;
	return unwind_walk_result(&st->w, v8_step(e, vp, &st->w.r, i, k));
}

OTELPROF_BOUNDED_LOOP(v8_walk, v8_frame)

/* V8 frames in a row per program on kernels without bpf_loop; more go
 * back through the native walk, which hands them over again. */
#define V8_BOUNDED_FRAMES 16

OTELPROF_STEP_RUNTIME_PROGRAMS(v8, v8_walk_loop, v8_frame, V8_BOUNDED_FRAMES)
