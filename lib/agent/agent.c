// SPDX-License-Identifier: Apache-2.0
/*
 * The drain thread: waits on epoll (the ring buffer, table builds that
 * finished, CPU hotplug, stop), and in each pass, under state_lock,
 * consumes events and dispatches them: samples to the sample pipeline
 * (sample_pipeline.c), exec/exit/fork/maps-changed to the process table.
 * Then the pass's follow-ups, in order: file loads left from the last
 * slice, finished table builds, held samples, held rescans, context
 * re-reads, sweeps.
 */
#include "agent/agent.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/options.h"
#include "util/clock.h"
#include "util/malloc_arenas.h"

int64_t agent_boot_to_unix_offset(void)
{
	return (int64_t)(clock_ns(CLOCK_REALTIME) - boot_ns());
}

#define APM_RETRY_MS 10

/* A sample event whose counts and sizes hold together. */
static bool sample_event_ok(const struct otelprof_sample_event *e, size_t size)
{
	size_t need = offsetof(struct otelprof_sample_event, words);

	return size >= need && e->n_kernel <= OTELPROF_MAX_KERNEL_FRAMES &&
	       e->n_user <= OTELPROF_USTACK_WORDS &&
	       e->n_interp <= OTELPROF_MAX_INTERP_FRAMES &&
	       e->n_user >= 2 * e->n_interp &&
	       ((e->flags & OTELPROF_SAMPLE_F_STACK_COPY) ||
		e->n_user - 2 * e->n_interp <= OTELPROF_MAX_USER_FRAMES) &&
	       e->ctx.attrs_size <= OTELPROF_CTX_ATTRS_MAX &&
	       size >= otelprof_sample_size(e->n_user, e->ctx.attrs_size,
					    e->n_kernel);
}

/* Ring buffer callback; runs with state_lock held. */
static uint64_t rusage_ns(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000000ull +
	       (uint64_t)tv->tv_usec * 1000ull;
}

/*
 * Start-up: how long after otelprof_start the first sample was taken
 * and what the process had spent by then (BPF verification is system
 * time of the thread that loads). OTELPROF_DEBUG_STARTUP=1 prints it;
 * make bench reads it.
 */
static void note_first_sample(struct otelprof *p,
			      const struct otelprof_sample_event *e)
{
	struct rusage ru;
	uint64_t taken;

	if (!getenv("OTELPROF_DEBUG_STARTUP") || getrusage(RUSAGE_SELF, &ru))
		return;
	/* the sample's own time, on the boot clock, back on the monotonic
	 * one the start was read on */
	taken = e->hdr.ktime_boot_ns - (boot_ns() - mono_ns());
	fprintf(stderr,
		"otelprof: start-up: first sample %.1f ms after start; CPU "
		"to then %.1f ms (user %.1f, system %.1f)\n",
		(double)(taken - p->start_mono_ns) / 1e6,
		(double)(rusage_ns(&ru.ru_utime) + rusage_ns(&ru.ru_stime) -
			 p->start_cpu_ns) /
			1e6,
		(double)(rusage_ns(&ru.ru_utime) - p->start_user_ns) / 1e6,
		(double)(rusage_ns(&ru.ru_stime) - p->start_sys_ns) / 1e6);
}

/* The ring buffer with off-CPU on, unless the caller sized it. */
#define OFFCPU_MIN_RINGBUF_BYTES (16u << 20)

