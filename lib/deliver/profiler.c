// SPDX-License-Identifier: Apache-2.0
/*
 * The public ABI (include/otelprofiler.h): a background thread drains the
 * BPF ring buffer, resolves each sample against the process table and
 * symbol caches and adds it to the current window; otelprof_poll swaps the
 * window out and encodes it to OTLP bytes.
 *
 * Locking: `state_lock` guards everything the drain thread touches (process
 * table, files, current builder). `poll_lock` serializes poll/stop/stats so
 * that stop during poll is safe; encoding happens under poll_lock only, so
 * draining goes on while a window is being encoded.
 */
#include "otelprofiler.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "context/context_tracker.h"
#include "interp/interp_tracker.h"
#include "context/thread_attrs.h"
#include "encode/otlp_encoder.h"
#include "encode/profile_builder.h"
#include "process/process_table.h"
#include "sample/bpf_sampler.h"
#include "symbolize/file_cache.h"
#include "symbolize/kallsyms.h"
#include "symbolize/stack_symbolizer.h"
#include "unwind/process_unwind.h"
#include "util/errmsg.h"

#define MAX_FREQUENCY_HZ  10000u
#define SWEEP_INTERVAL_NS (10ull * 1000 * 1000 * 1000)
#define FILE_LINGER_NS	  (60ull * 1000 * 1000 * 1000)
/* CPUs coming online are sampled within this (plus the drain tick). */
#define CPU_CHECK_NS (500ull * 1000 * 1000)

struct otelprof {
	pthread_mutex_t state_lock;
	pthread_mutex_t poll_lock;
	pthread_t thread;
	bool thread_started;
	int wake_fd; /* eventfd: tells the drain thread to exit */
	int epoll_fd;
	atomic_bool stopping;
	bool stopped;
	bool handed_out; /* a poll has returned a payload */

	uint32_t frequency_hz;
	uint32_t max_user_frames;
	char host_name[256];
	struct bpf_sampler *sampler;
	struct kallsyms ksyms;
	struct file_cache files;
	struct process_table procs;
	struct stack_symbolizer symbolizer;
	struct process_unwind unwinder;
	struct context_tracker context;
	struct interp_tracker interp;
	uint64_t ctx_attrs_dropped;
	struct parked_sample *parked, *parked_tail;
	uint32_t nparked;
	uint64_t samples_parked;
	/* copy-unwinder output, then the sample's interpreter frames */
	uint64_t frames[OTELPROF_MAX_USER_FRAMES +
			2 * OTELPROF_MAX_INTERP_FRAMES];
	struct profile_builder windows[2];
	int cur; /* index of the window being filled */
	uint64_t window_start_unix_ns;
	int64_t boot_to_unix_ns;
	uint64_t last_sweep_ns;
	uint64_t drain_max_hold_ns; /* longest state_lock hold by drain() */
	bool discarding;	    /* stop's deadline passed: count only */
	uint64_t dropped_at_stop;   /* samples still buffered then */
	uint64_t last_cpu_check_ns;
	bool trim_due; /* a sweep freed state: malloc_trim outside the lock */

	/* counters (state_lock) */
	uint64_t samples_received, samples_encoded, polls, bytes_encoded;
	uint64_t add_errors;

	char errbuf[1024];
};

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int64_t boot_to_unix_offset(void)
{
	return (int64_t)(clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_BOOTTIME));
}

/* A stack-copy sample held until its tables are built (in order). */
struct parked_sample {
	struct parked_sample *next;
	uint64_t since_ns;
	size_t size;
	unsigned char data[];
};

#define MAX_PARKED  1024			/* 8 MiB of copies */
#define MAX_PARK_NS (5ull * 1000 * 1000 * 1000) /* then unwind as is */

static bool park(struct otelprof *p, const void *data, size_t size)
{
	struct parked_sample *ps;

	if (p->nparked >= MAX_PARKED || atomic_load(&p->stopping))
		return false;
	ps = malloc(sizeof(*ps) + size);
	if (!ps)
		return false;
	ps->next = NULL;
	ps->since_ns = clock_ns(CLOCK_MONOTONIC);
	ps->size = size;
	memcpy(ps->data, data, size);
	if (p->parked_tail)
		p->parked_tail->next = ps;
	else
		p->parked = ps;
	p->parked_tail = ps;
	p->nparked++;
	p->samples_parked++;
	return true;
}

/* The sample's thread context: a Link for its trace/span, and its
 * attributes named through the process context's key map. */
