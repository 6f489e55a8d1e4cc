/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The native user stack walk as the BPF programs run it, shared by the
 * CPU sampler (profiler.bpf.c, perf_event programs) and the off-CPU
 * recorder (offcpu.bpf.c, sched_switch programs): the unwind tables,
 * their accessors, the per-frame step, the walk's set-up and its end (the
 * frames, or a stack copy for userspace). Each object declares these
 * maps; the off-CPU object is given the sampler's tables by name before
 * it loads (lib/sample/offcpu_sampler.c), so both walk the same rows.
 *
 * The includer has included sampler_shared.bpf.h and declared the
 * rodata `target_tgid` and `max_user_frames`; it may define
 * UNWIND_RUNTIME_HANDOFF first (unwind_walk.h: default never).
 */
#ifndef OTELPROF_NATIVE_WALK_BPF_H
#define OTELPROF_NATIVE_WALK_BPF_H

/* A chunk of unwind rows: many small files' tables packed at offsets a
 * userspace allocator hands out, or one big file's table (inner maps may
 * differ in size thanks to BPF_F_INNER_MAP). */
struct unwind_rows_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	/* Userspace fills the arrays through mmap. */
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	/* Sizes, not __type(): the row struct would only be a forward
	 * declaration in BTF here, which libbpf cannot size. */
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(struct unwind_packed_row));
};

/* An array of maps, not a hash: the verifier inlines array lookups. File
 * ids are small and recycled by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, OTELPROF_MAX_UNWIND_FILES);
	__type(key, u32);
	__array(values, struct unwind_rows_map);
} unwind_files SEC(".maps");

/* Per process: its executable mappings. Allocated on use. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 32768);
	__type(key, u32);
	__type(value, struct otelprof_bpf_proc);
} unwind_procs SEC(".maps");

/* The executable mappings of processes with more than fit in their
 * unwind_procs entry, at ranges userspace allocates. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, OTELPROF_BIG_MAPPINGS);
	__type(key, u32);
	__type(value, struct otelprof_bpf_mapping);
} big_mappings SEC(".maps");

/* The walk's memory accessors (unwind_walk.h): user memory, map values. */
static __always_inline struct otelprof_bpf_mapping *big_mapping(u32 idx)
{
	return bpf_map_lookup_elem(&big_mappings, &idx);
}

static __always_inline struct unwind_packed_row *chunk_row(void *rows, u32 idx)
{
	return bpf_map_lookup_elem(rows, &idx);
}

static __always_inline void *row_chunk(u32 id)
{
	return bpf_map_lookup_elem(&unwind_files, &id);
}

#define UNWIND_READ_U64(ctx, addr, out)                                        \
	bpf_probe_read_user((out), sizeof(u64), (const void *)(addr))
#define UNWIND_BIG_MAPPING(ctx, idx) big_mapping(idx)
#define UNWIND_ROWS(ctx, id)	     row_chunk(id)
#define UNWIND_ROW(ctx, rows, idx)   chunk_row((rows), (idx))
#define UNWIND_INLINE		     static __always_inline
#include "unwind_step.h"

#include "unwind_walk.h"
#include "walk_state.bpf.h"

/* One frame of the walk: a bpf_loop callback, or the body of the
 * chained programs' bounded loop. */
static __always_inline long unwind_frame(u32 iter, void *data)
{
	struct otelprof_sample_event *e;
	struct unwinder_state *st;

	if (!walk_scratch(&e, &st))
		return 1;
	return unwind_walk_frame(e, &st->w, e->words, st->max_user_frames);
}

OTELPROF_BOUNDED_LOOP(unwind_walk, unwind_frame)

/* When each thread last got a stack copy: copies are 8 KiB, and while
 * userspace loads a new process's tables a burst of them would flood the
 * ring buffer. Per thread, so that threads sampled together on several
 * CPUs all get theirs. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, u64);
} last_copy SEC(".maps");

/* Copy the top of the user stack, 1 KiB at a time until unreadable. */
static __always_inline u32 copy_stack(struct otelprof_sample_event *e, u64 sp,
				      u32 max_kb)
{
	u32 words = 0;

	for (int k = 0; k < OTELPROF_STACK_COPY_BYTES / 1024; k++) {
		if ((u32)k >= max_kb)
			break;
		if (bpf_probe_read_user(
			    &e->words[(k * 128) & (OTELPROF_USTACK_WORDS - 1)],
			    1024, (const void *)(sp + k * 1024)))
			break;
		words += 128;
	}
	return words;
}

