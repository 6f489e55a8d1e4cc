// SPDX-License-Identifier: Apache-2.0
#include "sample/bpf_sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "process/proc_file.h"
#include "profiler.skel.h"

struct bpf_sampler {
	struct profiler_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link **links; /* per CPU perf links */
	int *pfds;
	int ncpus;
	struct bpf_link *exec_link, *exit_link, *fork_link;
	bpf_sampler_event_fn fn;
	void *ctx;
	int ncpu_possible;
	uint64_t period_ns;
	bool detached;	       /* stopped: CPUs coming online stay unsampled */
	bool paused;	       /* perf events disabled (probabilistic off) */
	uint64_t ioctl_errors; /* enable/disable/period refused by a CPU */
	int uevent_fd;	  /* kernel uevents (CPU online/offline), -1 if none */
	uint64_t onlined; /* CPUs attached after start */
	uint32_t fallbacks;	  /* enum otelprof_kernel_fallback */
	uint32_t max_user_frames; /* what the loaded walk can take */
	const char *btf_path;	  /* kernel BTF given by the user, or NULL */
	/* Every program loaded so far (the sampler's, then each runtime's
	 * as it comes): name, verified instructions, load time. */
	struct bpf_prog_load_stat loads[BPF_SAMPLER_MAX_LOADS];
	uint32_t nloads;
	pthread_mutex_t loads_lock; /* runtimes load on another thread */
};

/*
 * The verifier log of a failed load, for the human message: libbpf writes
 * it into this object's own buffer (kernel_log_buf), so a library loaded
 * into someone else's process leaves libbpf's process-wide print callback
 * alone. Its size is libbpf's own: before Linux 6.4 a log that does not fit
 * fails the load with -ENOSPC before the verdict, which comes last. Only
 * touched on a failed load (libbpf then retries with the log on).
 */
#define VERIFIER_LOG_BYTES (16u << 20)

/* The verifier's verdict: the lines just before "processed N insns". */
const char *bpf_sampler_verdict(char *log)
{
	char *end = strstr(log, "\nprocessed ");
	char *start;
	int lines = 0;

	if (!end)
		return log;
	*end = '\0';
	for (start = end; start > log; start--) {
		if (start[-1] == '\n' && ++lines == 2)
			break;
	}
	for (char *c = start; *c; c++)
		if (*c == '\n' || *c == '\t')
			*c = ' ';
	return start;
}

/*
 * Each program's verifier statistics ("processed N insns" of log level 4,
 * BPF_LOG_STATS: a few lines, on every kernel from 5.10), kept for
 * otelprof_stats' readers and the kernel matrix, and printed on stderr
 * with OTELPROF_DEBUG_BPF_LOG=stats. Per-program buffers: the object's one
 * buffer would keep only the last program's. 1 KiB is enough for the
 * stats lines; a load that would overflow it is retried by libbpf with
 * the object's big log, so the verdict of a failure is never lost.
 */
#define STATS_LOG_BYTES 4096u

char *bpf_sampler_stats_logs_set(struct bpf_object *obj)
{
	struct bpf_program *p;
	size_t n = 0, i = 0;
	char *bufs;

	bpf_object__for_each_program(p, obj) n++;
	bufs = calloc(n ? n : 1, STATS_LOG_BYTES);
	if (!bufs)
		return NULL;
	bpf_object__for_each_program(p, obj)
	{
		if (!bpf_program__autoload(p)) {
			i++;
			continue;
		}
		bpf_program__set_log_buf(p, bufs + i++ * STATS_LOG_BYTES,
					 STATS_LOG_BYTES);
		bpf_program__set_log_level(p, 4); /* BPF_LOG_STATS */
	}
	return bufs;
}