static void sample_context(struct otelprof *p, struct profile_builder *b,
			   const struct process *proc,
			   const struct otelprof_sample_event *e, int32_t *link,
			   int32_t *extra, uint32_t *nextra)
{
	static const uint8_t zero[16];
	const struct process_context *pc = context_of(proc);
	struct thread_attr attrs[PB_MAX_CTX_ATTRS];
	size_t n;

	if (memcmp(e->ctx.trace_id, zero, 16)) {
		*link = pb_link(b, e->ctx.trace_id, e->ctx.span_id);
		if (*link < 0) {
			*link = 0;
			p->add_errors++;
		}
	}
	n = thread_attrs_decode((const uint8_t *)e->ustack + e->n_user * 8,
				e->ctx.attrs_size, pc ? pc->keys : NULL,
				pc ? pc->nkeys : 0, attrs, PB_MAX_CTX_ATTRS,
				&p->ctx_attrs_dropped);
	for (size_t i = 0; i < n; i++) {
		int32_t r = pb_attr_string(b, attrs[i].key, attrs[i].value);

		if (r <= 0)
			p->add_errors++;
		else
			extra[(*nextra)++] = r;
	}
}

static void handle_sample(struct otelprof *p,
			  const struct otelprof_sample_event *e, size_t size,
			  bool may_park)
{
	struct profile_builder *b = &p->windows[p->cur];
	struct pb_resource_info ri;
	struct process *proc;
	uint64_t now = e->hdr.ktime_boot_ns;
	uint32_t res, nu = 0;
	int32_t stack, link = 0, extra[PB_MAX_CTX_ATTRS];
	uint32_t nextra = 0;
	char comm[OTELPROF_COMM_LEN + 1];
	struct pb_attr_in published[PCTX_MAX_ATTRS];
	const struct process_context *pc;

	memcpy(comm, e->comm, OTELPROF_COMM_LEN);
	comm[OTELPROF_COMM_LEN] = '\0';
	proc = process_table_get_sample(&p->procs, e->hdr.pid, e->hdr.tid, comm,
					e->hdr.proc_start_ns, now);
	if (!proc) {
		p->add_errors++;
		return;
	}
	if (e->flags & OTELPROF_SAMPLE_F_STACK_COPY) {
		uint32_t flags;

		nu = process_unwind_copy(&p->unwinder, proc, e, p->frames,
					 p->max_user_frames, &flags, now);
		/* A big file's table is being built: hold the sample rather
		 * than emit a cut stack. */
		if ((flags & OTELPROF_SAMPLE_F_PENDING) && may_park &&
		    park(p, e, size))
			return;
	}
	memset(&ri, 0, sizeof(ri));
	ri.key = proc->serial;
	ri.pid = proc->pid;
	ri.exe_name = *proc->exe_name ? proc->exe_name : proc->comm;
	ri.exe_path = proc->exe_path;
	ri.container_id = proc->container_id;
	ri.host_name = p->host_name;
	pc = context_of(proc);
	for (size_t i = 0; pc && i < pc->nattrs && i < PCTX_MAX_ATTRS; i++) {
		published[i].key = pc->attrs[i].key;
		published[i].str = pc->attrs[i].str;
		published[i].i = pc->attrs[i].i;
		ri.nextra = i + 1;
	}
	ri.extra = published;
	ri.extra_gen = pc ? pc->published_at_ns : 0;
	if (pb_resource(b, &ri, &res)) {
		p->add_errors++;
		return;
	}
	if (e->flags & OTELPROF_SAMPLE_F_STACK_COPY) {
		uint32_t ni = e->interp_kind == OTELPROF_INTERP_CPYTHON
				      ? e->n_interp
				      : 0;

		memcpy(p->frames + nu, e->ustack + e->n_user - 2 * ni,
		       2 * ni * sizeof(uint64_t));
		stack = stack_symbolize(&p->symbolizer, b, proc, e->kstack,
					e->n_kernel, p->frames, nu + 2 * ni, ni,
					now);
	} else {
		stack = stack_symbolize(
			&p->symbolizer, b, proc, e->kstack, e->n_kernel,
			e->ustack, e->n_user,
			e->interp_kind == OTELPROF_INTERP_CPYTHON ? e->n_interp
								  : 0,
			now);
	}
	if (e->ctx.format != OTELPROF_CTX_NONE)
		sample_context(p, b, proc, e, &link, extra, &nextra);
	if (stack < 0 ||
	    pb_add_sample(b, res, stack, e->hdr.tid, comm, e->hdr.cpu, link,
			  extra, nextra,
			  e->hdr.ktime_boot_ns + (uint64_t)p->boot_to_unix_ns))
		p->add_errors++;
}

