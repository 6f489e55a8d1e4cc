// SPDX-License-Identifier: Apache-2.0
/*
 * Multithreaded workload that publishes thread context (OTEP 4947) or
 * Elastic v1 correlation data while it burns CPU, plus the process context
 * (OTEP 4719), and prints as JSON lines (stdout) what a profiler should
 * have seen: the tid of every thread and each interval of each thread
 * (CLOCK_REALTIME unix ns, trace and span id hex, attributes by name).
 *
 * Builds (context.mk): ctx_dlopen dlopen()s the publisher named by --lib
 * or --elastic; ctx_linked_tlsdesc and ctx_linked_ie are linked against
 * one at start-up; ctx_exe_le defines otel_thread_ctx_v1 itself.
 *
 * usage: ctx_* [--lib PATH] [--dlopen-delay-ms N] [--elastic PATH]
 *              [--threads N] [--seconds S]
 *              [--proc-ctx memfd|anon|anon_shmem|none]
 *              [--proc-ctx-delay-ms N] [--proc-ctx-update-ms N]
 *              [--proc-ctx-on-signal] [--dlopen-on-signal]
 *              [--proc-ctx-no-prctl] [--proc-ctx-spoof]
 * --proc-ctx-no-prctl: publish without the prctl naming call (a memfd
 * publication is then known by its memfd name alone).
 * --proc-ctx-on-signal: publish the process context on the first SIGUSR1,
 * update it (service.version 2.0.0) on the second; --dlopen-on-signal:
 * dlopen the publisher on SIGUSR2 (a test sends them once a profiler runs).
 * ctx_dlopen without --lib/--elastic runs only the thread without context
 * (process context alone).
 * Runs until --seconds (default 60) or SIGTERM/SIGINT, then prints the last
 * intervals and {"event":"exit"}. Context threads cycle through five
 * patterns of 200-299 ms each: two with attributes (one with an entry
 * whose key index is outside the key map), none, one without attributes,
 * and a 640-byte record. Even threads swap the TLS pointer (NULL when
 * cleared), odd threads keep one record and toggle its valid flag. One more
 * thread ("noctx") is as busy and never has context.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "otel_ctx.h"

#define NOINLINE	__attribute__((noinline))
#define MAX_CTX_THREADS 16
#define NPATTERNS	5

enum strategy { STRAT_PTR, STRAT_VALID, STRAT_ELASTIC };

static const char *const strategy_names[] = {"ptr", "valid", "elastic"};

/* The key map published in threadlocal.attribute_key_map. */
static const char *const key_map[] = {"http.route", "http.request.method",
				      "tenant.id"};
#define NKEYS	      3
#define KEY_ROUTE     0
#define KEY_METHOD    1
#define KEY_TENANT    2
#define KEY_OUT_RANGE NKEYS /* first index outside the map: dropped */

struct ops {
	const char *(*variant)(void);
	void **(*slot)(void);
	void (*ptr_publish)(struct otel_thread_ctx_record *,
			    const struct otelctx_value *);
	void (*ptr_clear)(void);
	void (*valid_publish)(struct otel_thread_ctx_record *,
			      const struct otelctx_value *);
	void (*valid_clear)(struct otel_thread_ctx_record *);
	void **(*e_slot)(void);
	int (*e_publish_process)(const char *, const char *, const char *);
	void (*e_attach)(struct elastic_tls_record *);
	void (*e_set)(struct elastic_tls_record *, const uint8_t *,
		      const uint8_t *, const uint8_t *, uint8_t);
	void (*e_clear)(struct elastic_tls_record *);
	void (*e_invalidate)(struct elastic_tls_record *);
};

static struct ops ops;
static atomic_int lib_ready;
static atomic_int stopping;
static atomic_int usr1_count, usr2_count;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t sink;
static int elastic_mode;
/* --proc-ctx-spoof: also claim identity the profiler derives itself. */
static int pc_spoof;

