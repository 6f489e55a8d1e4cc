/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libotelprofiler: whole-system eBPF CPU profiler emitting OTLP Profiles.
 *
 * The whole public ABI lives in this header. Every symbol carries the
 * `otelprof_` prefix. Functions return 0 (or a non-negative count) on success
 * and a negative errno on failure; a human-readable message is available
 * through the errbuf argument of otelprof_start() and otelprof_errmsg() for a
 * live handle.
 *
 * The ABI is FFI-friendly on purpose (it is called from Go through purego,
 * without cgo): no callbacks, no structs passed by value, fixed-width fields.
 * See docs/abi.md for the full contract.
 */
#ifndef OTELPROFILER_H
#define OTELPROFILER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(OTELPROF_BUILDING_LIBRARY)
#define OTELPROF_API __attribute__((visibility("default")))
#else
#define OTELPROF_API
#endif

#define OTELPROF_VERSION_MAJOR 0
#define OTELPROF_VERSION_MINOR 1
#define OTELPROF_VERSION_PATCH 0
/* The same as text, "MAJOR.MINOR.PATCH" (what otelprof_version returns). */
#define OTELPROF_VERSION_STRING "0.1.0"

/* Default sampling frequency per CPU, in Hz (prime, to avoid lock-step with
 * periodic work; the reference profiler's default). */
#define OTELPROF_DEFAULT_FREQUENCY_HZ 19

/* Flags for otelprof_opts.flags. */
enum otelprof_flags {
	/* Keep samples taken while a CPU was idle (pid 0). Dropped by default:
	 * they carry no application cost and would dominate idle hosts. */
	OTELPROF_F_INCLUDE_IDLE = 1u << 0,
	/* Do not answer Elastic APM agents (no connection to the socket an
	 * agent publishes; docs/context-publishing.md). The profiler whose
	 * profiles reach the backend should answer: an agent keeps the
	 * stack-trace ids of every profiler that does, and ids of a second
	 * one (a recording made by hand beside the host's agent) match
	 * nothing there. */
	OTELPROF_F_NO_APM_AGENTS = 1u << 1,
};
/* Every flag this library knows; others are rejected (-EINVAL). */
#define OTELPROF_F_ALL (OTELPROF_F_INCLUDE_IDLE | OTELPROF_F_NO_APM_AGENTS)

/*
 * Start options. Extensible in the libbpf style: `sz` must be set to
 * sizeof(struct otelprof_opts) as the caller knows it; a field counts only
 * if it lies whole inside sz (the rest read as zero), and a caller passing
 * a larger struct with non-zero unknown tail bytes gets -E2BIG. Zero means
 * "default" for every field; reserved fields must be zero.
 *
 * Layout (LP64): offset 0 sz, 8 frequency_hz, 12 pid, 16 host_name,
 * 24 ringbuf_kb, 28 flags, 32 max_frames, 36 reserved0,
 * 40 symbol_budget_mb, 44 file_budget_mb, 48 btf_path,
 * 56 debuginfod_urls, 64 max_frequency_hz, 68 probabilistic_threshold,
 * 72 probabilistic_interval_ms, 76 reserved1, 80 include_env_vars,
 * 88 off_cpu_threshold. Size 96.
 */
