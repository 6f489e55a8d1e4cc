/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent: every stage of the pipeline, the drain thread that feeds it
 * from the BPF ring buffer, and the two windows samples are added to.
 * `struct otelprof` (the public handle of include/otelprofiler.h) is the
 * agent; lib/api.c only checks arguments and calls in here.
 *
 * Locking: `state_lock` guards everything the drain thread touches (process
 * table, files, current builder). `poll_lock` serializes poll/stop/stats so
 * that stop during poll is safe; encoding happens under poll_lock only, so
 * draining goes on while a window is being encoded.
 */
#ifndef OTELPROF_AGENT_AGENT_H
#define OTELPROF_AGENT_AGENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "otelprofiler.h"
#include "agent/exec_hold.h"
#include "context/context_tracker.h"
#include "encode/profile_builder.h"
#include "encode/stack_cache.h"
#include "files/file_table.h"
#include "frames/stack_symbolizer.h"
#include "runtimes/runtime.h"
#include "process/process_table.h"
#include "sample/bpf_sampler.h"
#include "sample/offcpu_sampler.h"
#include "sample/runtime_programs.h"
#include "filestore/file_cache.h"
#include "symbolize/kallsyms.h"
#include "unwind/process_unwind.h"
#include "util/errmsg.h"

struct parked_sample;

/* Runtimes in runtimes.c's table, at most. */
#define AGENT_MAX_RUNTIMES OTELPROF_RT_MAX

/* What the agent itself counts; the stages keep their own. */
struct agent_counters {
	uint64_t samples_received; /* well-formed sample events */
	uint64_t samples_encoded, polls, bytes_encoded; /* handed out */
	uint64_t add_errors;	     /* samples, links, context attributes the
					window could not take */
	uint64_t ctx_attrs_dropped;  /* thread-context attributes dropped */
	uint64_t dropped_at_stop;    /* still buffered at stop's deadline */
	uint64_t events_malformed;   /* records skipped: sizes do not agree */
	uint64_t drain_max_hold_ns;  /* longest state_lock hold by drain() */
	uint64_t exec_reads_skipped; /* held execs whose process exited
					unsampled: /proc never read */
	/* off-CPU (offcpu_pending.c) */
	uint64_t offcpu_events;		 /* joined and put in the window */
	uint64_t offcpu_unmatched;	 /* a half without the other */
	uint64_t offcpu_pending_dropped; /* stacks not kept */
	uint64_t offcpu_attach_errors;	 /* re-attach refused (probabilistic
					    on interval) */
};

/* rate.c: the rate every CPU samples at and when it changed, so that a
 * sample is weighted by the rate it was taken at (state_lock). */
#define AGENT_RATE_HISTORY 16
struct agent_rate {
	uint32_t max_hz; /* ceiling of otelprof_set_frequency */
	uint32_t n;	 /* changes kept, oldest first */
	struct {
		uint64_t since_boot_ns;
		uint32_t hz;
	} at[AGENT_RATE_HISTORY];
	uint64_t changes; /* otelprof_set_frequency calls that took */
};

/* probabilistic.c: sampling on or off per interval (state_lock). */
struct agent_prob {
	uint32_t threshold; /* 1..99; 100 = always on (no timer) */
	uint64_t interval_ns;
	int timer_fd; /* -1 when always on */
	bool on;
	uint64_t intervals_on, intervals_off;
};

struct otelprof {
	pthread_mutex_t state_lock;
	uint64_t hold_since_ns; /* drain(): when it last took state_lock */
	pthread_mutex_t poll_lock;
	pthread_t thread;
	bool thread_started;
	int wake_fd; /* eventfd: tells the drain thread to exit */
	int epoll_fd;
	atomic_bool stopping;
	bool stopped;
	bool handed_out; /* a poll has returned a payload */