/* Ring buffer callback; runs with state_lock held. */
static int on_event(void *ctx, const void *data, size_t size)
{
	struct otelprof *p = ctx;
	const struct otelprof_event_header *h = data;

	if (size < sizeof(*h))
		return 0;
	if (p->discarding) {
		/* Past stop's deadline: counted, not resolved. */
		if (h->type == OTELPROF_EVENT_SAMPLE)
			p->dropped_at_stop++;
		return 0;
	}
	switch (h->type) {
	case OTELPROF_EVENT_SAMPLE: {
		const struct otelprof_sample_event *e = data;
		size_t need = offsetof(struct otelprof_sample_event, ustack);

		if (size < need || e->n_kernel > OTELPROF_MAX_KERNEL_FRAMES ||
		    e->n_user > OTELPROF_USTACK_WORDS ||
		    e->n_interp > OTELPROF_MAX_INTERP_FRAMES ||
		    e->n_user < 2 * e->n_interp ||
		    (!(e->flags & OTELPROF_SAMPLE_F_STACK_COPY) &&
		     e->n_user - 2 * e->n_interp > OTELPROF_MAX_USER_FRAMES) ||
		    e->ctx.attrs_size > OTELPROF_CTX_ATTRS_MAX ||
		    size < need + e->n_user * sizeof(uint64_t) +
				    ((e->ctx.attrs_size + 7u) & ~7u))
			return 0;
		p->samples_received++;
		handle_sample(p, e, size, true);
		break;
	}
	case OTELPROF_EVENT_EXEC: {
		const struct otelprof_task_event *t = data;
		struct process *proc;

		if (size < sizeof(*t))
			return 0;
		process_table_exec(&p->procs, h->pid);
		/* Read /proc now, while the new image surely exists: a short
		 * process may be gone by its first sample. */
		proc = process_table_get(&p->procs, h->pid, NULL,
					 h->proc_start_ns, h->ktime_boot_ns);
		if (proc) {
			process_set_exec_path(proc, t->filename,
					      sizeof(t->filename));
		}
		break;
	}
	case OTELPROF_EVENT_MAPS_CHANGED: {
		const struct otelprof_task_event *t = data;
		struct process *proc;

		if (size < sizeof(*t))
			return 0;
		/* A library was mapped or unmapped, or a context published:
		 * look again, as the process's budget allows. */
		proc = process_table_find(&p->procs, h->pid);
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

		if (size < sizeof(*t))
			return 0;
		process_table_fork(&p->procs, (uint32_t)t->addr, h->pid,
				   h->proc_start_ns, h->ktime_boot_ns);
		break;
	}
	case OTELPROF_EVENT_EXIT:
		process_table_exit(&p->procs, h->pid, h->proc_start_ns,
				   h->ktime_boot_ns);
		break;
	default:
		break;
	}
	/* The pass's slice is spent: the rest waits for the next pass (this
	 * record is consumed), so a poll never waits long for the lock. */
	if (p->procs.slice_end_ns &&
	    clock_ns(CLOCK_MONOTONIC) > p->procs.slice_end_ns)
		return -EAGAIN;
	return 0;
}

/* Replay held samples: all of them once a table was installed (those still
 * waiting park again), or those held too long. force: everything, as is. */
static void replay_parked(struct otelprof *p, bool installed, bool force)
{
	struct parked_sample *ps = p->parked;
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	if (!ps || (!installed && !force && now - ps->since_ns < MAX_PARK_NS))
		return;
	p->parked = p->parked_tail = NULL;
	p->nparked = 0;
	while (ps) {
		struct parked_sample *next = ps->next;
		bool may_park = !force && now - ps->since_ns < MAX_PARK_NS;

		if (!may_park || !park(p, ps->data, ps->size))
			handle_sample(p, (const void *)ps->data, ps->size,
				      false);
		else
			p->samples_parked--; /* counted once */
		free(ps);
		ps = next;
	}
}

/* Drop exited processes and files no process maps any more. Run by the
 * drain thread, not only at polls: a caller that polls rarely (the CLI
 * polls once, at the end) must not keep every process it ever saw. Safe
 * mid-window: the builder holds copies, the stack cache is keyed by the
 * never-reused process serial. Caller holds state_lock. */
static void sweep_if_due(struct otelprof *p)
{
	uint64_t now = clock_ns(CLOCK_BOOTTIME);

	if (now - p->last_sweep_ns <= SWEEP_INTERVAL_NS)
		return;
	p->last_sweep_ns = now;
	process_table_sweep(&p->procs, now - SWEEP_INTERVAL_NS);
	/* Files of exited processes linger a minute for the next exec of
	 * the same binary. */
	file_cache_sweep(&p->files, FILE_LINGER_NS);
	p->trim_due = true;
}

/* CPU hotplug: a uevent says at once; the online mask is looked at every
 * CPU_CHECK_NS as well (no uevents in another network namespace). Caller
 * holds state_lock (stop detaches under it). */