static int on_event(void *ctx, const void *data, size_t size)
{
	struct otelprof *p = ctx;
	const struct otelprof_event_header *h = data;

	if (size < sizeof(*h)) {
		p->counters.events_malformed++;
		return 0;
	}
	if (p->discarding) {
		/* Past stop's deadline: counted, not resolved. */
		if (h->type == OTELPROF_EVENT_SAMPLE)
			p->counters.dropped_at_stop++;
		return 0;
	}
	switch (h->type) {
	case OTELPROF_EVENT_SAMPLE:
		if (!sample_event_ok(data, size)) {
			p->counters.events_malformed++;
			return 0;
		}
		if (!p->counters.samples_received++)
			note_first_sample(p, data);
		agent_handle_sample(p, data, size, true);
		break;
	case OTELPROF_EVENT_OFFCPU_SAMPLE:
		if (!sample_event_ok(data, size)) {
			p->counters.events_malformed++;
			return 0;
		}
		agent_offcpu_stack(p, data, size);
		break;
	case OTELPROF_EVENT_OFFCPU_END:
		if (size < sizeof(struct otelprof_offcpu_end)) {
			p->counters.events_malformed++;
			return 0;
		}
		agent_offcpu_end(p, data);
		break;
	case OTELPROF_EVENT_EXEC: {
		const struct otelprof_task_event *t = data;
		struct process *proc;

		if (size < sizeof(*t)) {
			p->counters.events_malformed++;
			return 0;
		}
		atomic_store(&p->task_event_seen, true);
		process_table_exec(&p->procs, h->pid);
		/* Read /proc EXEC_HOLD_NS later (read_held_execs) unless the
		 * process exits unsampled first; at once if the hold is
		 * full. */
		if (exec_hold_add(&p->held_execs, h->pid, h->proc_start_ns,
				  h->ktime_boot_ns, t->filename,
				  sizeof(t->filename)))
			break;
		proc = process_table_get(&p->procs, h->pid, NULL,
					 h->proc_start_ns, h->ktime_boot_ns);
		if (proc) {
			process_set_exec_path(proc, t->filename,
					      sizeof(t->filename));
			process_table_young(&p->procs, proc, h->ktime_boot_ns);
		}
		break;
	}
	case OTELPROF_EVENT_MAPS_CHANGED: {
		const struct otelprof_task_event *t = data;
		struct process *proc;

		if (size < sizeof(*t)) {
			p->counters.events_malformed++;
			return 0;
		}
		atomic_store(&p->task_event_seen, true);
		/* A library was mapped or unmapped, or a context published:
		 * look again, as the process's budget allows (a held exec
		 * is read whole when due). */
		proc = process_table_find(&p->procs, h->pid);
		if (!proc && exec_hold_has(&p->held_execs, h->pid))
			break;
		if (proc)
			process_table_rescan_asked(&p->procs, proc,
						   (uint32_t)t->addr);
		else
			process_table_get(&p->procs, h->pid, NULL,
					  h->proc_start_ns, h->ktime_boot_ns);
		break;
	}
	case OTELPROF_EVENT_FORK: {
		const struct otelprof_task_event *t = data;

		if (size < sizeof(*t)) {
			p->counters.events_malformed++;
			return 0;
		}
		process_table_fork(&p->procs, (uint32_t)t->addr, h->pid,
				   h->proc_start_ns, h->ktime_boot_ns);
		break;
	}
	case OTELPROF_EVENT_EXIT:
		if (exec_hold_drop(&p->held_execs, h->pid, h->proc_start_ns) &&
		    !process_table_find(&p->procs, h->pid))
			p->counters.exec_reads_skipped++;
		process_table_exit(&p->procs, h->pid, h->proc_start_ns,
				   h->ktime_boot_ns);
		break;
	default:
		break;
	}
	agent_sync_processes(p);
	/* The pass's slice is spent: the rest waits for the next pass (this
	 * record is consumed), so a poll never waits long for the lock. */
	if (process_table_slice_over(&p->procs))
		return -EAGAIN;
	return 0;
}

/* What the process table may release around a slow /proc read in the
 * drain pass (held rescans): a poll waits for one slice, not for it. */
static void note_hold(struct otelprof *p)
{
	uint64_t held = mono_ns() - p->hold_since_ns;

	if (held > p->counters.drain_max_hold_ns)
		p->counters.drain_max_hold_ns = held;
}

static void state_unlock(void *ctx)
{
	struct otelprof *p = ctx;

	note_hold(p);
	pthread_mutex_unlock(&p->state_lock);
}

static void state_relock(void *ctx)
{
	struct otelprof *p = ctx;

	pthread_mutex_lock(&p->state_lock);
	p->hold_since_ns = mono_ns();
}

/* Held execs now due are read as an exec was before (a sample may have
 * read the process meanwhile: then only its exec path is set). */
static void read_held_execs(struct otelprof *p)
{
	struct held_exec x;
	uint64_t now = boot_ns();

	while (!process_table_slice_over(&p->procs) &&
	       exec_hold_take_due(&p->held_execs, now, &x)) {
		struct process *proc = process_table_get(&p->procs, x.pid, NULL,
							 x.start_ns, now);

		if (proc) {
			process_set_exec_path(proc, x.filename,
					      sizeof(x.filename));
			process_table_young(&p->procs, proc, now);
		}
		agent_sync_processes(p);
	}
}

/* One pass of the drain thread. True: its slice ran out with work left
 * (records, file loads, builds, re-pushes) for the next pass. */
