// SPDX-License-Identifier: Apache-2.0
#include "filestore/debuginfod.h"

#include <ctype.h>
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "util/idxmap.h"
#include "util/clock.h"

/*
 * libcurl is loaded when debuginfod is turned on, not linked: off (the
 * default), the profiler maps none of it (with its TLS, HTTP/2, Kerberos
 * and LDAP libraries: some forty files) into a host agent that makes no
 * network use.
 */
static struct {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_cleanup)(CURL *);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_add_handle)(CURLM *, CURL *);
	CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
	CURLMcode (*multi_perform)(CURLM *, int *);
	CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned, int,
				int *);
	CURLMsg *(*multi_info_read)(CURLM *, int *);
	CURLMcode (*multi_wakeup)(CURLM *);
	CURLMcode (*multi_cleanup)(CURLM *);
} cu;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static bool curl_ok;

#define CURL_SYM(field, name)                                                  \
	do {                                                                   \
		*(void **)&cu.field = dlsym(h, name);                          \
		if (!cu.field)                                                 \
			return;                                                \
	} while (0)

static void curl_load(void)
{
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
	CURL_SYM(global_init, "curl_global_init");
	CURL_SYM(easy_init, "curl_easy_init");
	CURL_SYM(easy_setopt, "curl_easy_setopt");
	CURL_SYM(easy_getinfo, "curl_easy_getinfo");
	CURL_SYM(easy_cleanup, "curl_easy_cleanup");
	CURL_SYM(multi_init, "curl_multi_init");
	CURL_SYM(multi_add_handle, "curl_multi_add_handle");
	CURL_SYM(multi_remove_handle, "curl_multi_remove_handle");
	CURL_SYM(multi_perform, "curl_multi_perform");
	CURL_SYM(multi_poll, "curl_multi_poll"); /* 7.66 */
	CURL_SYM(multi_info_read, "curl_multi_info_read");
	CURL_SYM(multi_wakeup, "curl_multi_wakeup"); /* 7.68 */
	CURL_SYM(multi_cleanup, "curl_multi_cleanup");
	/* Kept loaded for the process's life: curl has no safe unload. */
	curl_ok = cu.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

void debuginfod_init(struct debuginfod *d)
{
	memset(d, 0, sizeof(*d));
	d->lookup_ms = DEBUGINFOD_LOOKUP_MS;
	work_queue_init(&d->queue, DEBUGINFOD_MAX_JOBS);
}

static void free_urls(struct debuginfod *d)
{
	for (unsigned i = 0; i < d->nurls; i++)
		free(d->urls[i]);
	d->nurls = 0;
}

int debuginfod_set_urls(struct debuginfod *d, const char *urls,
			const char **why)
{
	const char *p = urls;

	*why = NULL;
	free_urls(d);
	while (p && *p) {
		const char *end;
		size_t n;

		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		for (end = p; *end && !isspace((unsigned char)*end); end++)
			;
		n = (size_t)(end - p);
		if (strncmp(p, "http://", 7) && strncmp(p, "https://", 8)) {
			*why = "a server URL must start with http:// or "
			       "https://";
			goto bad;
		}
		if (n >= DEBUGINFOD_MAX_URL_LEN) {
			*why = "a server URL is longer than 1023 bytes";
			goto bad;
		}
		if (d->nurls == DEBUGINFOD_MAX_URLS) {
			*why = "more than 8 server URLs";
			goto bad;
		}
		/* A trailing slash is dropped: "/buildid/" follows. */
		while (n > 8 && p[n - 1] == '/')
			n--;
		d->urls[d->nurls] = strndup(p, n);
		if (!d->urls[d->nurls]) {
			*why = "out of memory";
			free_urls(d);
			return -ENOMEM;
		}
		d->nurls++;
		p = end;
	}
	if (d->nurls) {
		pthread_once(&curl_once, curl_load);
		if (!curl_ok) {
			*why = "libcurl.so.4 cannot be loaded (install "
			       "libcurl4)";
			free_urls(d);
			return -ELIBACC;
		}
	}
	return 0;
bad:
	free_urls(d);
	return -EINVAL;
}

/* Where a transfer writes: a memfd, charged to the file as it grows. */
struct sink {
	int fd;
	uint64_t bytes;
	struct mem_account *acct;
	bool refused; /* too big or over budget */
	bool failed;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct sink *s = arg;
	size_t n = size * nmemb, done = 0;

	if (s->bytes + n > DEBUGINFOD_MAX_BYTES ||
	    !mem_account_charge(s->acct, n)) {
		s->refused = true;
		return 0; /* aborts the transfer */
	}
	s->bytes += n;
	while (done < n) {
		ssize_t w = write(s->fd, ptr + done, n - done);

		if (w <= 0) {
			s->failed = true;
			return 0;
		}
		done += (size_t)w;
	}
	return n;
}

/* One server: 0 got the file into s->fd, or the result that ends it. */
static int fetch_one(struct debuginfod_thread *t, const char *base,
		     const char *build_id, struct sink *s, uint64_t deadline)
{
	struct debuginfod *d = t->d;
	char url[DEBUGINFOD_MAX_URL_LEN + 2 * ELF_FILE_MAX_BUILD_ID + 32];
	uint64_t now = mono_ns();
	long left_ms, http = 0;
	CURLcode rc = CURLE_OK;
	CURLMsg *msg;
	int running = 1, q;
	CURL *easy;

	if (now >= deadline)
		return DEBUGINFOD_TIMEOUT;
	left_ms = (long)((deadline - now) / 1000000ull);
	if (left_ms < 1)
		left_ms = 1;
	snprintf(url, sizeof(url), "%s/buildid/%s/debuginfo", base, build_id);
	easy = cu.easy_init();
	if (!easy)
		return DEBUGINFOD_NOT_FOUND;
	cu.easy_setopt(easy, CURLOPT_URL, url);
	cu.easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
	cu.easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	cu.easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
	cu.easy_setopt(easy, CURLOPT_MAXREDIRS, 3L);
	cu.easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	cu.easy_setopt(easy, CURLOPT_FAILONERROR, 1L);
	cu.easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
		       (long)DEBUGINFOD_CONNECT_MS < left_ms
			       ? (long)DEBUGINFOD_CONNECT_MS
			       : left_ms);
	cu.easy_setopt(easy, CURLOPT_TIMEOUT_MS, left_ms);
	cu.easy_setopt(easy, CURLOPT_MAXFILESIZE_LARGE,
		       (curl_off_t)DEBUGINFOD_MAX_BYTES);
	cu.easy_setopt(easy, CURLOPT_USERAGENT, "otelprof");
	cu.easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_data);
	cu.easy_setopt(easy, CURLOPT_WRITEDATA, s);
	if (cu.multi_add_handle(t->multi, easy) != CURLM_OK) {
		cu.easy_cleanup(easy);
		return DEBUGINFOD_NOT_FOUND;
	}
	while (running && !atomic_load(&d->queue.stopping)) {
		if (cu.multi_perform(t->multi, &running) != CURLM_OK)
			break;
		if (!running)
			break;
		/* Woken at once by stop (curl_multi_wakeup). */
		cu.multi_poll(t->multi, NULL, 0, 250, NULL);
	}
	while ((msg = cu.multi_info_read(t->multi, &q)))
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == easy)
			rc = msg->data.result;
	cu.easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &http);
	cu.multi_remove_handle(t->multi, easy);
	cu.easy_cleanup(easy);
	if (atomic_load(&d->queue.stopping))
		return DEBUGINFOD_CANCELED;
	if (running)
		return DEBUGINFOD_NOT_FOUND;
	if (s->refused || rc == CURLE_FILESIZE_EXCEEDED)
		return DEBUGINFOD_REFUSED;
	if (rc == CURLE_OPERATION_TIMEDOUT)
		return mono_ns() >= deadline ? DEBUGINFOD_TIMEOUT
					     : DEBUGINFOD_NOT_FOUND;
	if (rc != CURLE_OK || http != 200 || s->failed)
		return DEBUGINFOD_NOT_FOUND;
	return DEBUGINFOD_HIT;
}