static void watch_cpus(struct otelprof *p)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	bpf_sampler_handle_uevents(p->sampler);
	if (now - p->last_cpu_check_ns < CPU_CHECK_NS)
		return;
	p->last_cpu_check_ns = now;
	bpf_sampler_sync_cpus(p->sampler, NULL);
}

static void drain(struct otelprof *p)
{
	int installed;
	bool trim;

	uint64_t t0;

	pthread_mutex_lock(&p->state_lock);
	/* Before the samples: their processing can take a while (a burst of
	 * new processes), a CPU coming online must not wait behind it. */
	if (!atomic_load(&p->stopping))
		watch_cpus(p);
	t0 = clock_ns(CLOCK_MONOTONIC);
	process_table_begin_pass(&p->procs);
	bpf_sampler_consume(p->sampler);
	process_table_resume_loads(&p->procs);
	installed = process_unwind_finish_builds(&p->unwinder);
	replay_parked(p, installed > 0, false);
	process_table_run_held(&p->procs);
	context_tracker_tick(&p->context, clock_ns(CLOCK_BOOTTIME));
	sweep_if_due(p);
	trim = p->trim_due;
	p->trim_due = false;
	t0 = clock_ns(CLOCK_MONOTONIC) - t0;
	if (t0 > p->drain_max_hold_ns)
		p->drain_max_hold_ns = t0;
	pthread_mutex_unlock(&p->state_lock);
	/* Freed process and file state goes back to the kernel. */
	if (trim)
		malloc_trim(0);
}

static void *drain_thread(void *arg)
{
	struct otelprof *p = arg;
	struct epoll_event ev[4];

	while (!atomic_load(&p->stopping)) {
		/* The BPF side wakes us only for batches (64 KiB): a short
		 * timeout drains small amounts on quiet hosts. */
		int n = epoll_wait(p->epoll_fd, ev, 4, 100);

		if (n < 0 && errno != EINTR)
			break;
		drain(p);
	}
	return NULL;
}

/* The end of every field of struct otelprof_opts, in order: a caller's
 * sz counts a field only if the field lies whole inside it. */
#define OPT_END(f)                                                             \
	(offsetof(struct otelprof_opts, f) +                                   \
	 sizeof(((struct otelprof_opts *)0)->f))
static const size_t opt_ends[] = {
	OPT_END(sz),
	OPT_END(frequency_hz),
	OPT_END(pid),
	OPT_END(host_name),
	OPT_END(ringbuf_kb),
	OPT_END(flags),
	OPT_END(max_frames),
	OPT_END(reserved0),
	OPT_END(symbol_budget_mb),
	OPT_END(file_budget_mb),
	OPT_END(btf_path),
};

/* One sample event with a full stack copy, and the ring buffer's own
 * 8-byte record header. */
#define MIN_RINGBUF_BYTES (sizeof(struct otelprof_sample_event) + 8)

static int parse_opts(const struct otelprof_opts *in, struct otelprof_opts *o,
		      struct errmsg *err)
{
	size_t whole = 0;

	memset(o, 0, sizeof(*o));
	if (!in)
		return 0;
	if (in->sz < sizeof(in->sz))
		return errmsg_set(err, -EINVAL,
				  "otelprof_opts.sz is %zu: set it to "
				  "sizeof(struct otelprof_opts)",
				  in->sz);
	if (in->sz > sizeof(*o)) {
		const unsigned char *tail = (const unsigned char *)in;

		for (size_t i = sizeof(*o); i < in->sz; i++)
			if (tail[i])
				return errmsg_set(err, -E2BIG,
						  "otelprof_opts has unknown "
						  "non-zero fields (caller is "
						  "newer than the library)");
	}
	for (size_t i = 0; i < sizeof(opt_ends) / sizeof(opt_ends[0]); i++)
		if (opt_ends[i] <= in->sz)
			whole = opt_ends[i];
	/* Padding after a field is copied with it; a field cut by sz is not
	 * (half a pointer must never be used). */
	memcpy(o, in, whole);
	o->sz = in->sz;
	if (o->reserved0)
		return errmsg_set(err, -EINVAL,
				  "otelprof_opts.reserved0 is %u: reserved "
				  "fields must be zero",
				  o->reserved0);
	if (o->flags & ~(uint32_t)OTELPROF_F_ALL)
		return errmsg_set(err, -EINVAL,
				  "otelprof_opts.flags has unknown bits %#x",
				  o->flags & ~(uint32_t)OTELPROF_F_ALL);
	if (o->frequency_hz > MAX_FREQUENCY_HZ)
		return errmsg_set(err, -EINVAL,
				  "frequency %u Hz is out of range (1..%u)",
				  o->frequency_hz, MAX_FREQUENCY_HZ);
	if (o->pid < 0)
		return errmsg_set(err, -EINVAL, "pid %d is negative", o->pid);
	if (o->pid > 0 && kill(o->pid, 0) && errno == ESRCH)
		return errmsg_set(err, -ESRCH, "no process with pid %d",
				  o->pid);
	if (o->ringbuf_kb > (1u << 20))
		return errmsg_set(err, -EINVAL,
				  "ringbuf_kb %u is too large (max 1048576)",
				  o->ringbuf_kb);
	if (o->ringbuf_kb && (uint64_t)o->ringbuf_kb * 1024 < MIN_RINGBUF_BYTES)
		return errmsg_set(err, -EINVAL,
				  "ringbuf_kb %u cannot hold one stack copy "
				  "(needs at least %zu KiB)",
				  o->ringbuf_kb,
				  (MIN_RINGBUF_BYTES + 1023) / 1024);
	if (o->max_frames > OTELPROF_MAX_USER_FRAMES)
		return errmsg_set(err, -EINVAL,
				  "max_frames %u exceeds the build's limit of "
				  "%u",
				  o->max_frames, OTELPROF_MAX_USER_FRAMES);
	if (o->file_budget_mb && o->symbol_budget_mb &&
	    o->file_budget_mb > o->symbol_budget_mb)
		return errmsg_set(err, -EINVAL,
				  "file_budget_mb %u exceeds symbol_budget_mb "
				  "%u",
				  o->file_budget_mb, o->symbol_budget_mb);
	return 0;
}