static bool drain(struct otelprof *p)
{
	int installed;
	bool trim, more;
	uint64_t now;

	pthread_mutex_lock(&p->state_lock);
	/* Before the samples: their processing can take a while (a burst of
	 * new processes), a CPU coming online must not wait behind it. */
	if (!atomic_load(&p->stopping)) {
		agent_watch_cpus(p);
		agent_prob_tick(p);
	}
	p->hold_since_ns = mono_ns();
	p->boot_to_unix_ns = agent_boot_to_unix_offset();
	process_table_begin_pass(&p->procs);
	agent_runtimes_loaded(p);
	bpf_sampler_consume(p->sampler);
	read_held_execs(p);
	/* One process at a time, each synced before the next: the loads
	 * and reads count against the pass's slice. */
	while (process_table_resume_loads(&p->procs))
		agent_sync_processes(p);
	installed = agent_finish_files(p);
	agent_replay_parked(p, installed > 0, false);
	while (process_table_run_held(&p->procs))
		agent_sync_processes(p);
	now = boot_ns();
	context_tracker_tick(&p->context, now);
	p->apm_waiting = context_tracker_flush_apm(&p->context, now);
	agent_sync_rescans(p, now);
	/* the young whose wait for a sample is over */
	agent_sync_processes(p);
	agent_sweep_if_due(p);
	trim = p->trim_due;
	p->trim_due = false;
	note_hold(p);
	more = p->procs.slice_spent;
	p->held_next_ms = exec_hold_next_ms(&p->held_execs, boot_ns());
	pthread_mutex_unlock(&p->state_lock);
	/* Freed process and file state goes back to the kernel. */
	if (trim)
		malloc_trim(0);
	return more;
}

static void *drain_thread(void *arg)
{
	struct otelprof *p = arg;
	struct epoll_event ev[4];
	int uevent_fd = bpf_sampler_uevent_fd(p->sampler);
	bool more = false;

	while (!atomic_load(&p->stopping)) {
		/* The BPF side wakes us only for batches (64 KiB): a short
		 * timeout drains small amounts on quiet hosts. Shorter while
		 * an Elastic APM agent's socket queue is full (it reads it
		 * every 20 ms). Work left by a spent slice goes on after 1 ms,
		 * in which a poll can take the lock (and the records left
		 * must not wait for a wake-up that may not come). */
		int timeout = more ? 1 : p->apm_waiting ? APM_RETRY_MS : 100;
		int n;

		/* An exec or mapping change in the last pass: those the
		 * kernel's wake-up gap holds back are read within it. */
		if (atomic_exchange(&p->task_event_seen, false) &&
		    timeout > OTELPROF_TASK_WAKE_GAP_MS)
			timeout = OTELPROF_TASK_WAKE_GAP_MS;
		if (p->held_next_ms >= 0 && timeout > p->held_next_ms)
			timeout = p->held_next_ms;
		n = epoll_wait(p->epoll_fd, ev, 4, timeout);

		if (n < 0 && errno != EINTR)
			break;
		/* Uevents are read only when some came: a recv per pass was
		 * a syscall per wake-up, most of them finding nothing. */
		for (int i = 0; i < n; i++)
			if (ev[i].data.fd == uevent_fd)
				p->uevents_ready = true;
		more = drain(p);
	}
	return NULL;
}

/* fds: one per row chunk (not per file), /proc reads, perf events per
 * CPU. Works under RLIMIT_NOFILE 256 (TestLowFileLimit); take what the
 * hard limit permits anyway (Go does the same for its own processes). */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

void agent_free(struct otelprof *p)
{
	/* A drain thread stop could not wait for: it exits after its pass
	 * (stopping is set); nothing can be freed under it. */
	if (p->thread_started)
		pthread_join(p->thread, NULL);
	p->thread_started = false;
	/* Processes taken out and not yet forgotten (none: every change is
	 * taken at once) are forgotten while the stages still exist. */
	agent_sync_processes(p);
	/* The kernel maps go with the sampler: no per-entry cleanup. */
	context_tracker_free(&p->context);
	agent_prob_free(p);
	agent_runtimes_free(p);
	/* Before the sampler: a load in progress uses it. */
	runtime_programs_free(&p->programs);
	offcpu_sampler_close(p->offcpu);
	p->offcpu = NULL;
	bpf_sampler_close(p->sampler);
	file_cache_stop_loader(&p->symfiles);
	process_unwind_stop_worker(&p->unwinder);
	agent_free_parked(p);
	agent_free_offcpu(p);
	process_unwind_free(&p->unwinder);
	stack_symbolizer_free(&p->symbolizer);
	symbolized_stack_free(&p->symbolized);
	stack_cache_free(&p->stack_cache);
	pb_free(&p->windows[0]);
	pb_free(&p->windows[1]);
	process_table_free(&p->procs);
	file_cache_free(&p->symfiles);
	file_table_free(&p->files);
	kallsyms_free(&p->ksyms);
	if (p->epoll_fd >= 0)
		close(p->epoll_fd);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	pthread_mutex_destroy(&p->state_lock);
	pthread_mutex_destroy(&p->poll_lock);
	free(p);
}