/* Keep (and on request print) each loaded program's figures. */
void bpf_sampler_stats_logs_take(struct bpf_sampler *s, struct bpf_object *obj,
				 char *bufs, uint64_t load_ns)
{
	const char *dbg = getenv("OTELPROF_DEBUG_BPF_LOG");
	struct bpf_program *p;
	size_t i = 0;

	pthread_mutex_lock(&s->loads_lock);
	bpf_object__for_each_program(p, obj)
	{
		char *b = bufs ? bufs + i * STATS_LOG_BYTES : NULL;
		const char *line = NULL;
		struct bpf_prog_load_stat *st;

		i++;
		if (!bpf_program__autoload(p) ||
		    s->nloads >= BPF_SAMPLER_MAX_LOADS)
			continue;
		st = &s->loads[s->nloads++];
		memset(st, 0, sizeof(*st));
		snprintf(st->name, sizeof(st->name), "%s",
			 bpf_program__name(p));
		st->object_load_ns = load_ns;
		if (b) {
			b[STATS_LOG_BYTES - 1] = '\0';
			line = strstr(b, "processed ");
			if (line)
				st->verified_insns =
					(uint32_t)strtoul(line + 10, NULL, 10);
		}
		if (dbg && !strcmp(dbg, "stats"))
			fprintf(stderr,
				"bpf: %s: %.*s (object loaded in %.1f ms)\n",
				st->name, line ? (int)strcspn(line, "\n") : 0,
				line ? line : "", (double)load_ns / 1e6);
	}
	pthread_mutex_unlock(&s->loads_lock);
	free(bufs);
}

uint32_t bpf_sampler_load_stats(struct bpf_sampler *s,
				struct bpf_prog_load_stat *out, uint32_t max)
{
	uint32_t n;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->loads_lock);
	n = s->nloads < max ? s->nloads : max;
	memcpy(out, s->loads, n * sizeof(*out));
	pthread_mutex_unlock(&s->loads_lock);
	return n;
}

uint64_t bpf_sampler_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * What the running kernel has, from libbpf's probes (each loads a tiny
 * program calling the helper). OTELPROF_KERNEL_FALLBACK forces the
 * fallbacks on a kernel that does not need them, so that their cost can
 * be measured (make bench): "all", or a comma list of "bpf_loop",
 * "task_pt_regs", "prealloc".
 */
static bool forced(const char *what)
{
	const char *env = getenv("OTELPROF_KERNEL_FALLBACK");
	size_t n = strlen(what);

	if (!env)
		return false;
	if (!strcmp(env, "all"))
		return true;
	for (const char *p = env; (p = strstr(p, what)); p += n)
		if ((p == env || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
			return true;
	return false;
}

static bool probe_helper(enum bpf_func_id id)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, id, NULL) == 1;
}

/*
 * Whether a perf_event program may use a hash map allocated on use
 * (BPF_F_NO_PREALLOC): 6.1 and later. libbpf has no probe for this one,
 * so load the smallest such program: one lookup in such a map.
 */
static bool probe_no_prealloc_in_perf_event(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, mopts, .map_flags = BPF_F_NO_PREALLOC);
	struct bpf_insn insns[8];
	int map_fd, prog_fd;

	map_fd = bpf_map_create(BPF_MAP_TYPE_HASH, NULL, 4, 8, 1, &mopts);
	if (map_fd < 0)
		return false;
	memset(insns, 0, sizeof(insns));
	/* *(u32 *)(r10 - 4) = 0; r2 = r10 - 4 */
	insns[0] = (struct bpf_insn){BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0,
				     -4, 0};
	insns[1] = (struct bpf_insn){BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2,
				     BPF_REG_10, 0, 0};
	insns[2] = (struct bpf_insn){BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0,
				     0, -4};
	/* r1 = map (two instructions); call bpf_map_lookup_elem */
	insns[3] = (struct bpf_insn){BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1,
				     BPF_PSEUDO_MAP_FD, 0, map_fd};
	insns[5] = (struct bpf_insn){BPF_JMP | BPF_CALL, 0, 0, 0,
				     BPF_FUNC_map_lookup_elem};
	/* return 0 */
	insns[6] = (struct bpf_insn){BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0,
				     0, 0};
	insns[7] = (struct bpf_insn){BPF_JMP | BPF_EXIT, 0, 0, 0, 0};
	prog_fd = bpf_prog_load(BPF_PROG_TYPE_PERF_EVENT, NULL, "GPL", insns, 8,
				NULL);
	close(map_fd);
	if (prog_fd < 0)
		return false;
	close(prog_fd);
	return true;
}

/* Hash maps allocated up front hold at most this much each. */
#define PREALLOC_MAP_BYTES (8u << 20)

/* Kernels before 6.1 want every hash map of a perf_event program
 * preallocated: allocate them up front, each capped in size. */