/* When an exec or a mapping change may next wake the reader
 * (OTELPROF_TASK_WAKE_GAP_MS; racy across CPUs: at worst two wake). */
static u64 task_wake_after_ns;

static __always_inline int emit_task_event(u32 type, u32 tgid, u32 tid,
					   u64 start_ns, const char *filename,
					   u64 addr, u64 len)
{
	struct otelprof_task_event *e;

	if (target_tgid && tgid != target_tgid)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(OTELPROF_CNT_TASK_EVENTS_LOST);
		return 0;
	}
	e->hdr.type = type;
	e->hdr.pid = tgid;
	e->hdr.tid = tid;
	e->hdr.cpu = bpf_get_smp_processor_id();
	e->hdr.ktime_boot_ns = bpf_ktime_get_boot_ns();
	e->hdr.proc_start_ns = start_ns;
	e->filename[0] = '\0';
	e->addr = addr;
	e->len = len;
	if (filename)
		bpf_probe_read_kernel_str(e->filename, sizeof(e->filename),
					  filename);
	/* An exec or a mapping change must reach userspace while the
	 * process lives (it reads /proc then: short-lived ones): wake the
	 * reader now, unless one did within the gap (the reader polls again
	 * within it: a build's exec storm paid a wake-up per exec). A fork
	 * is a copy of a known parent and an exit needs nothing of /proc:
	 * they wait for the next batch. */
	u64 flag = ringbuf_wakeup_flag();

	if (type == OTELPROF_EVENT_EXEC ||
	    type == OTELPROF_EVENT_MAPS_CHANGED) {
		u64 now = bpf_ktime_get_ns();

		if (now >= task_wake_after_ns) {
			task_wake_after_ns =
				now + OTELPROF_TASK_WAKE_GAP_MS * 1000000ull;
			flag = BPF_RB_FORCE_WAKEUP;
		}
	}
	bpf_ringbuf_submit(e, flag);
	return 0;
}

/*
 * May this process tell userspace now that its address space changed?
 * At most once per the gap userspace set (it backs the gap off while its
 * rescans find nothing new, and prices it by what a rescan costs): a
 * process that maps and unmaps code in a loop cannot make us re-read its
 * /proc/PID/maps at its own pace. No hook on mmap itself: that would run
 * on every syscall of the host.
 */
static __always_inline bool notify_due(struct otelprof_bpf_proc *proc, u64 now)
{
	if (now < proc->notify_after_ns) {
		count(OTELPROF_CNT_NOTIFY_HELD);
		return false;
	}
	proc->notify_after_ns = now + proc->notify_gap_ns;
	return true;
}

/* The address space changed since userspace read it (one more or one
 * fewer mapping: dlopen, dlclose, a publication of process context):
 * report the new count. Two loads per sample. */
static __always_inline void check_map_count(struct otelprof_bpf_proc *proc,
					    u32 map_count, u32 tgid, u32 tid,
					    u64 now)
{
	if (!proc->map_count) {
		proc->map_count = map_count; /* userspace left it to us */
		return;
	}
	if (proc->map_count == map_count || !notify_due(proc, now))
		return;
	proc->map_count = map_count;
	count(OTELPROF_CNT_MAPS_CHANGED);
	emit_task_event(OTELPROF_EVENT_MAPS_CHANGED, tgid, tid,
			current_start_ns(), NULL, map_count, 0);
}

/* Set up the walk of the user stack: returns the state, or NULL if the
 * process's tables are not in the kernel (a stack copy then). */
static __always_inline struct unwinder_state *
unwind_prepare(struct otelprof_sample_event *e, u32 map_count)
{
	u32 tgid = e->hdr.pid, zero = 0, n;
	struct otelprof_bpf_proc *proc =
		bpf_map_lookup_elem(&unwind_procs, &tgid);
	struct unwinder_state *st = bpf_map_lookup_elem(&unwind_scratch, &zero);
	u64 size;

	if (!e->user_ip || !st || !proc)
		return NULL;
	check_map_count(proc, map_count, tgid, e->hdr.tid,
			e->hdr.ktime_boot_ns);
	/* One copy of the mappings per sample, read by every step; only the
	 * entries in use. */
	n = proc->n;
	if (n > OTELPROF_MAX_PROC_MAPPINGS)
		n = OTELPROF_MAX_PROC_MAPPINGS;
	size = offsetof(struct otelprof_bpf_proc, m) +
	       (u64)n * sizeof(struct otelprof_bpf_mapping);
	if (size > sizeof(st->w.proc))
		size = sizeof(st->w.proc);
	if (bpf_probe_read_kernel(&st->w.proc, size, proc))
		return NULL;
	unwind_walk_begin(&st->w, e->user_ip, e->user_sp, e->user_bp);
#ifdef __TARGET_ARCH_arm64
	unwind_walk_set_lr(&st->w, e->user_lr);
#endif
	st->map_count = map_count;
	st->max_user_frames = max_user_frames;
	return st;
}