/* The stages, in the order they depend on each other. */
static int start_stages(struct otelprof *p, const struct otelprof_opts *o,
			struct errmsg *err)
{
	struct bpf_sampler_config cfg;
	uint8_t *mask = NULL;
	int e, ncpu, files_fd, procs_fd;

	file_table_init(&p->files);
	file_cache_init(&p->symfiles, &p->files);
	file_cache_set_budget(&p->symfiles, (uint64_t)o->symbol_budget_mb << 20,
			      (uint64_t)o->file_budget_mb << 20);
	{
		const char *why;

		e = file_cache_set_debuginfod(&p->symfiles, o->debuginfod_urls,
					      &why);
		if (e)
			return errmsg_set(err, e, "debuginfod_urls: %s", why);
	}
	process_table_init(&p->procs, &p->files);
	p->procs.young_ns = PROCESS_YOUNG_NS;
	/* Identical files (a copy, another container's layer) kept once;
	 * OTELPROF_SHARE_FILES=0 turns it off to measure the difference. */
	{
		const char *share = getenv("OTELPROF_SHARE_FILES");

		if (!share || strcmp(share, "0"))
			file_table_share_by_content(
				&p->files, process_file_reopen, &p->procs);
	}
	{
		const char *why;

		/* Checked by agent_parse_opts: cannot fail here. */
		if (env_names_parse(o->include_env_vars, &p->env_names, &why))
			return errmsg_set(err, -EINVAL, "include_env_vars: %s",
					  why);
		p->procs.env_names = &p->env_names;
	}
	process_table_set_lock(&p->procs, state_unlock, state_relock, p);
	stack_symbolizer_init(&p->symbolizer, &p->ksyms, &p->procs,
			      &p->symfiles);
	symbolized_stack_init(&p->symbolized);
	stack_cache_init(&p->stack_cache);
	if (pb_init(&p->windows[0]) || pb_init(&p->windows[1]))
		return errmsg_set(err, -ENOMEM, "out of memory");
	p->boot_to_unix_ns = agent_boot_to_unix_offset();
	p->window_start_unix_ns = clock_ns(CLOCK_REALTIME);
	raise_fd_limit();