static void preallocate_maps(struct bpf_object *obj)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, obj)
	{
		uint32_t flags = bpf_map__map_flags(m), max, cap;

		if (!(flags & BPF_F_NO_PREALLOC) ||
		    bpf_map__type(m) != BPF_MAP_TYPE_HASH)
			continue;
		bpf_map__set_map_flags(m, flags & ~BPF_F_NO_PREALLOC);
		max = bpf_map__max_entries(m);
		cap = PREALLOC_MAP_BYTES /
		      (bpf_map__value_size(m) + bpf_map__key_size(m) + 64);
		if (max > cap)
			bpf_map__set_max_entries(m, cap);
	}
}

/* The kernel does not change under a process: probe once. */
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static uint32_t probed;

static void probe_kernel(void)
{
	if (!probe_no_prealloc_in_perf_event())
		probed |= OTELPROF_FALLBACK_PREALLOC_MAPS;
	if (!probe_helper(BPF_FUNC_loop))
		probed |= OTELPROF_FALLBACK_NO_BPF_LOOP;
	if (!probe_helper(BPF_FUNC_task_pt_regs))
		probed |= OTELPROF_FALLBACK_NO_TASK_PT_REGS;
}

static uint32_t probe_fallbacks(void)
{
	uint32_t f;

	pthread_once(&probe_once, probe_kernel);
	f = probed;
	if (forced("prealloc"))
		f |= OTELPROF_FALLBACK_PREALLOC_MAPS;
	if (forced("bpf_loop"))
		f |= OTELPROF_FALLBACK_NO_BPF_LOOP;
	if (forced("task_pt_regs"))
		f |= OTELPROF_FALLBACK_NO_TASK_PT_REGS;
	return f;
}

/* The BTF file given for the kernel: a regular, readable file. */
static int check_btf_file(const char *path, struct errmsg *err)
{
	struct stat sb;
	int e;

	if (stat(path, &sb))
		e = -errno;
	else if (!S_ISREG(sb.st_mode))
		e = -EINVAL;
	else
		e = access(path, R_OK) ? -errno : 0;
	if (e)
		return errmsg_set(err, e,
				  "btf_path %s: not a readable file (%s)", path,
				  strerror(-e));
	return 0;
}

static int on_ring_event(void *ctx, void *data, size_t size)
{
	struct bpf_sampler *s = ctx;

	return s->fn(s->ctx, data, size);
}

int online_cpus(uint8_t **mask)
{
	char *text, *p;
	long n = proc_read_file("/sys/devices/system/cpu/online", &text, 4096);
	int max = 0;
	uint8_t *m;

	if (n < 0)
		return (int)n;
	m = calloc(4096, 1);
	if (!m) {
		free(text);
		return -ENOMEM;
	}
	/* Format: "0-3,5,7-8". */
	for (p = text; *p && *p != '\n';) {
		char *end;
		long a = strtol(p, &end, 10), b;

		if (end == p || a < 0 || a >= 4096)
			goto bad;
		b = a;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			if (end == p + 1 || b < a || b >= 4096)
				goto bad;
			p = end;
		}
		for (long c = a; c <= b; c++)
			m[c] = 1;
		if (b + 1 > max)
			max = (int)b + 1;
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			goto bad;
	}
	free(text);
	*mask = m;
	return max;
bad:
	free(text);
	free(m);
	return -EINVAL;
}

static int perf_open(uint64_t period_ns, int cpu)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	/* cpu-clock counts nanoseconds: a fixed period gives exactly the
	 * requested rate, where freq mode would adapt it. */
	attr.sample_period = period_ns;
	attr.disabled = 0;
	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1,
			    PERF_FLAG_FD_CLOEXEC);
}

/* Whether the process holds CAP_BPF (or CAP_SYS_ADMIN) in its effective
 * set: EACCES/EPERM then come from the verifier, not from missing rights. */
static bool have_bpf_caps(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return false;
	/* CAP_SYS_ADMIN = 21 (word 0), CAP_BPF = 39 (word 1, bit 7). */
	return (d[0].effective & (1u << 21)) || (d[1].effective & (1u << 7));
}