struct otelprof_opts {
	size_t sz;
	uint32_t frequency_hz; /* samples per second per CPU; 0 = 19, max 10000
				*/
	int32_t pid;	       /* >0: only this process (tgid); 0: whole host */
	const char *host_name; /* host.name resource attribute; NULL = uname */
	uint32_t ringbuf_kb; /* BPF ring buffer size in KiB; 0 = sized from CPUs
				and frequency; rounded up to a power of two */
	uint32_t flags;	     /* enum otelprof_flags */
	uint32_t max_frames; /* user frames per sample; 0 = library default */
	uint32_t reserved0;  /* must be 0 */
	/* Memory for everything derived from mapped files (symbols, strings,
	 * unwind scratch), in MiB: in total (0 = 192) and per file (0 = 64,
	 * at most the total). The least recently sampled files lose their
	 * symbols first; a file over its own budget gets none. */
	uint32_t symbol_budget_mb;
	uint32_t file_budget_mb;
	/* BTF of the running kernel, for kernels without
	 * /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF off): a file such
	 * as BTFHub publishes. NULL = the kernel's own. Read at start only. */
	const char *btf_path;
	/* debuginfod servers to fetch debug files from, by build id, for
	 * files whose symbols no local lookup found: URL prefixes separated
	 * by spaces, as in $DEBUGINFOD_URLS (http:// or https://, at most
	 * 8). NULL or "" = off (the default: the profiler opens no network
	 * connection). Read at start only (docs/symbolization.md). */
	const char *debuginfod_urls;
	/* Ceiling of otelprof_set_frequency(), Hz (max 10000, at least
	 * frequency_hz). 0 = the rate the ring buffer holds 2 s of (at
	 * least frequency_hz); when set, the ring buffer is sized for it. */
	uint32_t max_frequency_hz;
	/* Probabilistic profiling: at the start of every interval a random
	 * draw in [0, 100) below the threshold turns sampling on for that
	 * interval, else the perf events are disabled (no sample is taken).
	 * Threshold 0 = 100 (always on, no draws), else 1..100; interval
	 * 0 = 60000 ms, else 1000..300000 ms. */
	uint32_t probabilistic_threshold;
	uint32_t probabilistic_interval_ms;
	uint32_t reserved1; /* must be 0 */
	/* Environment variables to copy onto each process's resource as
	 * process.environment_variable.NAME: names separated by commas (at
	 * most 16, each < 128 bytes). NULL or "" = none. Read once per process
	 * from /proc/PID/environ (bounded, docs/configuration.md). */
	const char *include_env_vars;
	/* Off-CPU time: the probability, in [0, 1], that a thread's
	 * switch-out is recorded (its stack, and how long until it ran
	 * again), emitted as a Profile of its own per process (sample type
	 * events/nanoseconds). 0 = off (the default: no scheduler hook is
	 * loaded at all); NaN or outside [0, 1]: -EINVAL
	 * (docs/configuration.md#off-cpu-time). */
	double off_cpu_threshold;
};

/*
 * Bits of otelprof_stats.kernel_fallbacks: what the running kernel lacks
 * and what the profiler does instead (docs/kernels.md). The environment
 * variable OTELPROF_KERNEL_FALLBACK ("all", or a comma list of "bpf_loop",
 * "task_pt_regs", "prealloc") forces them on a newer kernel, to measure their
 * cost.
 */
enum otelprof_kernel_fallback {
	/* No bpf_loop (< 5.17): the user stack is walked 16 frames per
	 * program, programs chained by tail call (costs more per sample;
	 * at most 512 frames). */
	OTELPROF_FALLBACK_NO_BPF_LOOP = 1u << 0,
	/* No bpf_task_pt_regs (< 5.15): the user registers of a sample
	 * taken in the kernel are read from the top of its kernel stack. */
	OTELPROF_FALLBACK_NO_TASK_PT_REGS = 1u << 1,
	/* perf_event programs cannot use hash maps allocated on use
	 * (< 6.1): they are allocated up front, 8 MiB each at most, which
	 * caps the processes with unwind tables in the kernel near 2000 (the
	 * others are unwound from stack copies, in userspace). */
	OTELPROF_FALLBACK_PREALLOC_MAPS = 1u << 2,
};

/*
 * Counters since start. Extensible like otelprof_opts: set `sz` before the
 * call; the library fills at most `sz` bytes. Fields are only appended
 * (the library's build checks this struct against its list of counters,
 * lib/agent/stats_fields.def).
 */
