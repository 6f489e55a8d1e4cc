/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loads the BPF sampler, attaches it to a CPU-clock perf event on every
 * online CPU and to the exec/exit raw tracepoints, and exposes the ring
 * buffer the events arrive on.
 */
#ifndef OTELPROF_SAMPLE_BPF_SAMPLER_H
#define OTELPROF_SAMPLE_BPF_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "otelprofiler.h"
#include "profiler_types.h"
#include "util/errmsg.h"

/* What loading one BPF program cost (the verifier's figures). */
struct bpf_prog_load_stat {
	char name[48];
	uint32_t verified_insns; /* "processed N insns", 0: unknown */
	uint64_t object_load_ns; /* wall time of its object's load */
};
#define BPF_SAMPLER_MAX_LOADS 24
/* Copy the figures of every program loaded so far (the sampler's, then
 * the runtimes' in load order); returns how many. */
struct bpf_sampler;
uint32_t bpf_sampler_load_stats(struct bpf_sampler *s,
				struct bpf_prog_load_stat *out, uint32_t max);

struct bpf_sampler_config {
	uint32_t frequency_hz;
	uint32_t target_tgid;
	uint32_t ringbuf_bytes; /* power of two, >= page size */
	uint32_t max_user_frames;
	int include_idle;
	const char *btf_path; /* kernel BTF file; NULL: /sys/kernel/btf */
	bool start_paused;    /* attach with the perf events disabled */
};

/* Called for every record; return non-zero to stop consuming. */
typedef int (*bpf_sampler_event_fn)(void *ctx, const void *data, size_t size);

struct bpf_sampler;

int bpf_sampler_open(const struct bpf_sampler_config *cfg,
		     bpf_sampler_event_fn fn, void *ctx,
		     struct bpf_sampler **out, struct errmsg *err);
/* fd that becomes readable when events are pending (epoll). */
int bpf_sampler_fd(struct bpf_sampler *s);
/* Consume every pending event. Returns the count or a negative errno. */
int bpf_sampler_consume(struct bpf_sampler *s);
/*
 * CPU hotplug: attach to CPUs that came online, drop those that went
 * offline (reopen[c] set: reattach c even if it looks attached, its perf
 * event died in an offline/online flap). Returns how many changed, or a
 * negative errno. No-op after bpf_sampler_detach.
 */
int bpf_sampler_sync_cpus(struct bpf_sampler *s, const uint8_t *reopen);
/* Netlink socket of kernel uevents (-1 if unavailable): readable when a
 * device changed; bpf_sampler_handle_uevents drains it and syncs CPUs. */
int bpf_sampler_uevent_fd(struct bpf_sampler *s);
int bpf_sampler_handle_uevents(struct bpf_sampler *s);
/* CPUs attached after start (came online while running). */
uint64_t bpf_sampler_cpus_onlined(struct bpf_sampler *s);
/* Detach the perf events and tracepoints (no new events). */
void bpf_sampler_detach(struct bpf_sampler *s);
/* Change every CPU's sampling period in place (PERF_EVENT_IOC_PERIOD:
 * the programs stay attached; each event restarts its period from the
 * call). All CPUs or none: on a refusal the old period is put back.
 * 0 or a negative errno. */
int bpf_sampler_set_period(struct bpf_sampler *s, uint64_t period_ns);
/* Enable or disable every CPU's perf event (a disabled event takes no
 * sample); CPUs attached later follow. */
void bpf_sampler_set_enabled(struct bpf_sampler *s, bool on);
/* ioctls a perf event refused (enable, disable, period). */
uint64_t bpf_sampler_ioctl_errors(struct bpf_sampler *s);
/* Sum a counter (enum otelprof_counter) over CPUs. */
uint64_t bpf_sampler_counter(struct bpf_sampler *s, unsigned which);
/* What the kernel lacks (enum otelprof_kernel_fallback) and the user
 * frames the loaded walk takes at most. */
uint32_t bpf_sampler_fallbacks(struct bpf_sampler *s,
			       uint32_t *max_user_frames);
/* fds of the unwinder's maps (unwind_files, unwind_procs). */
void bpf_sampler_unwind_fds(struct bpf_sampler *s, int *files_fd,
			    int *procs_fd);
/* The big_mappings array (processes with many executable mappings). */
int bpf_sampler_big_mappings_fd(struct bpf_sampler *s);
/*
 * Load a runtime's BPF object (ebpf/runtimes/NAME/, its ELF bytes) beside
 * the sampler: it shares the sampler's maps of the same names
 * (sampler_shared.bpf.h), its walk program (the *_bounded one on kernels
 * without bpf_loop) goes into walk_progs at OTELPROF_PROG_RUNTIME +
 * runtime. *out: the loaded object, for its own maps; the caller closes
 * it after bpf_sampler_close. Safe on another thread than the drain
 * thread's (it touches no sampler state but the load figures).
 */
struct bpf_object;
int bpf_sampler_load_runtime(struct bpf_sampler *s, uint32_t runtime,
			     const void *elf, size_t size,
			     struct bpf_object **out, struct errmsg *err);
/*
 * For another object loaded beside the sampler (offcpu_sampler.c): give
 * obj the sampler's maps of these names (NULL-terminated) before it
 * loads; the kernel BTF file in use (NULL: the kernel's own); the
 * verifier figures of its programs (set before its load, taken after);
 * the verdict lines of a failed load's log; a monotonic clock.
 */
int bpf_sampler_share_maps(struct bpf_sampler *s, struct bpf_object *obj,
			   const char *const *names, struct errmsg *err);
const char *bpf_sampler_btf_path(struct bpf_sampler *s);
char *bpf_sampler_stats_logs_set(struct bpf_object *obj);
void bpf_sampler_stats_logs_take(struct bpf_sampler *s, struct bpf_object *obj,
				 char *bufs, uint64_t load_ns);
const char *bpf_sampler_verdict(char *log);
uint64_t bpf_sampler_now_ns(void);
/* Size of the verifier log buffer for a load's failure message. */
#define BPF_SAMPLER_LOG_BYTES (16u << 20)
/* runtime_procs: per process, the runtime whose program walks it. */
int bpf_sampler_runtime_procs_fd(struct bpf_sampler *s);
/* The ctx_procs map (per-process context TLS locations). */
int bpf_sampler_ctx_fd(struct bpf_sampler *s);
void bpf_sampler_close(struct bpf_sampler *s);

/* Online CPUs as a bitmap over [0, n); returns n or a negative errno. */
int online_cpus(uint8_t **mask);

#endif