	ncpu = online_cpus(&mask);
	free(mask);
	memset(&cfg, 0, sizeof(cfg));
	cfg.frequency_hz = p->frequency_hz;
	cfg.target_tgid = (uint32_t)o->pid;
	cfg.include_idle = !!(o->flags & OTELPROF_F_INCLUDE_IDLE);
	cfg.max_user_frames =
		o->max_frames ? o->max_frames : OTELPROF_MAX_USER_FRAMES;
	p->max_user_frames = cfg.max_user_frames;
	cfg.btf_path = o->btf_path;
	/* Sized for the ceiling when one is given: the rate may go there
	 * at run time, the ring buffer cannot grow. */
	cfg.ringbuf_bytes = agent_ringbuf_bytes(
		o->ringbuf_kb,
		o->max_frequency_hz > p->frequency_hz ? o->max_frequency_hz
						      : p->frequency_hz,
		ncpu);
	/* Off-CPU events come per context switch, not per tick: thousands
	 * a second on a busy host, in bursts. */
	if (o->off_cpu_threshold > 0.0 && !o->ringbuf_kb &&
	    cfg.ringbuf_bytes < OFFCPU_MIN_RINGBUF_BYTES)
		cfg.ringbuf_bytes = OFFCPU_MIN_RINGBUF_BYTES;
	/* Probabilistic: the first interval's draw decides. */
	cfg.start_paused =
		o->probabilistic_threshold && o->probabilistic_threshold < 100;
	e = bpf_sampler_open(&cfg, on_event, p, &p->sampler, err);
	if (e)
		return e;
	agent_rate_init(p, o, cfg.ringbuf_bytes, ncpu);
	/* Sampling is on: the kernel's symbols are read while the first
	 * samples wait in the ring buffer (reading /proc/kallsyms takes
	 * 50-150 ms; no sample is named before the drain thread starts).
	 * Without them we still profile; kernel frames stay unnamed. */
	if (kallsyms_load(&p->ksyms))
		memset(&p->ksyms, 0, sizeof(p->ksyms));
	bpf_sampler_unwind_fds(p->sampler, &files_fd, &procs_fd);
	process_unwind_init(&p->unwinder, &p->procs, &p->symfiles, files_fd,
			    procs_fd);
	/* Without it, processes keep their first mappings only. */
	(void)unwind_maps_set_big(&p->unwinder.maps,
				  bpf_sampler_big_mappings_fd(p->sampler));
	context_tracker_init(&p->context, &p->procs, &p->symfiles,
			     bpf_sampler_ctx_fd(p->sampler));
	p->context.apm_off = !!(o->flags & OTELPROF_F_NO_APM_AGENTS);
	e = runtime_programs_init(&p->programs, p->sampler);
	if (e)
		return errmsg_set(err, e, "eventfd: %s", strerror(-e));
	/* Opt-in: with the threshold at 0 no scheduler program is loaded. */
	if (o->off_cpu_threshold > 0.0) {
		/* Probabilistic: attached when an interval is drawn on. */
		e = offcpu_sampler_open(p->sampler, o->off_cpu_threshold,
					(uint32_t)o->pid, !cfg.start_paused,
					&p->offcpu, err);
		if (e)
			return e;
	}
	e = agent_runtimes_init(p);
	if (e)
		return errmsg_set(err, e, "runtimes: %s", strerror(-e));
	/* Every stage is ready: the tables may tell of files and processes
	 * now. */
	e = process_unwind_start_worker(&p->unwinder);
	/* Big files' symbols are read in the background too; a finished
	 * read wakes the drain thread the same way. */
	if (!e)
		e = file_cache_start_loader(
			&p->symfiles, process_unwind_notify_fd(&p->unwinder));
	if (e)
		return errmsg_set(err, e, "cannot start thread: %s",
				  strerror(-e));
	return 0;
}

static int watch_fd(struct otelprof *p, int fd, struct errmsg *err)
{
	struct epoll_event ev;
	int e;

	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.fd = fd;
	if (!epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fd, &ev))
		return 0;
	e = -errno;
	return errmsg_set(err, e, "epoll_ctl: %s", strerror(-e));
}

/* What the drain thread waits on. */
static int start_epoll(struct otelprof *p, struct errmsg *err)
{
	int e, fd;

	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (p->wake_fd < 0 || p->epoll_fd < 0) {
		e = -errno;
		return errmsg_set(err, e, "eventfd/epoll: %s", strerror(-e));
	}
	e = watch_fd(p, bpf_sampler_fd(p->sampler), err);
	if (!e)
		e = watch_fd(p, p->wake_fd, err);
	if (e)
		return e;
	/* A CPU came online or went offline (optional). */
	fd = bpf_sampler_uevent_fd(p->sampler);
	if (fd >= 0) {
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

		epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
	}
	/* Probabilistic profiling: the next interval's draw. */
	if (p->prob.timer_fd >= 0) {
		e = watch_fd(p, p->prob.timer_fd, err);
		if (e)
			return e;
	}
	/* A runtime's BPF program loaded: its processes go in now. */
	e = watch_fd(p, runtime_programs_notify_fd(&p->programs), err);
	if (e)
		return e;
	/* A finished table build: install it and replay held samples now. */
	return watch_fd(p, process_unwind_notify_fd(&p->unwinder), err);
}

int agent_start(const struct otelprof_opts *o, struct otelprof **out,
		struct errmsg *err)
{
	struct otelprof *p;
	int e;

