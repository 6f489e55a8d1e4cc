/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Glue between what userspace knows (files, processes) and the BPF
 * unwinder: builds a file's unwind table when the file is first seen,
 * mirrors every process's executable mappings into the kernel, and unwinds
 * the stack copies of samples the kernel could not unwind itself.
 */
#ifndef OTELPROF_UNWIND_PROCESS_UNWIND_H
#define OTELPROF_UNWIND_PROCESS_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include "filestore/file_cache.h"
#include "process/process_table.h"
#include "profiler_types.h"
#include "unwind/unwind_maps.h"
#include "util/work_queue.h"

/* Files at least this big get their table built on the worker thread so
 * the drain thread never stalls on them (libc: ~15 ms, gcc's cc1: ~1 s):
 * a process's exec event, read behind them, must be handled while the
 * process is still there. Smaller ones (well under a millisecond) inline,
 * where their process is known the moment its first sample arrives. */
#define UNWIND_ASYNC_MIN_FILE_BYTES (256u << 10)

/* Fair shares of the kernel's unwind rows (8 bytes each): a process may
 * have tables of at most UNWIND_PROCESS_MAX_ROWS rows loaded on its behalf
 * (files it was the first to map; 64 MiB), the host at most
 * UNWIND_HOST_MAX_ROWS (256 MiB). Beyond, files unwind by frame pointers
 * and the refusal is counted. */
#define UNWIND_PROCESS_MAX_ROWS (8ull << 20)
#define UNWIND_HOST_MAX_ROWS	(32ull << 20)

struct unwind_job;

/* What the unwinder keeps of one file, in its own table by the file's
 * slot (files/file_table.h). */
struct unwind_file {
	struct unwind_slot slot; /* where the kernel has the rows (id 0: not
				    in the kernel) */
	bool pending; /* table being built in the background (or the file
			 still being read: no table yet) */
	bool fresh;   /* table installed in this pass (re-push marks) */
	int err;      /* why it has no table (0: it has one, or none yet) */
};

/* What the unwinder counts (for otelprof_stats). */
struct unwind_counters {
	/* Stack copies whose walk stopped short, by reason (enum
	 * otelprof_counter: OTELPROF_CNT_UNWIND_ERR_*, _NO_MAPPING,
	 * _PENDING), as the kernel counts its own walks' stops. */
	uint64_t copy_stops[OTELPROF_CNT_MAX];
	uint64_t table_errors, build_ns;
	uint64_t refused_process, refused_host; /* budgets, see above */
	uint64_t over_budget; /* builds refused: the file's memory budget */
	uint64_t load_errors; /* background-built tables that failed */
	uint64_t rows_unrepresentable; /* in those: stored as INVALID */
};

struct process_unwind {
	struct unwind_maps maps;
	struct process_table *procs;
	struct file_cache *files;   /* symbols: where a mapping's code is */
	struct unwind_file *ufiles; /* by file slot */
	uint32_t nufiles;
	bool any_repush; /* some process has unwind_repush set */
	/* Background builds, one worker, no bound (one job per big file);
	 * closing: a build in progress stops at its next FDE (stopping). */
	struct work_queue builds;
	int notify_fd; /* eventfd: a build finished (drain thread polls it) */
	struct unwind_counters counters;
};

/* With files_fd and procs_fd < 0 tables are built for userspace use only
 * (tests, tools). */
void process_unwind_init(struct process_unwind *pu, struct process_table *t,
			 struct file_cache *files, int files_fd, int procs_fd);
/* Its per-file table and maps (after process_unwind_stop_worker). */
void process_unwind_free(struct process_unwind *pu);
/* The unwinder's entry of f (by slot): NULL only on -ENOMEM. */
struct unwind_file *process_unwind_file(struct process_unwind *pu,
					const struct file *f);

/*
 * The per-file steps, called by the agent's per-file steps
 * (lib/agent/file_sync.c) after the symbolizer's:
 *   file_loading  f is read on the loader thread: pending until ready
 *   file_ready    f's symbols are read: build its table from fd (mem/len
 *                 for the vDSO; neither: it was not read, no table),
 *                 inline or on the worker for big files
 *   file_freed    f left the file table: its rows leave the kernel
 */
void process_unwind_file_loading(struct process_unwind *pu,
				 const struct file *f);
void process_unwind_file_ready(struct process_unwind *pu, struct file *f,
			       int fd, const void *mem, size_t len);
void process_unwind_file_freed(struct process_unwind *pu, const struct file *f);
/* p is new, rescanned or has files read since: write its whole kernel
 * entry again from its resolved files (a mapping whose file is not
 * resolved yet is pending: its samples are held or copied). Whole,
 * whatever changed: the entry is one record, and a rescan also moves when
 * the sampler may next report a change (notify_after_ns). */
void process_unwind_sync(struct process_unwind *pu, struct process *p);
/* p is about to be freed: drop its kernel entry and big_mappings range. */
void process_unwind_forget(struct process_unwind *pu, struct process *p);

/* Start the background builder (only with kernel maps). 0 or -errno.
 * The file cache's loader is started by the caller, with the same
 * notify_fd. */
int process_unwind_start_worker(struct process_unwind *pu);
/* Reset the wake-up (notify_fd) before taking what the threads finished:
 * a later write wakes the drain thread again. */
void process_unwind_take_wakeup(struct process_unwind *pu);
/* Install finished background builds: load them into the kernel and
 * re-push the processes that map them. Call with the state lock held.
 * Returns how many were installed. */
int process_unwind_finish_builds(struct process_unwind *pu);
/* Readable when a background build has finished (-1 without worker);
 * process_unwind_finish_builds resets it. */
static inline int process_unwind_notify_fd(const struct process_unwind *pu)
{
	return pu->notify_fd;
}
/* Builds queued or not yet installed. */
bool process_unwind_busy(struct process_unwind *pu);
/* Stop the worker and drop unfinished jobs (before freeing the caches). */
void process_unwind_stop_worker(struct process_unwind *pu);

/* What the walk of a stack copy gave. */
struct unwind_copy {
	uint32_t n;	/* frames written */
	uint32_t flags; /* OTELPROF_SAMPLE_F_COMPLETE / _TRUNCATED */
	/* Why it stopped short (enum otelprof_counter), 0: it did not.
	 * OTELPROF_CNT_UNWIND_NO_MAPPING: a pc in no mapping the process
	 * table knows (code mapped since its last scan: the caller may have
	 * it rescanned and walk again); _PENDING: at a file whose table is
	 * still being built (the caller may hold the sample), or whose file
	 * is not resolved yet (`unresolved`: the caller may resolve it and
	 * walk again). */
	uint32_t error;
	struct proc_mapping *unresolved;
};

/*
 * Unwind a OTELPROF_SAMPLE_F_STACK_COPY sample of process p in userspace
 * with the same step code as the kernel, against the mappings the process
 * table knows now (never rescanning). Writes up to max frames (pcs, leaf
 * first) and their count, flags and stop into *out.
 */
void process_unwind_copy(struct process_unwind *pu, struct process *p,
			 const struct otelprof_sample_event *e,
			 uint64_t *frames, uint32_t max,
			 struct unwind_copy *out);
/* Count the walk c the caller keeps (once per sample: not a walk it
 * repeats or a sample it holds). */
void process_unwind_count_copy(struct process_unwind *pu,
			       const struct unwind_copy *c);

#endif
