/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the profiler knows of each live process: identity (pid + start time,
 * so a reused pid is a new process), executable, container, executable
 * mappings. Filled from /proc on the first sample of a process and again
 * when a sample hits an address no known mapping covers (a dlopen since the
 * last scan); kept current by exec/exit events from the BPF side.
 */
#ifndef OTELPROF_PROCESS_PROCESS_TABLE_H
#define OTELPROF_PROCESS_PROCESS_TABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/proc_info.h"
#include "process/proc_environ.h"
#include "process/proc_maps.h"
#include "files/file_table.h"
#include "util/idxmap.h"

/*
 * Rescans a process asks for by what it does (a pc in no known mapping, or
 * its mapping count moved) are priced: after one that took d, the next is
 * at least PROCESS_RESCAN_COST_FACTOR x d later (a process with 20,000
 * mappings cannot keep us reading its maps), and the gap doubles while
 * rescans find no executable mapping added or removed, from
 * PROCESS_RESCAN_MIN_GAP_NS up to PROCESS_RESCAN_MAX_GAP_NS. All processes
 * share a budget of PROCESS_RESCAN_BUDGET_PER_S of scan time per second
 * (burst PROCESS_RESCAN_BUDGET_MAX_NS); what does not fit waits its turn
 * (round robin) and is counted.
 */
/* How long a process known from a fork or exec waits for a sample before
 * its files, unwind tables and runtimes are set up (the agent's setting
 * of process_table.young_ns): a build's or a shell's processes mostly
 * exit within it, unsampled. */
#define PROCESS_YOUNG_NS	     (250ull * 1000 * 1000)
#define PROCESS_RESCAN_COST_FACTOR   20u
#define PROCESS_RESCAN_MIN_GAP_NS    (2ull * 1000 * 1000)
#define PROCESS_RESCAN_MAX_GAP_NS    (5000ull * 1000 * 1000)
#define PROCESS_RESCAN_BUDGET_PER_S  (50ull * 1000 * 1000)
#define PROCESS_RESCAN_BUDGET_MAX_NS (250ull * 1000 * 1000)
/* A process whose last read of its maps took longer is rescanned from the
 * drain pass with the state lock released while /proc is read and parsed
 * (20,000 mappings: 5-16 ms), not inline where it was asked for. */
#define PROCESS_RESCAN_INLINE_MAX_NS (2ull * 1000 * 1000)

struct process_ctx_state;
struct jit_process;
struct interp_process;
struct perl_process;
struct v8_process;
struct hotspot_process;
struct php_process;

/* What changed in a process, as the table reports it. */
enum process_change_why {
	PROCESS_NEW,	     /* first sight, a fork's copy: every mapping */
	PROCESS_RESCANNED,   /* its maps read again: `fresh` marks the new */
	PROCESS_FILES_READY, /* no rescan: files it maps were read since */
};
struct process_change {
	enum process_change_why why;
	/* RESCANNED: executable mappings the scan found that the last one
	 * did not (marked `fresh`), and the last one's it no longer found */
	uint32_t added, removed;
};