static int explain_perm(struct errmsg *err, int e, const char *what)
{
	return errmsg_set(err, e,
			  "%s: %s; the profiler needs CAP_BPF, CAP_PERFMON "
			  "and CAP_SYS_ADMIN (run as root)",
			  what, strerror(-e));
}

static int attach_cpu(struct bpf_sampler *s, int c, struct errmsg *err)
{
	int e;

	s->pfds[c] = perf_open(s->period_ns, c);
	if (s->pfds[c] < 0) {
		e = -errno;
		if (e == -EACCES || e == -EPERM)
			return explain_perm(err, e, "perf_event_open failed");
		return errmsg_set(err, e,
				  "perf_event_open(cpu-clock, cpu %d) failed: "
				  "%s",
				  c, strerror(-e));
	}
	s->links[c] = bpf_program__attach_perf_event(
		(s->fallbacks & OTELPROF_FALLBACK_NO_BPF_LOOP)
			? s->skel->progs.on_cpu_sample_chained
			: s->skel->progs.on_cpu_sample,
		s->pfds[c]);
	if (!s->links[c]) {
		e = -errno;
		close(s->pfds[c]);
		s->pfds[c] = -1;
		return errmsg_set(err, e,
				  "cannot attach BPF program to perf event on "
				  "cpu %d: %s",
				  c, strerror(-e));
	}
	/* Attaching enables the event: a CPU coming online in an interval
	 * probabilistic profiling keeps off must not sample. */
	if (s->paused && ioctl(s->pfds[c], PERF_EVENT_IOC_DISABLE, 0))
		s->ioctl_errors++;
	return 0;
}

static void detach_cpu(struct bpf_sampler *s, int c)
{
	if (s->links[c]) {
		bpf_link__destroy(s->links[c]);
		s->links[c] = NULL;
	}
	if (s->pfds[c] >= 0) {
		close(s->pfds[c]);
		s->pfds[c] = -1;
	}
}

/* Kernel uevents: a CPU going offline and back between two looks at the
 * online mask leaves a perf event that no longer fires; its "online"
 * uevent says so at once. Optional (another network namespace sees none):
 * the periodic look at the mask still catches everything slower. */
static int open_uevents(void)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = 1};
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			NETLINK_KOBJECT_UEVENT);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

int bpf_sampler_sync_cpus(struct bpf_sampler *s, const uint8_t *reopen)
{
	uint8_t *mask = NULL;
	int n, changed = 0;
	struct errmsg quiet = {NULL, 0};

	if (!s || s->detached)
		return 0;
	n = online_cpus(&mask);
	if (n < 0)
		return n;
	for (int c = 0; c < s->ncpus; c++) {
		bool on = c < n && mask[c];

		if (on && s->pfds[c] >= 0 && reopen && reopen[c])
			detach_cpu(s, c);
		if (on && s->pfds[c] < 0) {
			if (!attach_cpu(s, c, &quiet)) {
				s->onlined++;
				changed++;
			}
		} else if (!on && s->pfds[c] >= 0) {
			detach_cpu(s, c);
			changed++;
		}
	}
	free(mask);
	return changed;
}

int bpf_sampler_uevent_fd(struct bpf_sampler *s)
{
	return s ? s->uevent_fd : -1;
}

int bpf_sampler_handle_uevents(struct bpf_sampler *s)
{
	uint8_t *reopen;
	char buf[8192];
	bool cpu_event = false;
	ssize_t r;
	int changed;

	if (!s || s->uevent_fd < 0)
		return 0;
	reopen = calloc((size_t)s->ncpus, 1);
	if (!reopen)
		return -ENOMEM;
	/* "ACTION@DEVPATH\0KEY=VALUE\0...": only the header is needed. */
	while ((r = recv(s->uevent_fd, buf, sizeof(buf) - 1, 0)) > 0) {
		const char *at;
		int cpu;

		buf[r] = '\0';
		at = strchr(buf, '@');
		if (!at || strncmp(at + 1, "/devices/system/cpu/cpu", 23))
			continue;
		cpu_event = true;
		if (!strncmp(buf, "online@", 7) &&
		    sscanf(at + 24, "%d", &cpu) == 1 && cpu >= 0 &&
		    cpu < s->ncpus)
			reopen[cpu] = 1;
	}
	changed = cpu_event ? bpf_sampler_sync_cpus(s, reopen) : 0;
	free(reopen);
	return changed;
}