/* The servers in order until one has it; its file read through the same
 * bounded ELF and DWARF readers as any mapped file. */
static void run_job(struct debuginfod_thread *t, struct debuginfod_job *j)
{
	struct debuginfod *d = t->d;
	uint64_t deadline = mono_ns() + d->lookup_ms * 1000000ull;
	int r = DEBUGINFOD_NOT_FOUND;

	for (unsigned i = 0; i < d->nurls; i++) {
		struct sink s = {.acct = j->acct};

		s.fd = memfd_create("otelprof-debuginfod", MFD_CLOEXEC);
		if (s.fd < 0)
			break;
		r = fetch_one(t, d->urls[i], j->build_id, &s, deadline);
		if (r == DEBUGINFOD_HIT) {
			if (elf_symbols_load_fd(s.fd, &j->sym, j->acct) ||
			    !j->sym.n || strcmp(j->sym.build_id, j->build_id)) {
				if (j->sym.over_budget)
					r = DEBUGINFOD_REFUSED;
				else
					r = DEBUGINFOD_BAD_FILE;
				elf_symbols_free(&j->sym);
				memset(&j->sym, 0, sizeof(j->sym));
			} else if (j->sym.has_dwarf) {
				j->dwarf = dwarf_lines_open(s.fd, j->acct);
			}
		}
		/* The download itself goes; what was read from it stays
		 * charged with it. */
		mem_account_uncharge(j->acct, s.bytes);
		j->bytes += s.bytes;
		close(s.fd);
		/* Not found on one server: ask the next; anything else
		 * (a file, a bad one, the deadline, stop) ends it. */
		if (r != DEBUGINFOD_NOT_FOUND)
			break;
	}
	j->result = r;
}