struct process {
	uint32_t pid;
	uint32_t slot;
	uint64_t serial;     /* unique for the table's lifetime */
	uint64_t start_time; /* /proc/PID/stat starttime, clock ticks since
				boot (0 if unknown) */
	uint64_t start_ns;   /* start_boottime from the kernel (0 until an
				event carried it): the exact identity */
	char comm[16];
	char *exe_path; /* "" if unknown (kernel threads) */
	const char *exe_name;
	char container_id[CONTAINER_ID_LEN + 1];
	struct proc_maps maps;
	uint64_t last_scan_ns;
	bool info_ok;	  /* /proc could be read */
	bool exited;	  /* exit seen; evicted once its samples are encoded */
	uint64_t exit_ns; /* when (boot clock) */
	uint64_t last_seen_ns;
	struct process_ctx_state *ctx; /* trace correlation; owned by
					  context/context_tracker.c */
	bool ghost;		 /* known from a sample only, not from /proc: no
				    mappings, no rescans (process_table_get_sample) */
	struct jit_process *jit; /* JIT symbol files; NULL until a frame
				    in anonymous code asked */
	/* Its unwind_procs entry was written (process_unwind.c): only
	 * then is there one to delete when it goes. */
	bool unwind_in_kernel;
	/* Rescans the process asks for (process_table_rescan_asked). */
	uint64_t next_rescan_ns;   /* boot clock: none before */
	uint64_t rescan_gap_ns;	   /* backoff, see PROCESS_RESCAN_* */
	uint32_t kernel_map_count; /* mm->map_count the last scan saw, at
				      most (0: unknown) */
	bool rescan_held;	   /* asked for, waiting for its budget */
	uint64_t scan_cost_ns;	   /* its last maps read and parse */
	bool loads_deferred;	   /* files left for a later slice */
	bool unwind_repush;	   /* a file it maps got its table: its
				      kernel entry is written again */
	uint64_t unwind_rows;	   /* kernel rows loaded on its behalf */
	/* Its range of the kernel's big_mappings (unwinder's; n 0: none). */
	uint32_t big_base, big_n;
	bool forked; /* a copy of its parent (fork event), not read from
			/proc: a sample whose main thread has another name
			is from after an exec and reads /proc */
	struct interp_process *interp; /* its interpreter (CPython), owned
					  by interp/interp_tracker.c */
	struct hotspot_process *jvm;   /* its JVM (HotSpot), owned by
					  interp/hotspot_tracker.c */
	struct perl_process *perl;     /* its Perl interpreter, owned by
					  runtimes/perl/perl_tracker.c */
	struct php_process *php;       /* its PHP executor, owned by
					  runtimes/php/php_tracker.c */
	struct v8_process *v8;	       /* its V8 isolate (Node.js), owned by
					  runtimes/v8/v8_tracker.c */
	struct proc_env *env; /* include_env_vars values (NULL: none) */
	/* Its change not yet taken (process_table_take_changed). */
	bool change_pending;
	struct process_change change;
	struct process *next_changed;
	bool removed; /* out of the table, waiting to be forgotten */
	struct process *next_removed;
	/* Known from an event (fork, exec), not yet sampled: its first
	 * change is held until then (boot clock; 0: not held), see
	 * process_table_young. */
	uint64_t young_until_ns;
	bool sampled;	    /* a sample of it was seen */
	bool young_dropped; /* exited young: its change dropped */
};

/* What the process table counts (for otelprof_stats). */
struct process_table_counters {
	uint64_t scan_errors;
	uint64_t pid_reuses; /* entries replaced by a new process */
	uint64_t rescans_asked, rescans_held; /* held: waited for a budget */
	uint64_t files_refused; /* mappings of non-regular files, not opened */
	struct env_outcome env; /* environ reads refused, values dropped */
	uint64_t gone_young;	/* left while young: never synced */
};

struct process_table {
	struct process **procs; /* by slot; NULL = free */
	uint32_t nslots, cap;
	struct idxmap index; /* pid -> slot */
	uint64_t next_serial;
	struct file_table *files;
	uint64_t slice_end_ns; /* CLOCK_MONOTONIC end of this pass's slice */
	bool slice_spent;      /* this pass left work for the next one */
	/* The caller's lock, released around slow /proc reads of held
	 * rescans (NULL: never released). */
	void (*unlock)(void *ctx);
	void (*relock)(void *ctx);
	void *lock_ctx;
	int64_t rescan_budget_ns; /* shared budget, see above */
	uint64_t rescan_budget_at_ns;
	uint32_t held_cursor;	/* round robin over held rescans */
	uint32_t resume_cursor; /* over deferred loads, within a pass */
	/* Some process may have held rescans / deferred loads: without, a
	 * pass does not look at every slot (twice per drain pass). */
	bool any_held, any_deferred;
	struct process *ghost; /* the last pre-exec sample's entry */
	long clk_tck;
	char proc_root[64]; /* "/proc", overridable for tests */
	/* include_env_vars: read from each process's environ at first
	 * sight (NULL or none: never read). */
	const struct env_names *env_names;
	/* What changed since the caller last took it (the agent, after
	 * every call that can change the table: lib/agent/process_sync.c).
	 * The table calls no one: removed processes wait here, out of the
	 * index, until the caller has had every stage forget them. */
	struct process *changed, *changed_last;
	struct process *removed;
	/* How long a process known from a fork or exec event waits for its
	 * first sample before its first change is taken (0: not at all). */
	uint64_t young_ns;
	struct process_table_counters counters;
};