uint64_t bpf_sampler_cpus_onlined(struct bpf_sampler *s)
{
	return s ? s->onlined : 0;
}

static int set_slot(struct bpf_sampler *s, uint32_t slot,
		    struct bpf_program *prog, struct errmsg *err)
{
	int fd = bpf_program__fd(prog), e;

	if (!bpf_map_update_elem(bpf_map__fd(s->skel->maps.walk_progs), &slot,
				 &fd, BPF_ANY))
		return 0;
	e = -errno;
	return errmsg_set(err, e, "cannot put BPF program %s in walk_progs: %s",
			  bpf_program__name(prog), strerror(-e));
}

/* The sampler's own slots of walk_progs (enum otelprof_prog_slot). */
static int fill_walk_progs(struct bpf_sampler *s, struct errmsg *err)
{
	struct profiler_bpf *k = s->skel;
	int e;

	if (s->fallbacks & OTELPROF_FALLBACK_NO_BPF_LOOP) {
		e = set_slot(s, OTELPROF_PROG_WALK, k->progs.on_cpu_sample_walk,
			     err);
		if (!e)
			e = set_slot(s, OTELPROF_PROG_RESUME,
				     k->progs.on_cpu_sample_walk, err);
	} else {
		e = set_slot(s, OTELPROF_PROG_RESUME, k->progs.on_cpu_sample,
			     err);
	}
	if (!e)
		e = set_slot(s, OTELPROF_PROG_FINISH,
			     k->progs.on_cpu_sample_finish, err);
	return e;
}

/* Programs named *_bounded are for kernels without bpf_loop; the others
 * for kernels with it. */
static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

int bpf_sampler_load_runtime(struct bpf_sampler *s, uint32_t runtime,
			     const void *elf, size_t size,
			     struct bpf_object **out, struct errmsg *err)
{
	bool bounded = s->fallbacks & OTELPROF_FALLBACK_NO_BPF_LOOP;
	struct bpf_program *prog, *walk = NULL;
	struct bpf_object *obj;
	struct bpf_map *m;
	char *log = NULL, *stats = NULL;
	uint64_t t0;
	int e;

	*out = NULL;
	if (runtime == OTELPROF_RT_NONE || runtime >= OTELPROF_RT_MAX)
		return errmsg_set(err, -EINVAL, "runtime %u: no such slot",
				  runtime);
	log = malloc(VERIFIER_LOG_BYTES);
	if (!log)
		return errmsg_set(err, -ENOMEM, "out of memory");
	log[0] = '\0';
	{
		LIBBPF_OPTS(bpf_object_open_opts, oo,
			    .btf_custom_path = s->btf_path,
			    .kernel_log_buf = log,
			    .kernel_log_size = VERIFIER_LOG_BYTES);

		obj = bpf_object__open_mem(elf, size, &oo);
	}
	if (!obj) {
		e = -errno;
		errmsg_set(err, e, "cannot open runtime %u's BPF object: %s",
			   runtime, strerror(-e));
		goto out;
	}
	/* The maps the sampler shares (sampler_shared.bpf.h): the sampler's
	 * own, by name. The runtime's own maps are created with it. */
	bpf_object__for_each_map(m, obj)
	{
		struct bpf_map *mine;

		if (bpf_map__is_internal(m))
			continue;
		mine = bpf_object__find_map_by_name(s->skel->obj,
						    bpf_map__name(m));
		if (mine && bpf_map__reuse_fd(m, bpf_map__fd(mine))) {
			e = -errno;
			errmsg_set(err, e,
				   "runtime %u: cannot share map %s: %s",
				   runtime, bpf_map__name(m), strerror(-e));
			goto out;
		}
	}
	if (s->fallbacks & OTELPROF_FALLBACK_PREALLOC_MAPS)
		preallocate_maps(obj);
	bpf_object__for_each_program(prog, obj)
	{
		bool load = ends_with(bpf_program__name(prog), "_bounded") ==
			    bounded;

		bpf_program__set_autoload(prog, load);
		if (load && !walk)
			walk = prog;
	}
	if (!walk) {
		e = errmsg_set(err, -ENOENT,
			       "runtime %u's BPF object has no walk program",
			       runtime);
		goto out;
	}
	stats = bpf_sampler_stats_logs_set(obj);
	t0 = bpf_sampler_now_ns();
	e = bpf_object__load(obj);
	if (e) {
		free(stats);
		errmsg_set(err, e,
			   "loading runtime %u's BPF program: %s: verifier: %s",
			   runtime, strerror(-e), bpf_sampler_verdict(log));
		goto out;
	}
	bpf_sampler_stats_logs_take(s, obj, stats, bpf_sampler_now_ns() - t0);
	e = set_slot(s, OTELPROF_PROG_RUNTIME + runtime, walk, err);
	if (e)
		goto out;
	*out = obj;
	obj = NULL;
out:
	bpf_object__close(obj);
	free(log);
	return e;
}