	/* Before our threads exist: each would take an arena of its own. */
	(void)malloc_arenas_limit();
	p = calloc(1, sizeof(*p));
	if (!p)
		return errmsg_set(err, -ENOMEM, "out of memory");
	{
		struct rusage ru;

		p->start_mono_ns = mono_ns();
		if (!getrusage(RUSAGE_SELF, &ru)) {
			p->start_user_ns = rusage_ns(&ru.ru_utime);
			p->start_sys_ns = rusage_ns(&ru.ru_stime);
			p->start_cpu_ns = p->start_user_ns + p->start_sys_ns;
		}
	}
	p->wake_fd = p->epoll_fd = -1;
	p->held_next_ms = -1;
	p->prob.timer_fd = -1;
	pthread_mutex_init(&p->state_lock, NULL);
	pthread_mutex_init(&p->poll_lock, NULL);
	p->frequency_hz = o->frequency_hz ? o->frequency_hz
					  : OTELPROF_DEFAULT_FREQUENCY_HZ;
	if (o->host_name && *o->host_name) {
		snprintf(p->host_name, sizeof(p->host_name), "%s",
			 o->host_name);
	} else {
		struct utsname u;

		if (!uname(&u))
			snprintf(p->host_name, sizeof(p->host_name), "%s",
				 u.nodename);
	}
	e = start_stages(p, o, err);
	/* Probabilistic: the first interval starts when everything is
	 * ready (the events were attached disabled). */
	if (!e)
		e = agent_prob_start(p, o, err);
	if (!e)
		e = start_epoll(p, err);
	if (!e) {
		e = pthread_create(&p->thread, NULL, drain_thread, p);
		if (e)
			e = errmsg_set(err, -e, "cannot start thread: %s",
				       strerror(e));
	}
	if (e) {
		agent_free(p);
		return e;
	}
	p->thread_started = true;
	*out = p;
	return 0;
}

/* otelprof_stop returns within this, whatever the host does (docs/abi.md):
 * the drain thread gets STOP_JOIN_NS to finish its pass; what the ring
 * buffer still holds is read until the deadline, held samples wait for
 * running table builds until then too. */
#define STOP_BUDGET_NS (800ull * 1000 * 1000)
#define STOP_JOIN_NS   (400ull * 1000 * 1000)

/* Join the drain thread, waiting at most ns. */
static bool join_within(pthread_t t, uint64_t ns)
{
	struct timespec abs;
	uint64_t at = clock_ns(CLOCK_REALTIME) + ns;

	abs.tv_sec = (time_t)(at / 1000000000ull);
	abs.tv_nsec = (long)(at % 1000000000ull);
	return pthread_timedjoin_np(t, NULL, &abs) == 0;
}

/* Caller holds poll_lock; p is not stopped yet. */
int agent_stop(struct otelprof *p)
{
	uint64_t one = 1, deadline;

	deadline = mono_ns() + STOP_BUDGET_NS;
	atomic_store(&p->stopping, true);
	if (write(p->wake_fd, &one, sizeof(one)) < 0) {
		/* eventfd write only fails on overflow: the thread is
		 * already woken. */
	}
	if (p->thread_started && !join_within(p->thread, STOP_JOIN_NS)) {
		/* Its pass is stuck in one slow operation (a file a process
		 * controls): stop sampling without the state lock (the
		 * thread never touches the perf links) and leave the rest to
		 * it; the next poll waits for it, close joins it. */
		offcpu_sampler_detach(p->offcpu);
		bpf_sampler_detach(p->sampler);
		p->stopped = true;
		snprintf(p->errbuf, sizeof(p->errbuf),
			 "stop: the drain thread is still busy; what it holds "
			 "comes with the next poll");
		return 0;
	}
	p->thread_started = false;
	pthread_mutex_lock(&p->state_lock);
	offcpu_sampler_detach(p->offcpu);
	bpf_sampler_detach(p->sampler);
	/* What the kernel still holds belongs to the next poll, as much of
	 * it as can be read by the deadline. */
	p->procs.slice_end_ns = deadline;
	if (bpf_sampler_consume(p->sampler) < 0) {
		/* The deadline came first: skip the rest, counted (cheap). */
		p->procs.slice_end_ns = 0;
		p->discarding = true;
		bpf_sampler_consume(p->sampler);
		p->discarding = false;
	}
	/* Held samples: give running table builds until the deadline. */
	while (p->parked && agent_files_busy(p) &&
	       mono_ns() + 20 * 1000 * 1000 < deadline) {
		struct timespec ms20 = {0, 20 * 1000 * 1000};

		pthread_mutex_unlock(&p->state_lock);
		nanosleep(&ms20, NULL);
		pthread_mutex_lock(&p->state_lock);
		agent_finish_files(p);
	}
	agent_finish_files(p);
	agent_replay_parked(p, true, true);
	/* The last samples' correlations: one non-blocking try. */
	context_tracker_flush_apm(&p->context, boot_ns());
	p->procs.slice_end_ns = 0;
	p->stopped = true;
	pthread_mutex_unlock(&p->state_lock);
	return 0;
}