/* ---- output ---- */
static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t unix_ns(void)
{
	return now_ns(CLOCK_REALTIME);
}

__attribute__((format(printf, 1, 2))) static void emit(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&out_lock);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

static void hex(char *out, const uint8_t *b, int n)
{
	for (int i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = '\0';
}

static void die(const char *what)
{
	fprintf(stderr, "ctx workload: %s\n", what);
	exit(2);
}

/* ---- one interval of one thread ---- */
struct interval {
	int has_ctx;
	uint8_t trace_id[16], span_id[8], txn_id[8];
	uint8_t attrs[OTELCTX_ATTRS_MAX];
	uint16_t attrs_len;
	/* JSON: expected attributes by name, values that must be dropped. */
	char attrs_json[1024], dropped_json[512];
};

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill_id(uint8_t *out, int n, uint64_t *seed)
{
	for (int i = 0; i < n; i += 8) {
		uint64_t v = splitmix(seed);

		memcpy(out + i, &v, n - i < 8 ? (size_t)(n - i) : 8);
	}
	out[0] |= 1; /* never all zero */
}

static void json_append(char *buf, size_t cap, const char *key,
			const char *value)
{
	size_t len = strlen(buf);

	snprintf(buf + len, cap - len, "%s\"%s\":\"%s\"", len > 1 ? "," : "",
		 key, value);
}

/* Appends {key, len, value} to attrs_data; names it in the JSON. */
static void add_attr(struct interval *iv, int key, const char *value)
{
	size_t n = strlen(value);

	if (n > 255 || iv->attrs_len + 2 + n > OTELCTX_ATTRS_MAX)
		die("attribute does not fit");
	iv->attrs[iv->attrs_len++] = (uint8_t)key;
	iv->attrs[iv->attrs_len++] = (uint8_t)n;
	memcpy(iv->attrs + iv->attrs_len, value, n);
	iv->attrs_len += (uint16_t)n;
	if (key < NKEYS) {
		json_append(iv->attrs_json, sizeof(iv->attrs_json),
			    key_map[key], value);
	} else {
		size_t len = strlen(iv->dropped_json);

		snprintf(iv->dropped_json + len, sizeof(iv->dropped_json) - len,
			 "%s\"%s\"", len > 1 ? "," : "", value);
	}
}

static void make_interval(struct interval *iv, int tid, unsigned k)
{
	uint64_t seed = (uint64_t)tid << 32 | k;
	char v[256];

	memset(iv, 0, sizeof(*iv));
	strcpy(iv->attrs_json, "{");
	strcpy(iv->dropped_json, "[");
	iv->has_ctx = k % NPATTERNS != 2;
	if (iv->has_ctx) {
		fill_id(iv->trace_id, 16, &seed);
		fill_id(iv->span_id, 8, &seed);
		fill_id(iv->txn_id, 8, &seed);
	}
	if (elastic_mode)
		goto out;
	switch (k % NPATTERNS) {
	case 0:
		add_attr(iv, KEY_ROUTE, "/api/orders/{id}");
		add_attr(iv, KEY_METHOD, "GET");
		break;
	case 1:
		add_attr(iv, KEY_ROUTE, "/api/users");
		add_attr(iv, KEY_OUT_RANGE, "dropped-out-of-range");
		snprintf(v, sizeof(v), "tenant-%d-%u", tid % 1000, k);
		add_attr(iv, KEY_TENANT, v);
		break;
	case 4:
		/* The largest record: 28 + 252 + 252 + 6 + 102 = 640 bytes. */
		memset(v, 0, sizeof(v));
		memcpy(v, "/long/", 6);
		memset(v + 6, 'r', 244);
		add_attr(iv, KEY_ROUTE, v);
		memset(v, 't', 250);
		snprintf(v + 240, 16, "%010u", k);
		add_attr(iv, KEY_TENANT, v);
		add_attr(iv, KEY_METHOD, "POST");
		memset(v, 0, sizeof(v));
		memset(v, 'd', 100);
		add_attr(iv, 200, v);
		if (OTELCTX_HEADER_SIZE + iv->attrs_len != OTELCTX_RECORD_MAX)
			die("pattern 4 is not 640 bytes");
		break;
	default:
		break;
	}
out:
	strcat(iv->attrs_json, "}");
	strcat(iv->dropped_json, "]");
}

/* ---- busy work ---- */
static NOINLINE void spin_with_context(uint64_t deadline)
{
	uint64_t x = sink;

	while (!atomic_load(&stopping) && unix_ns() < deadline)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

static NOINLINE void spin_without_context(uint64_t deadline)
{
	uint64_t x = sink;

	while (!atomic_load(&stopping) && unix_ns() < deadline)
		for (int i = 0; i < 20000; i++)
			x = x * 2862933555777941757ull + 3037000493ull;
	sink = x;
}

static uintptr_t thread_pointer(void)
{
	uintptr_t tp = 0;

#if defined(__x86_64__)
	__asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
	__asm__ volatile("mrs %0, tpidr_el0" : "=r"(tp));
#endif
	return tp;
}

/* ---- threads ---- */
struct thread_arg {
	int index;
	enum strategy strategy;
};

static void print_interval(int tid, uint64_t start, uint64_t end,
			   const struct interval *iv)
{
	char trace[33] = "", span[17] = "";

	if (iv && iv->has_ctx) {
		hex(trace, iv->trace_id, 16);
		hex(span, iv->span_id, 8);
	}
	emit("{\"event\":\"interval\",\"tid\":%d,\"start_ns\":%llu,"
	     "\"end_ns\":%llu,\"trace_id\":\"%s\",\"span_id\":\"%s\","
	     "\"attrs\":%s,\"dropped\":%s}",
	     tid, (unsigned long long)start, (unsigned long long)end, trace,
	     span, iv && iv->has_ctx ? iv->attrs_json : "{}",
	     iv && iv->has_ctx ? iv->dropped_json : "[]");
}

static void publish(enum strategy s, const struct interval *iv, unsigned k,
		    struct otel_thread_ctx_record recs[2],
		    struct elastic_tls_record *erec)
{
	struct otelctx_value v;

	if (s == STRAT_ELASTIC) {
		if (iv->has_ctx)
			ops.e_set(erec, iv->trace_id, iv->span_id, iv->txn_id,
				  1);
		else if (k / NPATTERNS % 2)
			ops.e_invalidate(erec); /* stale ids, valid = 0 */
		else
			ops.e_clear(erec); /* valid, no trace */
		return;
	}
	if (!iv->has_ctx) {
		if (s == STRAT_PTR)
			ops.ptr_clear();
		else
			ops.valid_clear(&recs[0]);
		return;
	}
	memcpy(v.trace_id, iv->trace_id, 16);
	memcpy(v.span_id, iv->span_id, 8);
	v.trace_flags = 1;
	v.attrs = iv->attrs;
	v.attrs_len = iv->attrs_len;
	if (s == STRAT_PTR)
		ops.ptr_publish(&recs[k & 1], &v); /* the other is visible */
	else
		ops.valid_publish(&recs[0], &v);
}

static void self_check(enum strategy s, const struct interval *iv,
		       struct otel_thread_ctx_record recs[2], unsigned k)
{
	const struct otel_thread_ctx_record *r;

	if (s == STRAT_ELASTIC)
		return;
	r = *(struct otel_thread_ctx_record **)ops.slot();
	if (s == STRAT_PTR && !iv->has_ctx) {
		if (r)
			die("pointer not cleared");
		return;
	}
	if (r != &recs[s == STRAT_PTR ? (k & 1) : 0])
		die("TLS pointer is not the published record");
	if (r->valid != iv->has_ctx ||
	    (iv->has_ctx && (memcmp(r->trace_id, iv->trace_id, 16) ||
			     r->attrs_data_size != iv->attrs_len)))
		die("published record differs");
}

static void *ctx_thread(void *p)
{
	const struct thread_arg *a = p;
	static struct otel_thread_ctx_record recs[MAX_CTX_THREADS][2];
	static struct elastic_tls_record erecs[MAX_CTX_THREADS];
	struct interval iv;
	int tid = gettid();
	uint64_t start = unix_ns();
	char name[16];
	void **slot;
	long off;

	snprintf(name, sizeof(name), "ctx-%s-%d", strategy_names[a->strategy],
		 a->index);
	pthread_setname_np(pthread_self(), name);
	/* Busy without context until the publisher is there. */
	while (!atomic_load(&lib_ready) && !atomic_load(&stopping))
		spin_without_context(unix_ns() + 1000000);
	print_interval(tid, start, unix_ns(), NULL);
	if (atomic_load(&stopping))
		return NULL;
	if (a->strategy == STRAT_ELASTIC) {
		ops.e_attach(&erecs[a->index]);
		slot = ops.e_slot();
	} else {
		slot = ops.slot();
	}
	off = (long)((uintptr_t)slot - thread_pointer());
	emit("{\"event\":\"thread\",\"tid\":%d,\"name\":\"%s\","
	     "\"strategy\":\"%s\",\"tls_offset\":%ld,\"tls\":\"%s\"}",
	     tid, name, strategy_names[a->strategy], off,
	     off > -65536 && off < 65536 ? "static" : "dynamic");
	for (unsigned k = 0; !atomic_load(&stopping); k++) {
		uint64_t ms = 200 + (k * 37 + (unsigned)a->index * 11) % 100;

		make_interval(&iv, tid, k);
		publish(a->strategy, &iv, k, recs[a->index], &erecs[a->index]);
		self_check(a->strategy, &iv, recs[a->index], k);
		start = unix_ns();
		spin_with_context(start + ms * 1000000);
		print_interval(tid, start, unix_ns(), &iv);
	}
	return NULL;
}

static void *noctx_thread(void *p)
{
	int tid = gettid();
	uint64_t start;

	(void)p;
	pthread_setname_np(pthread_self(), "noctx");
	emit("{\"event\":\"thread\",\"tid\":%d,\"name\":\"noctx\","
	     "\"strategy\":\"none\"}",
	     tid);
	start = unix_ns();
	while (!atomic_load(&stopping))
		spin_without_context(unix_ns() + 100000000);
	print_interval(tid, start, unix_ns(), NULL);
	return NULL;
}

/* ---- publishers ---- */
#ifndef CTX_DIRECT
static void *sym(void *h, const char *name)
{
	void *s = dlsym(h, name);

	if (!s) {
		fprintf(stderr, "ctx workload: dlsym %s: %s\n", name,
			dlerror());
		exit(2);
	}
	return s;
}
#endif

static void load_library(const char *path)
{
#ifdef CTX_DIRECT
	(void)path;
	ops.variant = otelctx_variant;
	ops.slot = otelctx_slot;
	ops.ptr_publish = otelctx_ptr_publish;
	ops.ptr_clear = otelctx_ptr_clear;
	ops.valid_publish = otelctx_valid_publish;
	ops.valid_clear = otelctx_valid_clear;
	emit("{\"event\":\"library\",\"variant\":\"%s\",\"mode\":\"linked\","
	     "\"unix_ns\":%llu}",
	     ops.variant(), (unsigned long long)unix_ns());
#else
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "ctx workload: dlopen %s: %s\n", path,
			dlerror());
		exit(2);
	}
	if (elastic_mode) {
		ops.e_slot = (void **(*)(void))sym(h, "elastic_slot");
		ops.e_publish_process =
			(int (*)(const char *, const char *, const char *))sym(
				h, "elastic_publish_process");
		ops.e_attach = (void (*)(struct elastic_tls_record *))sym(
			h, "elastic_thread_attach");
		ops.e_set =
			(void (*)(struct elastic_tls_record *, const uint8_t *,
				  const uint8_t *, const uint8_t *,
				  uint8_t))sym(h, "elastic_"
						  "set");
		ops.e_clear = (void (*)(struct elastic_tls_record *))sym(
			h, "elastic_clear");
		ops.e_invalidate = (void (*)(struct elastic_tls_record *))sym(
			h, "elastic_invalidate");
		emit("{\"event\":\"library\",\"variant\":\"elastic\","
		     "\"mode\":\"dlopen\",\"path\":\"%s\",\"unix_ns\":%llu}",
		     path, (unsigned long long)unix_ns());
		return;
	}
	ops.variant = (const char *(*)(void))sym(h, "otelctx_variant");
	ops.slot = (void **(*)(void))sym(h, "otelctx_slot");
	ops.ptr_publish = (void (*)(
		struct otel_thread_ctx_record *,
		const struct otelctx_value *))sym(h, "otelctx_ptr_publish");
	ops.ptr_clear = (void (*)(void))sym(h, "otelctx_ptr_clear");
	ops.valid_publish = (void (*)(
		struct otel_thread_ctx_record *,
		const struct otelctx_value *))sym(h, "otelctx_valid_publish");
	ops.valid_clear = (void (*)(struct otel_thread_ctx_record *))sym(
		h, "otelctx_valid_clear");
	emit("{\"event\":\"library\",\"variant\":\"%s\",\"mode\":\"dlopen\","
	     "\"path\":\"%s\",\"unix_ns\":%llu}",
	     ops.variant(), path, (unsigned long long)unix_ns());
#endif
}