int bpf_sampler_share_maps(struct bpf_sampler *s, struct bpf_object *obj,
			   const char *const *names, struct errmsg *err)
{
	for (; *names; names++) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, *names),
			       *mine = bpf_object__find_map_by_name(
				       s->skel->obj, *names);
		int e;

		if (!m || !mine)
			return errmsg_set(err, -ENOENT, "no BPF map %s",
					  *names);
		if (bpf_map__reuse_fd(m, bpf_map__fd(mine))) {
			e = -errno;
			return errmsg_set(err, e, "cannot share map %s: %s",
					  *names, strerror(-e));
		}
	}
	if (s->fallbacks & OTELPROF_FALLBACK_PREALLOC_MAPS)
		preallocate_maps(obj);
	return 0;
}

const char *bpf_sampler_btf_path(struct bpf_sampler *s)
{
	return s->btf_path;
}

int bpf_sampler_runtime_procs_fd(struct bpf_sampler *s)
{
	return bpf_map__fd(s->skel->maps.runtime_procs);
}

int bpf_sampler_open(const struct bpf_sampler_config *cfg,
		     bpf_sampler_event_fn fn, void *ctx,
		     struct bpf_sampler **out, struct errmsg *err)
{
	struct bpf_sampler *s;
	const char *btf_path = NULL;
	const char *dbg_log = getenv("OTELPROF_DEBUG_BPF_LOG");
	char *log = NULL;
	uint8_t *mask = NULL;
	int e, ncpu;

	*out = NULL;
	if (cfg->btf_path && *cfg->btf_path) {
		e = check_btf_file(cfg->btf_path, err);
		if (e)
			return e;
		btf_path = cfg->btf_path;
	} else if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		return errmsg_set(
			err, -ENOTSUP,
			"kernel has no BTF (/sys/kernel/btf/vmlinux missing): "
			"give a BTF file of this kernel (e.g. from BTFHub) "
			"with "
			"the btf_path option (otelprof record --btf FILE, "
			"receiver key btf_path), or use a kernel built with "
			"CONFIG_DEBUG_INFO_BTF=y");
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->uevent_fd = -1;
	s->fn = fn;
	s->ctx = ctx;
	s->btf_path = btf_path;
	pthread_mutex_init(&s->loads_lock, NULL);