static void run_lookup(void *ctx, unsigned worker, struct work_item *it)
{
	struct debuginfod *d = ctx;

	run_job(&d->threads[worker], debuginfod_job_of(it));
}

/* Stop: a transfer waiting in curl_multi_poll ends at once. */
static void wake_transfers(void *ctx)
{
	struct debuginfod *d = ctx;

	for (unsigned i = 0; i < d->queue.nthreads; i++)
		cu.multi_wakeup(d->threads[i].multi);
}

int debuginfod_start(struct debuginfod *d, int notify_fd)
{
	unsigned n = 0;
	int started;

	if (d->queue.started || !d->nurls)
		return 0;
	pthread_once(&curl_once, curl_load);
	if (!curl_ok)
		return -ELIBACC;
	if (!d->neg) {
		d->neg = calloc(DEBUGINFOD_NEG_ENTRIES, sizeof(*d->neg));
		if (!d->neg)
			return -ENOMEM;
	}
	for (; n < DEBUGINFOD_THREADS; n++) {
		d->threads[n].d = d;
		d->threads[n].multi = cu.multi_init();
		if (!d->threads[n].multi)
			break;
	}
	d->queue.wake = wake_transfers;
	started = n ? work_queue_start(&d->queue, n, run_lookup, d, notify_fd)
		    : -ENOMEM;
	/* The multis of workers that could not be started. */
	for (unsigned i = started > 0 ? (unsigned)started : 0; i < n; i++) {
		cu.multi_cleanup(d->threads[i].multi);
		d->threads[i].multi = NULL;
	}
	return started > 0 ? 0 : -ENOMEM;
}

static struct debuginfod_neg *neg_find(struct debuginfod *d, uint64_t h,
				       bool add)
{
	struct debuginfod_neg *oldest = NULL;

	if (!d->neg)
		return NULL;
	for (unsigned i = 0; i < 8; i++) {
		struct debuginfod_neg *e =
			&d->neg[(h + i) % DEBUGINFOD_NEG_ENTRIES];

		if (e->hash == h)
			return e;
		if (!add)
			continue;
		if (!e->hash) {
			oldest = e;
			break;
		}
		if (!oldest || e->retry_ns < oldest->retry_ns)
			oldest = e;
	}
	if (oldest) {
		memset(oldest, 0, sizeof(*oldest));
		oldest->hash = h;
	}
	return oldest;
}