static const char *const kind_names[] = {"none", "memfd", "anon", "anon_shmem"};

static void publish_process_context(struct proc_ctx *pc, int update)
{
	char instance[64];
	struct proc_ctx_kv res[] = {
		{"service.name", "otelprof-ctx-test"},
		{"service.version", update ? "2.0.0" : "1.0.0"},
		{"service.instance.id", instance},
		{"deployment.environment.name", "integration"},
		{"telemetry.sdk.language", "cpp"},
		/* only with --proc-ctx-spoof (kept out of n otherwise) */
		{"container.id", "0123456789abcdef0123456789abcdef0123456789"
				 "abcdef0123456789abcdef"},
		{"k8s.pod.name", "someone-elses-pod"},
		{"host.name", "not-this-host"},
		{"process.executable.name", "not-me"},
		{"thread.name", "not-my-thread"},
	};
	char json[1024] = "{";
	int n = (int)(sizeof(res) / sizeof(res[0])) - (pc_spoof ? 0 : 5), e;

	snprintf(instance, sizeof(instance), "00000000-0000-4000-8000-%012x",
		 (unsigned)getpid());
	e = proc_ctx_publish(pc, res, n, key_map, NKEYS);
	if (e) {
		fprintf(stderr, "ctx workload: process context: %s\n",
			strerror(-e));
		exit(2);
	}
	for (int i = 0; i < n; i++)
		json_append(json, sizeof(json), res[i].key, res[i].value);
	strcat(json, "}");
	emit("{\"event\":\"process_context\",\"kind\":\"%s\",\"update\":%s,"
	     "\"unix_ns\":%llu,\"published_at_ns\":%llu,\"address\":\"%p\","
	     "\"named\":%s,\"resource\":%s,\"key_map\":[\"%s\",\"%s\","
	     "\"%s\"],\"schema_version\":\"tlsdesc_v1_dev\"}",
	     kind_names[pc->kind], update ? "true" : "false",
	     (unsigned long long)unix_ns(),
	     (unsigned long long)pc->published_at_ns, pc->map,
	     pc->named ? "true" : "false", json, key_map[0], key_map[1],
	     key_map[2]);
}

