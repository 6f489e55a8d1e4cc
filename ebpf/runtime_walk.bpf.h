/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The native walk's state and steps, for a runtime's program that is
 * handed the walk (HotSpot's and V8's frames, PHP's and Ruby's JIT code):
 * such a program reads user memory only (its own steps, the frame-pointer
 * step); it never searches mappings or rows, which the native walk does
 * once it has the walk back. Include after sampler_shared.bpf.h.
 */
#ifndef OTELPROF_RUNTIME_WALK_BPF_H
#define OTELPROF_RUNTIME_WALK_BPF_H

#define UNWIND_READ_U64(ctx, addr, out)                                        \
	bpf_probe_read_user((out), sizeof(u64), (const void *)(addr))
#define UNWIND_BIG_MAPPING(ctx, idx)                                           \
	((void)(idx), (struct otelprof_bpf_mapping *)0)
#define UNWIND_ROWS(ctx, id)	   ((void)(id), (void *)0)
#define UNWIND_ROW(ctx, rows, idx) ((void)(idx), (struct unwind_packed_row *)0)
#define UNWIND_INLINE		   static __always_inline
#include "unwind_step.h"
#include "unwind_walk.h"
#include "walk_state.bpf.h"

#endif