static uint32_t ringbuf_bytes(uint32_t kb, uint32_t hz, int ncpu)
{
	uint64_t want, pow2 = 4096;

	if (kb) {
		want = (uint64_t)kb * 1024;
	} else {
		/* Two seconds of samples at 2 KiB from every CPU, at least
		 * 2 MiB: stack copies of new processes are 8 KiB each and
		 * come in bursts (exec storms, start-up). */
		want = (uint64_t)hz * (uint64_t)(ncpu > 0 ? ncpu : 1) * 2048 *
		       2;
		if (want < 2u << 20)
			want = 2u << 20;
		if (want > 64u << 20)
			want = 64u << 20;
	}
	while (pow2 < want)
		pow2 <<= 1;
	return (uint32_t)pow2;
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

static void free_profiler(struct otelprof *p)
{
	/* The kernel maps go with the sampler: no per-entry cleanup. */
	memset(&p->files.hooks, 0, sizeof(p->files.hooks));
	process_table_clear_hooks(&p->procs);
	context_tracker_free(&p->context);
	interp_tracker_free(&p->interp);
	bpf_sampler_close(p->sampler);
	process_unwind_stop_worker(&p->unwinder);
	while (p->parked) {
		struct parked_sample *next = p->parked->next;

		free(p->parked);
		p->parked = next;
	}
	unwind_maps_free(&p->unwinder.maps);
	stack_symbolizer_free(&p->symbolizer);
	pb_free(&p->windows[0]);
	pb_free(&p->windows[1]);
	process_table_free(&p->procs);
	file_cache_free(&p->files);
	kallsyms_free(&p->ksyms);
	if (p->epoll_fd >= 0)
		close(p->epoll_fd);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	pthread_mutex_destroy(&p->state_lock);
	pthread_mutex_destroy(&p->poll_lock);
	free(p);
}

OTELPROF_API int otelprof_start(const struct otelprof_opts *opts,
				struct otelprof **out, char *errbuf,
				size_t errbuf_len)
{
	struct errmsg err = {errbuf, errbuf_len};
	struct bpf_sampler_config cfg;
	struct otelprof_opts o;
	struct epoll_event ev;
	struct otelprof *p;
	uint8_t *mask = NULL;
	int e, ncpu;

	if (errbuf && errbuf_len)
		errbuf[0] = '\0';
	if (!out)
		return errmsg_set(&err, -EINVAL, "out must not be NULL");
	*out = NULL;
	e = parse_opts(opts, &o, &err);
	if (e)
		return e;
	p = calloc(1, sizeof(*p));
	if (!p)
		return errmsg_set(&err, -ENOMEM, "out of memory");
	p->wake_fd = p->epoll_fd = -1;
	pthread_mutex_init(&p->state_lock, NULL);
	pthread_mutex_init(&p->poll_lock, NULL);
	p->frequency_hz =
		o.frequency_hz ? o.frequency_hz : OTELPROF_DEFAULT_FREQUENCY_HZ;
	if (o.host_name && *o.host_name) {
		snprintf(p->host_name, sizeof(p->host_name), "%s", o.host_name);
	} else {
		struct utsname u;

		if (!uname(&u))
			snprintf(p->host_name, sizeof(p->host_name), "%s",
				 u.nodename);
	}
	file_cache_init(&p->files);
	file_cache_set_budget(&p->files, (uint64_t)o.symbol_budget_mb << 20,
			      (uint64_t)o.file_budget_mb << 20);
	process_table_init(&p->procs, &p->files);
	/* Without kallsyms we still profile; kernel frames stay unnamed. */
	if (kallsyms_load(&p->ksyms))
		memset(&p->ksyms, 0, sizeof(p->ksyms));
	stack_symbolizer_init(&p->symbolizer, &p->ksyms, &p->procs);
	if (pb_init(&p->windows[0]) || pb_init(&p->windows[1])) {
		free_profiler(p);
		return errmsg_set(&err, -ENOMEM, "out of memory");
	}
	p->boot_to_unix_ns = boot_to_unix_offset();
	p->window_start_unix_ns = clock_ns(CLOCK_REALTIME);
	raise_fd_limit();

	ncpu = online_cpus(&mask);
	free(mask);
	memset(&cfg, 0, sizeof(cfg));
	cfg.frequency_hz = p->frequency_hz;
	cfg.target_tgid = (uint32_t)o.pid;
	cfg.include_idle = !!(o.flags & OTELPROF_F_INCLUDE_IDLE);
	cfg.max_user_frames =
		o.max_frames ? o.max_frames : OTELPROF_MAX_USER_FRAMES;
	p->max_user_frames = cfg.max_user_frames;
	cfg.btf_path = o.btf_path;
	cfg.ringbuf_bytes = ringbuf_bytes(o.ringbuf_kb, p->frequency_hz, ncpu);
	e = bpf_sampler_open(&cfg, on_event, p, &p->sampler, &err);
	if (e) {
		free_profiler(p);
		return e;
	}
	{
		int files_fd, procs_fd;

		bpf_sampler_unwind_fds(p->sampler, &files_fd, &procs_fd);
		process_unwind_init(&p->unwinder, &p->procs, &p->files,
				    files_fd, procs_fd);
		/* Without it, processes keep their first mappings only. */
		if (unwind_maps_set_big(
			    &p->unwinder.maps,
			    bpf_sampler_big_mappings_fd(p->sampler)))
			p->unwinder.maps.big_refused++;
		/* After the unwinder: its hook resolves the mapped files. */
		context_tracker_init(&p->context, &p->procs,
				     bpf_sampler_ctx_fd(p->sampler));
		interp_tracker_init(&p->interp, &p->procs,
				    bpf_sampler_interp_fd(p->sampler));
		p->symbolizer.interp = &p->interp;
		e = process_unwind_start_worker(&p->unwinder);
		if (e) {
			free_profiler(p);
			return errmsg_set(&err, e, "cannot start thread: %s",
					  strerror(-e));
		}
	}
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (p->wake_fd < 0 || p->epoll_fd < 0) {
		e = -errno;
		free_profiler(p);
		return errmsg_set(&err, e, "eventfd/epoll: %s", strerror(-e));
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.fd = bpf_sampler_fd(p->sampler);
	if (epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev)) {
		e = -errno;
		free_profiler(p);
		return errmsg_set(&err, e, "epoll_ctl: %s", strerror(-e));
	}
	ev.data.fd = p->wake_fd;
	if (epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, p->wake_fd, &ev)) {
		e = -errno;
		free_profiler(p);
		return errmsg_set(&err, e, "epoll_ctl: %s", strerror(-e));
	}
	/* A CPU came online or went offline (optional). */
	ev.data.fd = bpf_sampler_uevent_fd(p->sampler);
	if (ev.data.fd >= 0)
		epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	/* A finished table build: install it and replay held samples now. */
	ev.data.fd = process_unwind_notify_fd(&p->unwinder);
	if (epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev)) {
		e = -errno;
		free_profiler(p);
		return errmsg_set(&err, e, "epoll_ctl: %s", strerror(-e));
	}
	e = pthread_create(&p->thread, NULL, drain_thread, p);
	if (e) {
		free_profiler(p);
		return errmsg_set(&err, -e, "cannot start thread: %s",
				  strerror(e));
	}
	p->thread_started = true;
	*out = p;
	return 0;
}