/* Elastic: the agent's socket exists before the process storage. */
static int elastic_socket(char *path, size_t cap)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket");
	snprintf(path, cap, "/tmp/otelprof-elastic-%d.sock", (int)getpid());
	unlink(path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("bind");
	return fd;
}

/* What the profiler sent, read only at exit (the socket's short queue
 * holds the first few): each well-formed as the agent decodes it? A
 * registration {type 2, minor 1, u32 delay, u32 len, host id}, or a
 * correlation {type 1, minor 1, trace[16], transaction[8], stack[16],
 * u16 count} of 46 bytes; anything else is malformed. */
struct socket_counts {
	int messages, registrations, correlations, malformed;
	int first_is_registration;
};

static struct socket_counts count_messages(int fd)
{
	struct socket_counts c = {0};
	unsigned char buf[4096];
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), 0)) >= 0) {
		uint16_t type = 0, minor = 0;
		uint32_t len = 0;

		if (n >= 4) {
			memcpy(&type, buf, 2);
			memcpy(&minor, buf + 2, 2);
		}
		if (n >= 12)
			memcpy(&len, buf + 8, 4);
		if (type == 2 && minor == 1 && n >= 12 && len == n - 12) {
			c.registrations++;
			if (!c.messages)
				c.first_is_registration = 1;
		} else if (type == 1 && minor == 1 && n == 46 &&
			   (buf[44] | buf[45])) {
			c.correlations++;
		} else {
			c.malformed++;
		}
		c.messages++;
	}
	return c;
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		atomic_fetch_add(&usr1_count, 1);
	else if (sig == SIGUSR2)
		atomic_fetch_add(&usr2_count, 1);
	else
		atomic_store(&stopping, 1);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) && errno == EINTR && !atomic_load(&stopping))
		;
}

