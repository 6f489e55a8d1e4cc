/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake libotelprofiler for the receiver's Go tests: implements the ABI of
 * include/otelprofiler.h without BPF. Controlled through files in the
 * directory named by $OTELPROF_FAKE_DIR (or the FAKE_DIR macro given at
 * build time, since a Go process built without cgo cannot change the C
 * environment after start):
 *   payload.bin   bytes returned by every otelprof_poll while running, and
 *                 once more after otelprof_stop (the "drained" buffer)
 *   samples       decimal sample count poll returns with the payload (default
 * 1) start_error   if present, otelprof_start fails with -EPERM and copies its
 * first line into errbuf poll_error    if present, otelprof_poll fails with
 * -EIO and errmsg returns its first line log           appended: one line per
 * call, for the test to check
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../include/otelprofiler.h"

#ifndef FAKE_DIR
#define FAKE_DIR "/nonexistent"
#endif

struct otelprof {
	int stopped;
	int drained;
	uint64_t polls;
	uint64_t encoded;
	uint64_t bytes;
	char errmsg[256];
};

static const char *fake_dir(void)
{
	const char *d = getenv("OTELPROF_FAKE_DIR");
	return d && *d ? d : FAKE_DIR;
}

static void fake_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", fake_dir(), name);
}

static void fake_log(const char *fmt, ...)
{
	char path[4096];
	FILE *f;
	va_list ap;

	fake_path(path, sizeof(path), "log");
	f = fopen(path, "a");
	if (!f)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

/* Reads a whole control file; returns NULL if absent. */
static uint8_t *read_file(const char *name, size_t *size)
{
	char path[4096];
	uint8_t *buf = NULL;
	long n;
	FILE *f;

	fake_path(path, sizeof(path), name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else if (buf) {
			buf[n] = 0;
			*size = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}

static void first_line(char *dst, size_t len, const uint8_t *src)
{
	size_t i;

	for (i = 0; i + 1 < len && src[i] && src[i] != '\n'; i++)
		dst[i] = (char)src[i];
	dst[i] = 0;
}

int otelprof_start(const struct otelprof_opts *opts, struct otelprof **out,
		   char *errbuf, size_t errbuf_len)
{
	struct otelprof *p;
	uint8_t *err;
	size_t n;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (opts)
		fake_log("start sz=%zu freq=%u pid=%d host=%s ringbuf_kb=%u flags=%u max_frames=%u reserved=%u symbol_budget_mb=%u file_budget_mb=%u btf=%s debuginfod=%s max_freq=%u prob=%u/%ums env=%s off_cpu=%g",
			 opts->sz, opts->frequency_hz, opts->pid,
			 opts->host_name ? opts->host_name : "(null)",
			 opts->ringbuf_kb, opts->flags, opts->max_frames,
			 opts->reserved0, opts->symbol_budget_mb,
			 opts->file_budget_mb,
			 opts->sz > offsetof(struct otelprof_opts, btf_path) &&
					 opts->btf_path
				 ? opts->btf_path
				 : "(null)",
			 opts->sz > offsetof(struct otelprof_opts,
					     debuginfod_urls) &&
					 opts->debuginfod_urls
				 ? opts->debuginfod_urls
				 : "(null)",
			 opts->max_frequency_hz, opts->probabilistic_threshold,
			 opts->probabilistic_interval_ms,
			 opts->sz > offsetof(struct otelprof_opts,
					     include_env_vars) &&
					 opts->include_env_vars
				 ? opts->include_env_vars
				 : "(null)",
			 opts->sz >= offsetof(struct otelprof_opts,
					      off_cpu_threshold) +
						 sizeof(double)
				 ? opts->off_cpu_threshold
				 : 0.0);
	else
		fake_log("start opts=NULL");
	err = read_file("start_error", &n);
	if (err) {
		if (errbuf && errbuf_len > 0)
			first_line(errbuf, errbuf_len, err);
		free(err);
		return -EPERM;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	*out = p;
	return 0;
}

int otelprof_poll(struct otelprof *p, uint8_t **data, size_t *size)
{
	uint8_t *buf, *err;
	size_t n = 0, m = 0;
	int samples = 1;

	if (!p || !data || !size)
		return -EINVAL;
	*data = NULL;
	*size = 0;
	err = read_file("poll_error", &n);
	if (err) {
		first_line(p->errmsg, sizeof(p->errmsg), err);
		free(err);
		fake_log("poll error");
		return -EIO;
	}
	p->errmsg[0] = 0;
	if (p->stopped && p->drained) {
		fake_log("poll empty");
		return 0;
	}
	if (p->stopped)
		p->drained = 1;
	buf = read_file("payload.bin", &n);
	if (!buf || n == 0) {
		free(buf);
		fake_log("poll empty");
		return 0;
	}
	err = read_file("samples", &m);
	if (err) {
		samples = atoi((const char *)err);
		free(err);
	}
	*data = buf;
	*size = n;
	p->polls++;
	p->encoded += (uint64_t)samples;
	p->bytes += n;
	fake_log("poll %zu bytes%s", n, p->stopped ? " final" : "");
	return samples;
}

void otelprof_buffer_free(uint8_t *data)
{
	free(data);
}

int otelprof_stop(struct otelprof *p)
{
	if (!p)
		return -EINVAL;
	if (!p->stopped)
		fake_log("stop");
	p->stopped = 1;
	return 0;
}

void otelprof_close(struct otelprof *p)
{
	if (!p)
		return;
	fake_log("close");
	free(p);
}

int otelprof_stats(struct otelprof *p, struct otelprof_stats *stats)
{
	struct otelprof_stats s;
	size_t n;

	if (!p || !stats || stats->sz < sizeof(size_t))
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	s.sz = sizeof(s);
	s.samples_received = p->encoded + 7;
	s.samples_lost = 3;
	s.samples_encoded = p->encoded;
	s.processes_tracked = 42;
	s.polls = p->polls;
	s.bytes_encoded = p->bytes;
	n = stats->sz < sizeof(s) ? stats->sz : sizeof(s);
	memcpy((char *)stats + sizeof(size_t), (char *)&s + sizeof(size_t),
	       n - sizeof(size_t));
	return 0;
}

int otelprof_set_frequency(struct otelprof *p, uint32_t hz)
{
	if (!p)
		return -EINVAL;
	fake_log("set_frequency %u", hz);
	if (!hz || hz > 1000) {
		snprintf(p->errmsg, sizeof(p->errmsg),
			 "frequency %u Hz is out of range (1..1000)", hz);
		return -EINVAL;
	}
	return 0;
}

const char *otelprof_errmsg(struct otelprof *p)
{
	return p ? p->errmsg : "";
}

const char *otelprof_version(void)
{
	return "0.1.0-fake";
}