static void set_err(struct otelprof *p, const char *fmt, const char *arg)
{
	snprintf(p->errbuf, sizeof(p->errbuf), fmt, arg);
}

OTELPROF_API int otelprof_poll(struct otelprof *p, uint8_t **data, size_t *size)
{
	struct profile_builder *full;
	struct otlp_window w;
	uint64_t now, samples;
	bool stopped;
	int e;

	if (!p || !data || !size)
		return -EINVAL;
	*data = NULL;
	*size = 0;
	pthread_mutex_lock(&p->poll_lock);
	p->errbuf[0] = '\0';

	/* Swap windows: the drain thread fills the other one meanwhile. */
	pthread_mutex_lock(&p->state_lock);
	stopped = p->stopped;
	process_table_begin_pass(&p->procs);
	if (!stopped)
		bpf_sampler_consume(p->sampler);
	full = &p->windows[p->cur];
	p->cur ^= 1;
	e = pb_reset(&p->windows[p->cur]);
	stack_symbolizer_reset(&p->symbolizer);
	now = clock_ns(CLOCK_REALTIME);
	sweep_if_due(p);
	p->boot_to_unix_ns = boot_to_unix_offset();
	w.start_unix_ns = p->window_start_unix_ns;
	w.end_unix_ns = now;
	p->window_start_unix_ns = now;
	pthread_mutex_unlock(&p->state_lock);

	if (e) {
		set_err(p, "%s", "out of memory resetting a window");
		goto out;
	}
	samples = full->total_samples;
	/* A recording that saw nothing still ends with one valid profile
	 * (the host's, without samples); other empty polls hand out nothing. */
	if (!samples && (!stopped || p->handed_out))
		goto out;
	w.period_ns = 1000000000ull / p->frequency_hz;
	w.scope_name = "libotelprofiler";
	w.scope_version = otelprof_version();
	w.host_name = p->host_name;
	e = otlp_encode(full, &w, data, size);
	if (e) {
		set_err(p, "encoding failed: %s", strerror(-e));
		goto out;
	}
	pthread_mutex_lock(&p->state_lock);
	p->samples_encoded += samples;
	p->bytes_encoded += *size;
	p->polls++;
	p->handed_out = true;
	pthread_mutex_unlock(&p->state_lock);
	e = samples > INT32_MAX ? INT32_MAX : (int)samples;
out:
	pb_reset(full);
	pthread_mutex_unlock(&p->poll_lock);
	/* A window's tables were just freed: glibc keeps freed heap in its
	 * arenas unless asked, and an always-on agent should not sit on it. */
	malloc_trim(0);
	return e;
}