struct otelprof_stats {
	size_t sz;
	uint64_t samples_received; /* samples read from the ring buffer */
	uint64_t samples_lost;	   /* ring buffer full: dropped in the kernel */
	uint64_t samples_idle;	   /* idle-CPU samples skipped in the kernel */
	uint64_t samples_encoded;  /* samples handed out by otelprof_poll */
	uint64_t kernel_stack_errors; /* bpf_get_stack failed for the kernel
					 part */
	uint64_t user_stack_errors;   /* user registers, or all of a stack
					 copy, unreadable: no user frames,
					 or the leaf only */
	uint64_t proc_scan_errors;    /* /proc entries that could not be read */
	uint64_t files_malformed;   /* mapped files skipped as malformed ELF */
	uint64_t files_loaded;	    /* ELF files whose symbols were loaded */
	uint64_t processes_tracked; /* processes currently known */
	uint64_t symbol_memory_bytes; /* memory held by symbol tables (ELF
					 files, kallsyms, JIT maps) */
	uint64_t polls;		      /* successful otelprof_poll calls */
	uint64_t bytes_encoded;	      /* OTLP bytes handed out */
	/* user-stack unwinding (from .eh_frame tables): stops count the
	 * kernel's walks and those of stack copies, unwound in userspace */
	uint64_t unwind_complete;     /* stacks unwound to the root */
	uint64_t unwind_truncated;    /* cut at max_frames */
	uint64_t unwind_err_rule;     /* stopped: pc without a usable rule */
	uint64_t unwind_err_read;     /* stopped: stack memory unreadable */
	uint64_t unwind_err_loop;     /* stopped: sp went backwards */
	uint64_t unwind_no_mapping;   /* stopped: pc outside known code */
	uint64_t stack_copies;	      /* samples unwound in userspace from a
					 stack copy (process not yet known) */
	uint64_t unwind_files;	      /* files with tables in the kernel */
	uint64_t unwind_rows;	      /* rows in the kernel */
	uint64_t unwind_map_bytes;    /* kernel memory of the rows */
	uint64_t unwind_table_errors; /* files whose CFI could not be used,
					 in whole or in part (corrupt) */
	uint64_t unwind_build_ns;     /* time spent building tables */
	uint64_t unwind_pending;      /* cut where a table was still loading:
					 the leaf frame only (rate-limited
					 stack copies), in a JVM the frames
					 down to that file, Java ones named,
					 or a stack copy's frames down to it
					 (held 5 s first) */
	/* trace correlation (docs/context-publishing.md) */
	uint64_t ctx_samples;	     /* samples that carried a thread
					context (trace/span link) */
	uint64_t ctx_read_errors;    /* context location known, but the
					thread's record was unreadable */
	uint64_t ctx_tls_resolved;   /* context TLS variables located */
	uint64_t ctx_process_reads;  /* process contexts decoded */
	uint64_t ctx_process_errors; /* malformed or unreadable ones */
	uint64_t ctx_attrs_dropped;  /* thread-context attributes dropped
					(unknown key, bad UTF-8, too many) */
	uint64_t pid_reuses;	   /* a sample's process start differed from the
				      known process of that pid: a new entry */
	uint64_t task_events_lost; /* exec/exit/address-space notifications
				      dropped in the kernel (ring buffer
				      full) */
	/* Address-space changes learnt from the samples (no syscall hook):
	 * events sent by the sampler, changes or unknown pcs it held back
	 * (the process's notify gap), rescans done for them, and rescans
	 * that waited for their process's or the shared budget. */
	uint64_t maps_changed_events;
	uint64_t maps_notify_held;
	uint64_t rescans_asked;
	uint64_t rescans_held;
	uint64_t ctx_found_by_probe; /* process contexts found in unnamed
					anonymous memory */
	uint64_t drain_max_hold_ns;  /* longest the drain thread held the
					state lock in one pass (what a poll
					could wait) */
	/* Language runtimes (docs/runtimes.md). Interpreters: processes whose
	 * CPython or HotSpot JVM was found (of them, with offsets it published
	 * itself), once per process with a version or JVM layout we cannot
	 * use, samples that carried interpreter or Java frames, frames the
	 * kernel could not read (and processes whose interpreter it could not
	 * be told of), code objects or methods that could not be read or kept
	 * within the memory budget (or compiled code gone by then); JIT:
	 * frames named from perf maps or jitdump, their malformed
	 * lines/records and files refused (not regular, a symlink,
	 * unreadable). */
	uint64_t interp_processes;
	uint64_t interp_debug_offsets;
	uint64_t interp_unknown_versions;
	uint64_t interp_samples;
	uint64_t interp_frame_errors;
	uint64_t interp_code_errors;
	uint64_t jit_frames;
	uint64_t jit_bad_entries;
	uint64_t jit_files_refused;
	/* hostile input (docs/configuration.md) */
	uint64_t files_refused;	    /* mapped paths not opened: not a regular
				       file (device, FIFO, socket) */
	uint64_t files_over_budget; /* files whose symbols exceeded the
				       per-file budget (kept without) */
	uint64_t budget_evictions;  /* files whose symbols were dropped to
				       stay within the total budget */
	uint64_t budget_used_bytes; /* charged to the budget now */
	uint64_t cpus_onlined;	    /* CPUs that came online while running
				       and are sampled since */
	uint64_t ctx_attrs_denied;  /* published process-context attributes
				       dropped: their namespace is the
				       profiler's (container.*, process.*,
				       host.*, thread.*, k8s.*, ...) */
	/* Unwind tables the kernel did not take, by reason: the process
	 * that first mapped the file had its share (64 MiB of rows), or
	 * the host's (256 MiB) was full. Such files use frame pointers. */
	uint64_t unwind_refused_process;
	uint64_t unwind_refused_host;
	/* kernel support (docs/kernels.md) */
	uint64_t kernel_fallbacks; /* enum otelprof_kernel_fallback bits in
				      use on this kernel */
	uint64_t max_frames;	   /* user frames per sample at most, after
				      the kernel's limits */
	uint64_t walk_programs;	   /* chained stack-walk programs run
				      (OTELPROF_FALLBACK_NO_BPF_LOOP) */
	uint64_t samples_dropped_at_stop; /* still in the ring buffer when
					     stop's deadline (800 ms) came */
	uint64_t add_errors; /* samples, or their trace links and context
				attributes, the profile could not take (out
				of memory, a table full): lost, or kept
				without that part */
	/* memory budget, beyond symbols (docs/configuration.md) */
	uint64_t unwind_over_budget; /* unwind tables not built: their
					scratch exceeded the file's budget
					(frame pointers instead) */
	uint64_t budget_reloads;     /* evicted files read again because a
					sample needed their symbols */
	uint64_t demangle_refused;   /* symbol names left raw as hostile
					(their demangled form overflowed
					8 KiB, or Rust v0 nesting); counted
					in this process, once per name and
					file */
	/* unwinding losses in the kernel tables */
	uint64_t unwind_procs_errors; /* processes whose mappings could not
					 be written to the kernel: their
					 samples get frame pointers only */
	uint64_t unwind_rows_unrepresentable; /* CFI rows the kernel walk
						 cannot follow (stored as
						 stop rows), or left out:
						 code above 4 GiB of file
						 vaddr (frame pointers
						 there) */
	uint64_t unwind_big_refused; /* processes with more mappings than
					fit whose extra mappings did not fit
					the shared array either (first ones
					kept) */
	uint64_t file_loads_retried; /* big files whose read was put off
					because the loader's queue (64) was
					full: read at a later pass */
	/* Elastic APM agent return channel (docs/context-publishing.md) */
	uint64_t apm_channels;	       /* agent sockets connected and
					  registered with */
	uint64_t apm_messages_sent;    /* stack-trace correlations sent */
	uint64_t apm_messages_dropped; /* correlations not delivered (queue
					  full, over the rate, the agent's
					  socket full for 1 s, or gone) */
	uint64_t apm_sockets_refused;  /* socket paths refused: not a
					  socket, not owned by the process's
					  user, unreachable in its root */
	/* debuginfod (opts.debuginfod_urls; all 0 when off) */
	uint64_t debuginfod_lookups;  /* build ids asked of the servers */
	uint64_t debuginfod_hits;     /* debug files fetched, symbols taken */
	uint64_t debuginfod_failures; /* not found, timed out, or not an ELF
					 of that build id (asked again after
					 a backoff: 1 min doubling to 1 h) */
	uint64_t debuginfod_refused;  /* not asked (lookup queue full) or
					 not taken (over 256 MiB or the
					 file's memory budget) */
	uint64_t jit_over_budget;     /* JIT symbols (perf map lines, jitdump
					 records) not kept: over 16 MiB per
					 file per process, or the total
					 budget; their frames stay unnamed */
	uint64_t events_malformed;    /* ring buffer records whose sizes or
					 counts do not hold together (a
					 library and BPF program of two
					 versions): skipped; 0 otherwise */
	/* Runtimes walked in the kernel (CPython, HotSpot), each by its own
	 * BPF program, loaded when the first process of the runtime is
	 * found: */
	uint64_t runtime_programs_loaded;  /* programs loaded so far */
	uint64_t runtime_program_failures; /* programs the kernel refused:
					      native stacks for those
					      processes */
	uint64_t runtime_processes_waited; /* processes found while their
					      runtime's program loaded */
	uint64_t runtime_handoffs;	   /* native walks handed to a
					      runtime's program */
	uint64_t walk_tail_call_errors;	   /* walks cut: the kernel's tail
					      calls per sample spent */
	/* Sampling rate at run time (otelprof_set_frequency) and
	 * probabilistic profiling (otelprof_opts.probabilistic_*). */
	uint64_t sampling_frequency_hz;	      /* per CPU, now */
	uint64_t frequency_changes;	      /* rate changes applied */
	uint64_t perf_ioctl_errors;	      /* enable/disable/period
						 refused by a perf event */
	uint64_t probabilistic_intervals_on;  /* intervals sampled */
	uint64_t probabilistic_intervals_off; /* intervals with the perf
						 events disabled */
	/* include_env_vars (otelprof_opts.include_env_vars) */
	uint64_t env_reads_refused;  /* environ over 64 KiB or not
					NUL-terminated: not read */
	uint64_t env_values_dropped; /* values over 256 bytes or not
					printable UTF-8 */
	/* Off-CPU time (opts.off_cpu_threshold; all 0 when off): */
	uint64_t offcpu_attached;	 /* 1: the sched_switch program is
					    attached */
	uint64_t offcpu_recorded;	 /* switch-outs recorded with their
					    stack */
	uint64_t offcpu_events;		 /* off-CPU events put into a
					    profile (stack + duration) */
	uint64_t offcpu_pending_full;	 /* switch-outs not recorded: the
					    kernel's pending map was full */
	uint64_t offcpu_lost;		 /* stacks or switch-in records
					    dropped: ring buffer full */
	uint64_t offcpu_unmatched;	 /* one half without the other: not
					    in a profile */
	uint64_t offcpu_pending_dropped; /* stacks not kept in userspace
					    while their thread waited */
	uint64_t offcpu_attach_errors;	 /* probabilistic intervals drawn on
					    whose sched_switch program could
					    not be attached again */
	uint64_t files_shared;		 /* file identities found to hold a
					    known file's bytes: kept once */
	uint64_t files_share_mismatch;	 /* same content key, other bytes */
	uint64_t files_share_unverified; /* same content key, the known file
					    could not be read again */
	uint64_t processes_gone_young;	 /* from a fork or exec, exited
					    unsampled before their set-up */
	uint64_t lines_image_reads;	 /* DWARF read again after it was
					    freed as idle, for a unit not
					    read yet */
	uint64_t exec_reads_skipped;	 /* execs exited unsampled within
					    their hold: /proc not read */
};