	uint32_t frequency_hz; /* now (state_lock); see rate */
	struct agent_rate rate;
	struct agent_prob prob;
	struct env_names env_names; /* include_env_vars */
	uint32_t max_user_frames;
	char host_name[256];
	struct bpf_sampler *sampler;
	struct offcpu_sampler *offcpu; /* NULL: off-CPU recording is off */
	struct offcpu_pending *offcpu_pending; /* stacks of threads off CPU */
	struct kallsyms ksyms;
	struct file_table files;    /* the files, whatever is kept of them */
	struct file_cache symfiles; /* their symbols */
	struct process_table procs;
	struct stack_symbolizer symbolizer;
	struct symbolized_stack symbolized; /* the sample's frames (stage 4) */
	int32_t frame_locs[SYMBOLIZED_MAX_FRAMES]; /* their Locations */
	struct stack_cache stack_cache; /* raw stacks of this window */
	struct process_unwind unwinder;
	struct context_tracker context;
	/* The runtimes walked in the kernel (runtimes.c's table) and the
	 * loader of their BPF programs. */
	struct runtime_programs programs;
	void *runtimes[AGENT_MAX_RUNTIMES]; /* each one's state */
	struct parked_sample *parked, *parked_tail;
	uint32_t nparked;
	bool replay_pending; /* a replay ran out of its slice: go on */
	/* copy-unwinder output, then the sample's interpreter frames */
	uint64_t frames[OTELPROF_MAX_USER_FRAMES +
			2 * OTELPROF_MAX_INTERP_FRAMES];
	struct profile_builder windows[2];
	int cur; /* index of the window being filled */
	uint64_t window_start_unix_ns;
	/* Unix time minus boot time, read again each drain pass: a sample
	 * is stamped with the offset of its pass (within about 100 ms of
	 * being taken), so a step of the realtime clock during a long
	 * window (NTP; the CLI polls once, at the end) moves only the
	 * samples taken across it. */
	int64_t boot_to_unix_ns;
	uint64_t last_sweep_ns;
	bool discarding; /* stop's deadline passed: count only */
	uint64_t last_cpu_check_ns;
	bool trim_due; /* a sweep freed state: malloc_trim outside the lock */
	/* An exec or maps change was read since the drain thread last
	 * waited (records are read by polls too). */
	atomic_bool task_event_seen;
	struct exec_hold held_execs; /* state_lock */
	int held_next_ms; /* the drain thread's: ms to the next held exec due */
	bool uevents_ready; /* the drain thread's: epoll saw uevents */
	bool apm_waiting;   /* APM messages still queued: drain again soon
			       (drain thread only) */

	struct agent_counters counters; /* state_lock */
	/* At agent_start: the monotonic clock and the process's CPU time
	 * (start-up figures, OTELPROF_DEBUG_STARTUP). */
	uint64_t start_mono_ns, start_cpu_ns, start_user_ns, start_sys_ns;

	char errbuf[1024];
};

/* CLOCK_REALTIME - CLOCK_BOOTTIME: sample times are boot clock. */
int64_t agent_boot_to_unix_offset(void);

/* agent.c: set every stage up and start the drain thread (o validated by
 * agent_parse_opts); stop it, reading what the kernel still holds; free
 * (after waiting for a drain thread that stop could not). */
int agent_start(const struct otelprof_opts *o, struct otelprof **out,
		struct errmsg *err);
int agent_stop(struct otelprof *p);
void agent_free(struct otelprof *p);

/* sample_pipeline.c: one sample event, from the ring buffer to the
 * current window. may_park: a sample whose tables are still being built
 * may be held (parked_samples.c) instead of resolved with a cut stack.
 * Caller holds state_lock. */
void agent_handle_sample(struct otelprof *p,
			 const struct otelprof_sample_event *e, size_t size,
			 bool may_park);

/* sample_pipeline.c: an off-CPU event (its stack as switched out, and
 * how long it was off) into the current window, as its own Profile.
 * Caller holds state_lock. */
void agent_handle_offcpu(struct otelprof *p,
			 const struct otelprof_sample_event *e, size_t size,
			 int64_t off_ns);

/* offcpu_pending.c: keep an off-CPU stack until its thread's switch-in;
 * join a switch-in with its stack (then agent_handle_offcpu); free what
 * is still kept. Caller holds state_lock. */