OTELPROF_API void otelprof_buffer_free(uint8_t *data)
{
	free(data);
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

OTELPROF_API int otelprof_stop(struct otelprof *p)
{
	uint64_t one = 1, deadline;

	if (!p)
		return -EINVAL;
	pthread_mutex_lock(&p->poll_lock);
	if (p->stopped) {
		pthread_mutex_unlock(&p->poll_lock);
		return 0;
	}
	deadline = clock_ns(CLOCK_MONOTONIC) + STOP_BUDGET_NS;
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
		bpf_sampler_detach(p->sampler);
		p->stopped = true;
		snprintf(p->errbuf, sizeof(p->errbuf),
			 "stop: the drain thread is still busy; what it holds "
			 "comes with the next poll");
		pthread_mutex_unlock(&p->poll_lock);
		return 0;
	}
	p->thread_started = false;
	pthread_mutex_lock(&p->state_lock);
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
	while (p->parked && process_unwind_busy(&p->unwinder) &&
	       clock_ns(CLOCK_MONOTONIC) + 20 * 1000 * 1000 < deadline) {
		struct timespec ms20 = {0, 20 * 1000 * 1000};

		pthread_mutex_unlock(&p->state_lock);
		nanosleep(&ms20, NULL);
		pthread_mutex_lock(&p->state_lock);
		process_unwind_finish_builds(&p->unwinder);
	}
	process_unwind_finish_builds(&p->unwinder);
	replay_parked(p, true, true);
	p->procs.slice_end_ns = 0;
	p->stopped = true;
	pthread_mutex_unlock(&p->state_lock);
	pthread_mutex_unlock(&p->poll_lock);
	return 0;
}

OTELPROF_API void otelprof_close(struct otelprof *p)
{
	if (!p)
		return;
	otelprof_stop(p);
	/* A drain thread stop could not wait for: it exits after its pass
	 * (stopping is set); nothing can be freed under it. */
	if (p->thread_started)
		pthread_join(p->thread, NULL);
	p->thread_started = false;
	free_profiler(p);
}