/* Opaque profiler handle. */
struct otelprof;

/*
 * Load and attach the BPF programs and start sampling every online CPU.
 * Returns 0 and stores a handle in *out, or a negative errno; on failure a
 * one-line message is written to errbuf (if errbuf_len > 0), e.g.
 * "needs CAP_BPF and CAP_PERFMON (run as root)" or the verifier log.
 * opts may be NULL for all defaults.
 * Process-wide effect: glibc's malloc is limited to one arena
 * (mallopt M_ARENA_MAX), unless MALLOC_ARENA_MAX or GLIBC_TUNABLES sets
 * arena_max: per-thread arenas doubled the library's resident memory
 * (docs/performance.md).
 */
OTELPROF_API int otelprof_start(const struct otelprof_opts *opts,
				struct otelprof **out, char *errbuf,
				size_t errbuf_len);

/*
 * Hand back everything sampled since the previous poll as one serialized
 * OTLP ProfilesData message (opentelemetry.proto.profiles.v1development,
 * proto v1.10+). Never waits for samples: a background thread inside the
 * library drains the kernel continuously. Poll first resolves, on the
 * caller's thread, what the ring buffer holds at that moment (so the
 * payload is current), then swaps in an empty window and encodes the full
 * one while the background thread goes on filling the new one.
 *
 * Returns the number of samples in the payload (>= 0) or a negative errno.
 * When it returns 0, *data is NULL and *size is 0. Otherwise *data is owned
 * by the caller and must be released with otelprof_buffer_free().
 *
 * After otelprof_stop(), poll returns what was still buffered and 0
 * afterwards. One exception to "0 means NULL": if no poll of the handle
 * has handed out a payload, the first poll after otelprof_stop() returns
 * 0 with a payload holding the host's resource and one profile without
 * samples over the recording, so an empty recording is still a valid
 * OTLP profile. Thread-safe: poll, stop and stats may be called from any
 * thread; calls on one handle are serialized.
 */