	log = malloc(VERIFIER_LOG_BYTES);
	if (!log) {
		free(s);
		return -ENOMEM;
	}
	log[0] = '\0';
	{
		LIBBPF_OPTS(bpf_object_open_opts, oo,
			    .btf_custom_path = btf_path, .kernel_log_buf = log,
			    .kernel_log_size = VERIFIER_LOG_BYTES);

		s->skel = profiler_bpf__open_opts(&oo);
	}
	if (!s->skel) {
		e = -errno;
		if (btf_path)
			errmsg_set(err, e,
				   "cannot open BPF object with btf_path %s "
				   "(not the BTF of this kernel?): %s",
				   btf_path, strerror(-e));
		else
			errmsg_set(err, e, "cannot open BPF object: %s",
				   strerror(-e));
		goto fail;
	}
	s->skel->rodata->target_tgid = cfg->target_tgid;
	s->skel->rodata->include_idle = cfg->include_idle ? 1 : 0;
	/* One object for every kernel: pick the programs and paths this one
	 * supports (docs/kernels.md). */
	s->fallbacks = probe_fallbacks();
	/* Helpers taking BTF pointers need the kernel's own BTF. */
	if (btf_path)
		s->fallbacks |= OTELPROF_FALLBACK_NO_TASK_PT_REGS;
	s->max_user_frames = cfg->max_user_frames;
	if (s->fallbacks & OTELPROF_FALLBACK_NO_BPF_LOOP) {
		bpf_program__set_autoload(s->skel->progs.on_cpu_sample, false);
		if (s->max_user_frames >
		    OTELPROF_WALK_CHUNK * OTELPROF_WALK_TAIL_CALLS)
			s->max_user_frames =
				OTELPROF_WALK_CHUNK * OTELPROF_WALK_TAIL_CALLS;
	} else {
		bpf_program__set_autoload(s->skel->progs.on_cpu_sample_chained,
					  false);
		bpf_program__set_autoload(s->skel->progs.on_cpu_sample_walk,
					  false);
	}
	if (s->fallbacks & OTELPROF_FALLBACK_PREALLOC_MAPS)
		preallocate_maps(s->skel->obj);
	s->skel->rodata->have_task_pt_regs =
		!(s->fallbacks & OTELPROF_FALLBACK_NO_TASK_PT_REGS);
	s->skel->rodata->max_user_frames = s->max_user_frames;
	bpf_map__set_max_entries(s->skel->maps.events, cfg->ringbuf_bytes);
	{
		char *stats = bpf_sampler_stats_logs_set(s->skel->obj);
		uint64_t t0 = bpf_sampler_now_ns();

		e = profiler_bpf__load(s->skel);
		if (!e)
			bpf_sampler_stats_logs_take(s, s->skel->obj, stats,
						    bpf_sampler_now_ns() - t0);
		else
			free(stats);
	}
	if (e) {
		if (dbg_log)
			fputs(log, stderr);
		if ((e == -EPERM || e == -EACCES) && !have_bpf_caps())
			explain_perm(err, e, "loading BPF programs failed");
		else
			errmsg_set(err, e,
				   "loading BPF programs failed%s%s: %s: "
				   "verifier: %s",
				   btf_path ? " with btf_path " : "",
				   btf_path ? btf_path : "", strerror(-e),
				   bpf_sampler_verdict(log));
		goto fail;
	}
	free(log);
	log = NULL;
	e = fill_walk_progs(s, err);
	if (e)
		goto fail;

	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events),
				 on_ring_event, s, NULL);
	if (!s->rb) {
		e = -errno;
		errmsg_set(err, e, "cannot map BPF ring buffer: %s",
			   strerror(-e));
		goto fail;
	}

	s->exec_link = bpf_program__attach(s->skel->progs.on_exec);
	if (!s->exec_link) {
		e = -errno;
		s->exec_link = NULL;
		errmsg_set(
			err, e,
			"cannot attach raw tracepoint sched_process_exec: %s",
			strerror(-e));
		goto fail;
	}
	s->fork_link = bpf_program__attach(s->skel->progs.on_fork);
	if (!s->fork_link) {
		e = -errno;
		s->fork_link = NULL;
		errmsg_set(
			err, e,
			"cannot attach raw tracepoint sched_process_fork: %s",
			strerror(-e));
		goto fail;
	}
	s->exit_link = bpf_program__attach(s->skel->progs.on_exit);
	if (!s->exit_link) {
		e = -errno;
		s->exit_link = NULL;
		errmsg_set(
			err, e,
			"cannot attach raw tracepoint sched_process_exit: %s",
			strerror(-e));
		goto fail;
	}

	ncpu = online_cpus(&mask);
	if (ncpu <= 0) {
		e = ncpu ? ncpu : -ENODEV;
		errmsg_set(err, e, "cannot read online CPUs: %s", strerror(-e));
		goto fail;
	}
	/* Every possible CPU has a slot: one offline now may come online
	 * later (bpf_sampler_sync_cpus). */
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus < ncpu)
		s->ncpus = ncpu;
	s->links = calloc((size_t)s->ncpus, sizeof(*s->links));
	s->pfds = calloc((size_t)s->ncpus, sizeof(*s->pfds));
	if (!s->links || !s->pfds) {
		e = -ENOMEM;
		goto fail;
	}
	for (int c = 0; c < s->ncpus; c++)
		s->pfds[c] = -1;
	s->period_ns = 1000000000ull / cfg->frequency_hz;
	s->paused = cfg->start_paused;
	for (int c = 0; c < ncpu; c++) {
		if (!mask[c])
			continue;
		e = attach_cpu(s, c, err);
		if (e)
			goto fail;
	}
	s->uevent_fd = open_uevents();
	free(mask);
	*out = s;
	return 0;