OTELPROF_API int otelprof_stats(struct otelprof *p, struct otelprof_stats *st)
{
	struct otelprof_stats s;
	size_t n;

	if (!p || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	s.sz = sizeof(s);
	pthread_mutex_lock(&p->poll_lock);
	pthread_mutex_lock(&p->state_lock);
	s.samples_received = p->samples_received;
	s.samples_lost = bpf_sampler_counter(p->sampler, OTELPROF_CNT_LOST);
	s.samples_idle = bpf_sampler_counter(p->sampler, OTELPROF_CNT_IDLE);
	s.samples_encoded = p->samples_encoded;
	s.kernel_stack_errors =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_KSTACK_ERR);
	s.user_stack_errors =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_USTACK_ERR);
	s.proc_scan_errors = p->procs.scan_errors;
	s.files_malformed = p->files.malformed;
	s.files_loaded = p->files.loaded;
	s.processes_tracked = process_table_count(&p->procs);
	s.symbol_memory_bytes = p->files.memory + kallsyms_memory(&p->ksyms);
	s.polls = p->polls;
	s.bytes_encoded = p->bytes_encoded;
	s.unwind_complete =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_UNWIND_COMPLETE);
	s.unwind_truncated =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_UNWIND_TRUNCATED);
	s.unwind_err_rule =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_UNWIND_ERR_RULE);
	s.unwind_err_read =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_UNWIND_ERR_READ);
	s.unwind_err_loop =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_UNWIND_ERR_LOOP);
	s.unwind_no_mapping =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_UNWIND_NO_MAPPING);
	s.stack_copies =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_STACK_COPIES);
	s.unwind_files = p->unwinder.maps.files;
	s.unwind_rows = p->unwinder.maps.rows;
	s.unwind_map_bytes = p->unwinder.maps.bytes;
	s.unwind_table_errors =
		p->unwinder.table_errors + p->unwinder.maps.load_errors;
	s.unwind_build_ns = p->unwinder.build_ns;
	s.unwind_pending =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_UNWIND_PENDING);
	s.ctx_samples = bpf_sampler_counter(p->sampler, OTELPROF_CNT_CTX_READ);
	s.ctx_read_errors =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_CTX_ERR);
	s.ctx_tls_resolved = p->context.tls_resolved;
	s.ctx_process_reads = p->context.pctx_read;
	s.ctx_process_errors = p->context.pctx_errors + p->context.map_errors;
	s.ctx_attrs_dropped = p->ctx_attrs_dropped;
	s.pid_reuses = p->procs.pid_reuses;
	s.task_events_lost =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_TASK_EVENTS_LOST);
	s.maps_changed_events =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_MAPS_CHANGED);
	s.maps_notify_held =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_NOTIFY_HELD);
	s.rescans_asked = p->procs.rescans_asked;
	s.rescans_held = p->procs.rescans_held;
	s.ctx_found_by_probe = p->context.pctx_probed;
	s.drain_max_hold_ns = p->drain_max_hold_ns;
	s.unwind_refused_process = p->unwinder.refused_process;
	s.unwind_refused_host = p->unwinder.refused_host;
	s.samples_dropped_at_stop = p->dropped_at_stop;
	s.interp_processes = p->interp.found;
	s.interp_debug_offsets = p->interp.debug_offsets;
	s.interp_unknown_versions = p->interp.unknown_versions;
	s.interp_samples =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_INTERP_SAMPLES);
	s.interp_frame_errors =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_INTERP_ERR);
	s.interp_code_errors = p->interp.read_errors;
	s.jit_frames = p->symbolizer.jit_frames;
	s.jit_bad_entries = p->symbolizer.jit.bad_entries;
	s.jit_files_refused = p->symbolizer.jit.refused;
	s.files_refused = p->procs.files_refused;
	s.files_over_budget = p->files.over_budget;
	s.budget_evictions = p->files.evictions;
	s.budget_used_bytes = mem_budget_used(&p->files.budget);
	s.ctx_attrs_denied = p->context.pctx_denied;
	s.cpus_onlined = bpf_sampler_cpus_onlined(p->sampler);
	{
		uint32_t frames;

		s.kernel_fallbacks = bpf_sampler_fallbacks(p->sampler, &frames);
		s.max_frames = frames;
	}
	s.walk_programs =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_WALK_CHAINED);
	pthread_mutex_unlock(&p->state_lock);
	pthread_mutex_unlock(&p->poll_lock);
	n = st->sz < sizeof(s) ? st->sz : sizeof(s);
	memcpy((char *)st + sizeof(size_t), (char *)&s + sizeof(size_t),
	       n - sizeof(size_t));
	return 0;
}

OTELPROF_API const char *otelprof_errmsg(struct otelprof *p)
{
	return p ? p->errbuf : "no profiler handle";
}

OTELPROF_API const char *otelprof_version(void)
{
#define STR2(x) #x
#define STR(x)	STR2(x)
	return STR(OTELPROF_VERSION_MAJOR) "." STR(
		OTELPROF_VERSION_MINOR) "." STR(OTELPROF_VERSION_PATCH);
}