OTELPROF_API int otelprof_poll(struct otelprof *p, uint8_t **data,
			       size_t *size);

/* Release a buffer returned by otelprof_poll(). NULL is allowed. */
OTELPROF_API void otelprof_buffer_free(uint8_t *data);

/*
 * Stop sampling: detach BPF programs, drain what is left in the kernel into
 * the buffer of the next poll, join the background thread. Idempotent;
 * returns within ~100 ms. The handle stays valid until otelprof_close().
 */
OTELPROF_API int otelprof_stop(struct otelprof *p);

/* Stop (if needed) and free every resource of the handle. NULL is allowed. */
OTELPROF_API void otelprof_close(struct otelprof *p);

/* Fill *stats (up to stats->sz bytes). Returns 0 or a negative errno. */
OTELPROF_API int otelprof_stats(struct otelprof *p,
				struct otelprof_stats *stats);

/*
 * Message for the last failed call on this handle ("" if none). The pointer
 * stays valid until the next call on the handle.
 */
OTELPROF_API const char *otelprof_errmsg(struct otelprof *p);

/*
 * Change the sampling rate of every CPU's perf event in place (no program
 * is reloaded, no sample lost): from the next sample on, each CPU samples
 * at hz. Samples are weighted by the rate they were taken at (a profile's
 * period). hz: 1 .. the ceiling (otelprof_opts.max_frequency_hz). Returns
 * 0, -EINVAL (out of range, or stopped) or the kernel's error.
 */
OTELPROF_API int otelprof_set_frequency(struct otelprof *p, uint32_t hz);

/* Library version, e.g. "0.1.0". Static storage. */
OTELPROF_API const char *otelprof_version(void);

#ifdef __cplusplus
}
#endif

#endif /* OTELPROFILER_H */