static void usage(void)
{
	fprintf(stderr, "usage: ctx_* [--lib PATH] [--dlopen-delay-ms N] "
			"[--elastic PATH] [--threads N] [--seconds S] "
			"[--proc-ctx memfd|anon|anon_shmem|none] "
			"[--proc-ctx-delay-ms N] [--proc-ctx-update-ms N] "
			"[--proc-ctx-on-signal] [--dlopen-on-signal] "
			"[--proc-ctx-no-prctl] [--proc-ctx-spoof]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *lib = NULL;
	long dlopen_delay = 0, pc_delay = 0, pc_update = -1;
	double seconds = 60;
	int nthreads = 3, pc_kind = PROC_CTX_MEMFD, pc_kind_set = 0;
	int sock = -1, pc_done = 0, lib_done = 0, update_done = 0;
	int pc_on_signal = 0, dlopen_on_signal = 0;
	struct thread_arg args[MAX_CTX_THREADS];
	pthread_t th[MAX_CTX_THREADS], noctx;
	struct proc_ctx pc = {0};
	char sock_path[108] = "";
	struct sigaction sa;
	uint64_t t0, end;

	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--proc-ctx-on-signal")) {
			pc_on_signal = 1;
			continue;
		}
		if (!strcmp(o, "--dlopen-on-signal")) {
			dlopen_on_signal = 1;
			continue;
		}
		if (!strcmp(o, "--proc-ctx-no-prctl")) {
			pc.no_prctl = 1;
			continue;
		}
		if (!strcmp(o, "--proc-ctx-spoof")) {
			pc_spoof = 1;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(o, "--lib")) {
			lib = v;
		} else if (!strcmp(o, "--elastic")) {
			lib = v;
			elastic_mode = 1;
		} else if (!strcmp(o, "--dlopen-delay-ms")) {
			dlopen_delay = atol(v);
		} else if (!strcmp(o, "--threads")) {
			nthreads = atoi(v);
		} else if (!strcmp(o, "--seconds")) {
			seconds = atof(v);
		} else if (!strcmp(o, "--proc-ctx")) {
			pc_kind_set = 1;
			pc_kind = -1;
			for (int k = 0; k < 4; k++)
				if (!strcmp(v, kind_names[k]))
					pc_kind = k;
			if (pc_kind < 0)
				usage();
		} else if (!strcmp(o, "--proc-ctx-delay-ms")) {
			pc_delay = atol(v);
		} else if (!strcmp(o, "--proc-ctx-update-ms")) {
			pc_update = atol(v);
		} else {
			usage();
		}
	}