void process_table_init(struct process_table *t, struct file_table *files);
void process_table_free(struct process_table *t);
/* Files mapped by a process get its last activity as their last use
 * (last_used_ns, the stages' eviction order): before evictions. */
void process_table_stamp_files(struct process_table *t);
/*
 * What changed, taken one process at a time, oldest first: first the
 * processes removed (each stage forgets it, then process_table_release
 * frees it: a pid reused meanwhile must not lose the new process's state),
 * then those with new or re-read mappings (*c: what changed; several
 * changes not taken in between are merged). A removed process's pending
 * change is dropped. NULL: nothing (left).
 */
struct process *process_table_take_removed(struct process_table *t);
void process_table_release(struct process_table *t, struct process *p);
struct process *process_table_take_changed(struct process_table *t,
					   struct process_change *c);
/* p, new from an event (exec) and not sampled, is young: its first
 * change (files, unwind tables, contexts, runtimes) waits until a sample
 * of it is seen or young_ns have passed. Most processes a shell or a
 * build starts exit within milliseconds, unsampled; /proc is still read
 * at once (a sampled short process must be known after its exit). */
void process_table_young(struct process_table *t, struct process *p,
			 uint64_t now_ns);
/* Find pid, reading /proc on first sight. `comm` (from the sample) is used
 * when /proc is already gone. start_ns: the process's start (boot clock,
 * from the sample; 0 if unknown): an entry that started at another time is
 * an earlier process with a reused pid and is replaced. Never NULL except
 * on -ENOMEM. */
struct process *process_table_get(struct process_table *t, uint32_t pid,
				  const char *comm, uint64_t start_ns,
				  uint64_t now_ns);
/* The same for a sample of thread tid named comm: a sample taken before
 * an exec but read after it (its exec event still behind it in the ring
 * buffer) must not be resolved against the new image, which is what /proc
 * shows now. If the thread's name in /proc differs from the sample's, the
 * sample gets a one-off entry named after it, without mappings, outside
 * the table (valid until the next such call). */
struct process *process_table_get_sample(struct process_table *t, uint32_t pid,
					 uint32_t tid, const char *comm,
					 uint64_t start_ns, uint64_t now_ns);
/* The process for pid if known (no /proc access), else NULL. */
struct process *process_table_find(struct process_table *t, uint32_t pid);
/* The process pid that has serial, exited or not (no /proc access), else
 * NULL. */
struct process *process_table_find_serial(struct process_table *t, uint32_t pid,
					  uint64_t serial);
/* When /proc could not tell the executable (the process was gone), use
 * the path the exec event carried (at most len bytes, may lack a NUL). */
void process_set_exec_path(struct process *p, const char *path, size_t len);
/* Rescan the mappings of p now, unpriced (false: a ghost, which has
 * none). Unlike process_table_rescan_asked, no gap or shared budget
 * applies. */
bool process_table_rescan(struct process_table *t, struct process *p,
			  uint64_t now_ns);
/* A rescan p asked for by what it did (its address space changed, or a
 * pc of it lies in no known mapping). Done now if p's gap and the shared
 * budget allow (true), else held for process_table_run_held. map_count:
 * the process's mm->map_count when it asked (0: unknown). */