fail:
	free(mask);
	free(log);
	bpf_sampler_close(s);
	return e;
}

int bpf_sampler_fd(struct bpf_sampler *s)
{
	return ring_buffer__epoll_fd(s->rb);
}

int bpf_sampler_consume(struct bpf_sampler *s)
{
	return ring_buffer__consume(s->rb);
}

void bpf_sampler_detach(struct bpf_sampler *s)
{
	if (!s)
		return;
	s->detached = true;
	for (int c = 0; c < s->ncpus && s->links && s->pfds; c++)
		detach_cpu(s, c);
	bpf_link__destroy(s->exec_link);
	bpf_link__destroy(s->exit_link);
	bpf_link__destroy(s->fork_link);
	s->exec_link = s->exit_link = s->fork_link = NULL;
}

int bpf_sampler_set_period(struct bpf_sampler *s, uint64_t period_ns)
{
	uint64_t old;
	int e = 0;

	if (!s || s->detached)
		return -EINVAL;
	old = s->period_ns;
	s->period_ns = period_ns;
	for (int c = 0; c < s->ncpus; c++) {
		if (s->pfds[c] < 0 ||
		    !ioctl(s->pfds[c], PERF_EVENT_IOC_PERIOD, &period_ns))
			continue;
		e = -errno;
		s->ioctl_errors++;
		/* Every CPU at one rate, or the profile's period is wrong
		 * for some samples: back to the old one. */
		s->period_ns = old;
		for (int k = 0; k < c; k++)
			if (s->pfds[k] >= 0 &&
			    ioctl(s->pfds[k], PERF_EVENT_IOC_PERIOD, &old))
				s->ioctl_errors++;
		break;
	}
	return e;
}

void bpf_sampler_set_enabled(struct bpf_sampler *s, bool on)
{
	if (!s || s->detached)
		return;
	s->paused = !on;
	for (int c = 0; c < s->ncpus; c++)
		if (s->pfds[c] >= 0 &&
		    ioctl(s->pfds[c],
			  on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE,
			  0))
			s->ioctl_errors++;
}

uint64_t bpf_sampler_ioctl_errors(struct bpf_sampler *s)
{
	return s ? s->ioctl_errors : 0;
}

uint64_t bpf_sampler_counter(struct bpf_sampler *s, unsigned which)
{
	int n = libbpf_num_possible_cpus();
	uint64_t *vals, sum = 0;
	uint32_t key = which;

	if (!s || !s->skel || n <= 0)
		return 0;
	vals = calloc((size_t)n, sizeof(*vals));
	if (!vals)
		return 0;
	if (!bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.counters), &key,
				 vals))
		for (int i = 0; i < n; i++)
			sum += vals[i];
	free(vals);
	return sum;
}

uint32_t bpf_sampler_fallbacks(struct bpf_sampler *s, uint32_t *max_user_frames)
{
	*max_user_frames = s ? s->max_user_frames : 0;
	return s ? s->fallbacks : 0;
}

void bpf_sampler_unwind_fds(struct bpf_sampler *s, int *files_fd, int *procs_fd)
{
	*files_fd = bpf_map__fd(s->skel->maps.unwind_files);
	*procs_fd = bpf_map__fd(s->skel->maps.unwind_procs);
}

int bpf_sampler_big_mappings_fd(struct bpf_sampler *s)
{
	return bpf_map__fd(s->skel->maps.big_mappings);
}

int bpf_sampler_ctx_fd(struct bpf_sampler *s)
{
	return bpf_map__fd(s->skel->maps.ctx_procs);
}

void bpf_sampler_close(struct bpf_sampler *s)
{
	if (!s)
		return;
	bpf_sampler_detach(s);
	if (s->uevent_fd >= 0)
		close(s->uevent_fd);
	ring_buffer__free(s->rb);
	profiler_bpf__destroy(s->skel);
	pthread_mutex_destroy(&s->loads_lock);
	free(s->links);
	free(s->pfds);
	free(s);
}