#ifdef CTX_DIRECT
	if (lib || elastic_mode || dlopen_delay || dlopen_on_signal)
		die("this build links its publisher: no --lib/--elastic");
#else
	/* No publisher: only the thread without context (process context). */
	if (!lib)
		nthreads = 0;
#endif
	if (nthreads < 0 || nthreads > MAX_CTX_THREADS)
		usage();
	if (elastic_mode && !pc_kind_set)
		pc_kind = PROC_CTX_NONE;
	pc.kind = (enum proc_ctx_kind)pc_kind;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	t0 = now_ns(CLOCK_MONOTONIC);
	end = t0 + (uint64_t)(seconds * 1e9);
	emit("{\"event\":\"start\",\"pid\":%d,\"unix_ns\":%llu}", (int)getpid(),
	     (unsigned long long)unix_ns());

	/* Threads first: a dlopen'd publisher meets threads that exist. */
	for (int i = 0; i < nthreads; i++) {
		args[i].index = i;
		args[i].strategy = elastic_mode ? STRAT_ELASTIC
				   : i % 2	? STRAT_VALID
						: STRAT_PTR;
		if (pthread_create(&th[i], NULL, ctx_thread, &args[i]))
			die("pthread_create");
	}
	if (pthread_create(&noctx, NULL, noctx_thread, NULL))
		die("pthread_create");

	for (int ready = 0; !atomic_load(&stopping);) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		long ms = (long)((now - t0) / 1000000);
		int usr1 = atomic_load(&usr1_count);
		int lib_due = dlopen_on_signal ? atomic_load(&usr2_count) > 0
					       : ms >= dlopen_delay;
		int pc_due = pc_on_signal ? usr1 >= 1 : ms >= pc_delay;
		int update_due = pc_on_signal
					 ? usr1 >= 2
					 : pc_update >= 0 && ms >= pc_update;

		if (now >= end)
			break;
		if (!lib_done && lib_due && !nthreads) {
			lib_done = 1;
		} else if (!lib_done && lib_due) {
			load_library(lib);
			if (elastic_mode) {
				sock = elastic_socket(sock_path,
						      sizeof(sock_path));
				if (ops.e_publish_process("otelprof-elastic-"
							  "test",
							  "elastic-integration",
							  sock_path))
					die("elastic process storage");
				emit("{\"event\":\"elastic_process\","
				     "\"service_name\":\"otelprof-elastic-"
				     "test\",\"environment\":\"elastic-"
				     "integration\",\"socket_path\":\"%s\","
				     "\"unix_ns\":%llu}",
				     sock_path, (unsigned long long)unix_ns());
			}
			atomic_store(&lib_ready, 1);
			lib_done = 1;
		}
		if (pc.kind != PROC_CTX_NONE && !pc_done && pc_due) {
			publish_process_context(&pc, 0);
			pc_done = 1;
		}
		if (pc_done && !update_done && update_due) {
			publish_process_context(&pc, 1);
			update_done = 1;
		}
		if (!ready) {
			emit("{\"event\":\"ready\",\"unix_ns\":%llu}",
			     (unsigned long long)unix_ns());
			ready = 1;
		}
		sleep_ms(5);
	}
	atomic_store(&stopping, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	pthread_join(noctx, NULL);
	if (sock >= 0) {
		struct socket_counts c = count_messages(sock);

		emit("{\"event\":\"elastic_socket\",\"path\":\"%s\","
		     "\"messages\":%d,\"registrations\":%d,"
		     "\"correlations\":%d,\"malformed\":%d,"
		     "\"first_is_registration\":%s}",
		     sock_path, c.messages, c.registrations, c.correlations,
		     c.malformed, c.first_is_registration ? "true" : "false");
		close(sock);
		unlink(sock_path);
	}
	emit("{\"event\":\"exit\",\"unix_ns\":%llu}",
	     (unsigned long long)unix_ns());
	return 0;
}