bool process_table_rescan_asked(struct process_table *t, struct process *p,
				uint32_t map_count);
/* The next held rescan whose time has come, if the shared budget and the
 * pass's slice allow (true: one was done; its change is for the caller to
 * take before the next). With a lock set (process_table_set_lock) it is
 * released while a slow process's maps are read, so call it from the
 * drain pass only, where nothing else refers to a process across the
 * call. */
bool process_table_run_held(struct process_table *t);
/*
 * Loading files for a whole process (its first scan, a rescan) is sliced:
 * within one pass of the drain thread at most PROCESS_LOAD_SLICE_NS is
 * spent opening and reading files for the sync steps (unwinder, context
 * tracker); the rest is resumed in the next passes
 * (process_table_resume_loads), so one process mapping thousands of
 * libraries cannot hold the state lock for long. A pass that runs out of
 * its slice is followed by the next within a millisecond (the lock is
 * free in between), so the work still gets most of a CPU.
 */
#define PROCESS_LOAD_SLICE_NS (8ull * 1000 * 1000)
/* The lock the caller holds around every call, which run_held may release
 * (NULL: never). */
void process_table_set_lock(struct process_table *t, void (*unlock)(void *),
			    void (*relock)(void *), void *ctx);
/* A pass of the drain thread starts: a new slice. */
void process_table_begin_pass(struct process_table *t);
/* Is this pass's slice spent (then slice_spent is set: what is left is
 * for the next pass)? False without a slice. */
bool process_table_slice_over(struct process_table *t);
/* The next process whose files were not all loaded, within the slice:
 * noted as changed (PROCESS_FILES_READY) for the caller, whose sync
 * loads more (true: one was noted; take it before the next, so the
 * slice counts the loads). */
bool process_table_resume_loads(struct process_table *t);
/* p's files are left for a later pass (process_table_resume_loads). */
void process_table_defer_loads(struct process_table *t, struct process *p);
/* Files were read since (marked changed in the file table: the loader
 * thread's): tell the consumers of every process that maps one, and
 * clear the marks. */
void process_table_files_changed(struct process_table *t);
/* What resolving a mapping's file needs (the agent resolves them:
 * lib/agent/file_sync.c). The file behind mapping m of p, opened through
 * the process (a regular file only: MAPPED_FILE_REFUSED, counted, for
 * anything else), or a negative errno (counted). */
int process_mapping_open(struct process_table *t, const struct process *p,
			 const struct proc_mapping *m);
/* The file table's file_reopen_fn (table: this process table): f opened
 * again through the mapping of the process that first mapped it, its
 * identity checked; a negative errno if that process or mapping is gone. */
int process_file_reopen(void *table, const struct file *f);
/* p's root (O_PATH): debug files are looked up as the process sees
 * them. -1: none. */
int process_root_open(const struct process_table *t, const struct process *p);
/* A copy of our own vDSO image (the same kernel's: every process's), for
 * the caller to free; NULL if it could not be read. */
void *process_vdso_image(size_t *len);
void process_table_exec(struct process_table *t, uint32_t pid);
/* Process pid (started at start_ns) forked from parent_pid: if the parent
 * is known, the child starts as its copy (no /proc read). */
void process_table_fork(struct process_table *t, uint32_t parent_pid,
			uint32_t pid, uint64_t start_ns, uint64_t now_ns);
/* The process (pid, start_ns; start_ns 0: any) exited. */
void process_table_exit(struct process_table *t, uint32_t pid,
			uint64_t start_ns, uint64_t now_ns);
/* Samples of a process can still be in flight this long after its exit
 * event; within it the pid is the same process, after it a reuse. */
#define PROCESS_EXIT_GRACE_NS (10ull * 1000 * 1000 * 1000)
/* Drop processes that exited, and those idle since before `idle_before_ns`
 * whose /proc entry is gone (a lost exit event). */
void process_table_sweep(struct process_table *t, uint64_t idle_before_ns);
uint32_t process_table_count(const struct process_table *t);

#endif