void agent_offcpu_stack(struct otelprof *p, const void *data, size_t size);
void agent_offcpu_end(struct otelprof *p, const struct otelprof_offcpu_end *r);
void agent_free_offcpu(struct otelprof *p);

/* parked_samples.c: hold a sample (false: not held, resolve it now);
 * replay held ones once a table was installed or they waited too long
 * (force: all, as they are); free them. Caller holds state_lock. */
bool agent_park(struct otelprof *p, const void *data, size_t size);
void agent_replay_parked(struct otelprof *p, bool installed, bool force);
void agent_free_parked(struct otelprof *p);

/* sweeps.c: the periodic work of the drain thread. Caller holds
 * state_lock. */
void agent_sweep_if_due(struct otelprof *p);
void agent_watch_cpus(struct otelprof *p);

/* process_sync.c: what the process table changed, taken and handed to
 * the stages (forget the removed; unwinder, context, runtimes for the
 * changed, in that order). Called after every call that can change the
 * table; rescan what the context tracker's tick asked for. */
void agent_sync_processes(struct otelprof *p);
void agent_sync_rescans(struct otelprof *p, uint64_t now_ns);
/* runtimes.c: the runtime protocol's steps for every runtime of the
 * table (runtimes/runtime.h); agent_runtimes_loaded hands the runtimes
 * whose BPF program finished loading their waiting processes;
 * agent_runtimes_counters sums what they counted. agent_runtimes_init:
 * 0 or -ENOMEM. */
int agent_runtimes_init(struct otelprof *p);
void agent_runtimes_counters(struct otelprof *p, struct runtime_counters *sum);
void agent_runtimes_sync(struct otelprof *p, struct process *proc,
			 const struct process_change *c);
void agent_runtimes_forget(struct otelprof *p, struct process *proc);
void agent_runtimes_loaded(struct otelprof *p);
void agent_runtimes_free(struct otelprof *p);
/* file_sync.c: resolve the files a process maps (new ones read by the
 * symbolizer's and the unwinder's steps, in that order), the other way
 * round for files gone; take what the loader and builder threads
 * finished. agent_resolve_files: every mapping of proc not resolved yet,
 * within the pass's slice (the rest: proc->loads_deferred);
 * agent_resolve_mapping: one, now. agent_reload_evicted: the symbols of
 * an evicted file a frame needs, read again if due (true: read);
 * agent_load_lines: the source lines (DWARF, Go's table) of a file a
 * frame needs, read the first time (true: read). */
void agent_resolve_files(struct otelprof *p, struct process *proc);
struct file *agent_resolve_mapping(struct otelprof *p, struct process *proc,
				   struct proc_mapping *m);
bool agent_reload_evicted(struct otelprof *p, struct process *proc,
			  const struct proc_mapping *m, struct elf_file *file);
bool agent_load_lines(struct otelprof *p, struct process *proc,
		      const struct proc_mapping *m, struct elf_file *file,
		      bool go);
void agent_forget_gone_files(struct otelprof *p);
int agent_finish_files(struct otelprof *p);
bool agent_files_busy(struct otelprof *p);

/* rate.c: the ceiling from the options and the ring buffer; change the
 * rate (caller holds poll_lock); the period a sample taken at boot time
 * ts stands for (state_lock). */
void agent_rate_init(struct otelprof *p, const struct otelprof_opts *o,
		     uint32_t ringbuf_bytes, int ncpu);
int agent_set_frequency(struct otelprof *p, uint32_t hz);
uint64_t agent_period_at(const struct otelprof *p, uint64_t ts_boot_ns);
/* probabilistic.c: draw for the first interval right after the perf
 * events are attached (paused); at each interval's timer, draw again
 * (drain thread, state_lock). */
int agent_prob_start(struct otelprof *p, const struct otelprof_opts *o,
		     struct errmsg *err);
void agent_prob_tick(struct otelprof *p);
void agent_prob_free(struct otelprof *p);

/* stats.c: every module's counters, for otelprof_stats. Caller holds
 * both locks. */
void agent_stats(struct otelprof *p, struct otelprof_stats *s);

#endif