static uint64_t id_hash(const char *build_id)
{
	uint64_t h = hash_bytes(build_id, strlen(build_id), 0x64626764);

	return h ? h : 1;
}

int debuginfod_submit(struct debuginfod *d, struct elf_file *file,
		      struct mem_account *acct, const char *build_id,
		      uint64_t *retry_ns)
{
	struct debuginfod_neg *neg;
	struct debuginfod_job *j;
	int e;

	*retry_ns = 0;
	if (!d->queue.started)
		return -ENODEV;
	if (!build_id[0] ||
	    strlen(build_id) >= sizeof(((struct debuginfod_job *)0)->build_id))
		return -EINVAL;
	neg = neg_find(d, id_hash(build_id), false);
	if (neg && mono_ns() < neg->retry_ns) {
		*retry_ns = neg->retry_ns;
		return -EBUSY;
	}
	if (work_queue_full(&d->queue)) {
		d->counters.refused++;
		return -EAGAIN;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->file = file;
	j->acct = acct;
	memcpy(j->build_id, build_id, strlen(build_id) + 1);
	e = work_queue_submit(&d->queue, &j->item);
	if (e) {
		free(j);
		return e;
	}
	d->counters.lookups++;
	return 0;
}

/* A failed build id is asked again after a minute, then twice as long
 * each time, up to an hour: a missing file costs a bounded number of
 * requests, a server that comes back is asked again. */
static void remember(struct debuginfod *d, const struct debuginfod_job *j)
{
	uint64_t h = id_hash(j->build_id);
	struct debuginfod_neg *e;
	uint64_t wait;

	if (j->result == DEBUGINFOD_HIT) {
		e = neg_find(d, h, false);
		if (e)
			memset(e, 0, sizeof(*e));
		return;
	}
	e = neg_find(d, h, true);
	if (!e)
		return;
	wait = DEBUGINFOD_NEG_FIRST_NS << (e->failures < 6 ? e->failures : 6);
	if (wait > DEBUGINFOD_NEG_MAX_NS)
		wait = DEBUGINFOD_NEG_MAX_NS;
	e->failures++;
	e->retry_ns = mono_ns() + wait;
}

struct work_item *debuginfod_take_done(struct debuginfod *d)
{
	struct work_item *list = work_queue_take_done(&d->queue);

	for (struct work_item *it = list; it; it = it->next) {
		struct debuginfod_job *j = debuginfod_job_of(it);

		switch (j->result) {
		case DEBUGINFOD_HIT:
			d->counters.hits++;
			break;
		case DEBUGINFOD_REFUSED:
			d->counters.refused++;
			break;
		case DEBUGINFOD_CANCELED:
			continue; /* not remembered */
		default:
			d->counters.failures++;
			break;
		}
		remember(d, j);
	}
	return list;
}

void debuginfod_job_free(struct debuginfod_job *j)
{
	if (!j)
		return;
	elf_symbols_free(&j->sym);
	dwarf_lines_close(j->dwarf);
	free(j);
}

bool debuginfod_busy(struct debuginfod *d)
{
	return work_queue_busy(&d->queue);
}

struct work_item *debuginfod_stop(struct debuginfod *d)
{
	unsigned n = d->queue.nthreads;
	struct work_item *all;

	if (!d->queue.started)
		return NULL;
	all = work_queue_stop(&d->queue);
	for (unsigned i = 0; i < n; i++) {
		cu.multi_cleanup(d->threads[i].multi);
		d->threads[i].multi = NULL;
	}
	return all;
}

void debuginfod_free(struct debuginfod *d)
{
	struct work_item *it = debuginfod_stop(d);

	while (it) {
		struct debuginfod_job *j = debuginfod_job_of(it);

		it = it->next;
		debuginfod_job_free(j);
	}
	free_urls(d);
	free(d->neg);
	d->neg = NULL;
	work_queue_destroy(&d->queue);
}