/* After the walk (st NULL: there was none): the frames, or a stack copy. */
static __always_inline void unwind_finish(struct otelprof_sample_event *e,
					  struct unwinder_state *st)
{
	u32 tgid = e->hdr.pid, tid = e->hdr.tid;

	if (!e->user_ip)
		return;
	if (st) {
		struct unwind_walk *w = &st->w;

		if (w->error != OTELPROF_CNT_UNWIND_NO_MAPPING &&
		    w->error != OTELPROF_CNT_UNWIND_PENDING) {
			e->n_user = w->n;
			e->flags |= w->flags;
			if (w->flags & OTELPROF_SAMPLE_F_COMPLETE)
				count(OTELPROF_CNT_UNWIND_COMPLETE);
			else if (w->flags & OTELPROF_SAMPLE_F_TRUNCATED)
				count(OTELPROF_CNT_UNWIND_TRUNCATED);
			else if (w->error)
				count(w->error);
			return;
		}
		/* A runtime's walk (a JVM's) that reached a file whose
		 * table is still being built (libjvm's takes up to a
		 * second) after its frames: keep the frames so far. A stack
		 * copy would lose the runtime's frames (userspace unwinds a
		 * copy's JIT frames by frame pointer) for a few native ones
		 * below them. */
		if (w->error == OTELPROF_CNT_UNWIND_PENDING &&
		    runtime_noted(e)) {
			e->n_user = w->n;
			count(w->error);
			return;
		}
		/* A pc in no mapping userspace told us about. Within the
		 * process's notify gap: keep the frames unwound so far. */
		if (w->error == OTELPROF_CNT_UNWIND_NO_MAPPING) {
			struct otelprof_bpf_proc *proc =
				bpf_map_lookup_elem(&unwind_procs, &tgid);

			if (proc && !notify_due(proc, e->hdr.ktime_boot_ns)) {
				e->n_user = w->n;
				count(w->error);
				return;
			}
			/* The copy makes userspace rescan: it sees this
			 * count. */
			if (proc)
				proc->map_count = st->map_count;
		}
	}
	/* Not known yet, or code mapped since userspace last looked: ship
	 * the top of the stack; userspace unwinds it with fresh tables. At
	 * most one copy per thread per OTELPROF_COPY_INTERVAL_NS; in
	 * between, the sample keeps its leaf frame and is flagged. */
	{
		u64 now = e->hdr.ktime_boot_ns, *last;

		last = bpf_map_lookup_elem(&last_copy, &tid);
		if (last && now - *last < OTELPROF_COPY_INTERVAL_NS) {
			/* Runtime frames noted: keep the walk (see above). */
			e->n_user = st && runtime_noted(e) ? st->w.n : 1;
			e->words[0] = e->user_ip;
			e->flags |= OTELPROF_SAMPLE_F_PENDING;
			count(OTELPROF_CNT_UNWIND_PENDING);
			return;
		}
		bpf_map_update_elem(&last_copy, &tid, &now, BPF_ANY);
	}
	/* A process whose runtime appends frames keeps room for them after
	 * the copy. */
	{
		const struct otelprof_runtime_proc *rp =
			bpf_map_lookup_elem(&runtime_procs, &tgid);

		e->n_user = copy_stack(
			e, e->user_sp,
			rp && rp->copy_kb ? rp->copy_kb
					  : OTELPROF_STACK_COPY_BYTES / 1024);
	}
	/* Not even the first KiB: userspace gets the leaf frame only. */
	if (!e->n_user)
		count(OTELPROF_CNT_USTACK_ERR);
	e->flags |= OTELPROF_SAMPLE_F_STACK_COPY;
	count(OTELPROF_CNT_STACK_COPIES);
}

#endif
