// SPDX-License-Identifier: Apache-2.0
/* Validation of the caller's options (docs/abi.md: sz-versioned). */
#include "agent/options.h"
#include "filestore/debuginfod.h"
#include "process/proc_environ.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>

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
	OPT_END(debuginfod_urls),
	OPT_END(max_frequency_hz),
	OPT_END(probabilistic_threshold),
	OPT_END(probabilistic_interval_ms),
	OPT_END(reserved1),
	OPT_END(include_env_vars),
	OPT_END(off_cpu_threshold),
};

/* One sample event with a full stack copy, and the ring buffer's own
 * 8-byte record header. */
#define MIN_RINGBUF_BYTES (sizeof(struct otelprof_sample_event) + 8)

int agent_parse_opts(const struct otelprof_opts *in, struct otelprof_opts *o,
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
	if (o->frequency_hz > AGENT_MAX_FREQUENCY_HZ)
		return errmsg_set(err, -EINVAL,
				  "frequency %u Hz is out of range (1..%u)",
				  o->frequency_hz, AGENT_MAX_FREQUENCY_HZ);
	if (o->max_frequency_hz > AGENT_MAX_FREQUENCY_HZ ||
	    (o->max_frequency_hz &&
	     o->max_frequency_hz < (o->frequency_hz
					    ? o->frequency_hz
					    : OTELPROF_DEFAULT_FREQUENCY_HZ)))
		return errmsg_set(err, -EINVAL,
				  "max_frequency_hz %u is out of range "
				  "(frequency_hz..%u)",
				  o->max_frequency_hz, AGENT_MAX_FREQUENCY_HZ);
	if (o->reserved1)
		return errmsg_set(err, -EINVAL,
				  "otelprof_opts.reserved1 is %u: reserved "
				  "fields must be zero",
				  o->reserved1);
	if (o->probabilistic_threshold > 100)
		return errmsg_set(err, -EINVAL,
				  "probabilistic_threshold %u is out of range "
				  "(1..100; 0 = 100, always on)",
				  o->probabilistic_threshold);
	if (o->probabilistic_interval_ms &&
	    (o->probabilistic_interval_ms < AGENT_MIN_PROB_INTERVAL_MS ||
	     o->probabilistic_interval_ms > AGENT_MAX_PROB_INTERVAL_MS))
		return errmsg_set(err, -EINVAL,
				  "probabilistic_interval_ms %u is out of "
				  "range (%u..%u; 0 = 60000)",
				  o->probabilistic_interval_ms,
				  AGENT_MIN_PROB_INTERVAL_MS,
				  AGENT_MAX_PROB_INTERVAL_MS);
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
	if (o->debuginfod_urls && *o->debuginfod_urls) {
		struct debuginfod d;
		const char *why;
		int e;

		debuginfod_init(&d);
		e = debuginfod_set_urls(&d, o->debuginfod_urls, &why);
		debuginfod_free(&d);
		if (e)
			return errmsg_set(err, e, "debuginfod_urls: %s", why);
	}
	if (o->include_env_vars) {
		struct env_names names;
		const char *why;

		if (env_names_parse(o->include_env_vars, &names, &why))
			return errmsg_set(err, -EINVAL, "include_env_vars: %s",
					  why);
	}
	/* Written so that NaN fails too. */
	if (!(o->off_cpu_threshold >= 0.0 && o->off_cpu_threshold <= 1.0))
		return errmsg_set(err, -EINVAL,
				  "off_cpu_threshold %g is out of range: a "
				  "probability in [0, 1] (0 = off)",
				  o->off_cpu_threshold);
	if (o->file_budget_mb && o->symbol_budget_mb &&
	    o->file_budget_mb > o->symbol_budget_mb)
		return errmsg_set(err, -EINVAL,
				  "file_budget_mb %u exceeds symbol_budget_mb "
				  "%u",
				  o->file_budget_mb, o->symbol_budget_mb);
	return 0;
}

/* Bytes of one sample as the ring buffer is sized: a record carries only
 * the frames it has, 383 bytes on average on a host running Perl, PHP,
 * Ruby, Java and Node tests (docs/performance.md); stack copies of new
 * processes (8 KiB) come in bursts. */
#define RINGBUF_SAMPLE_BYTES 1024u

uint32_t agent_ringbuf_bytes(uint32_t kb, uint32_t hz, int ncpu)
{
	uint64_t want, pow2 = 4096;

	if (kb) {
		want = (uint64_t)kb * 1024;
	} else {
		want = (uint64_t)hz * (uint64_t)(ncpu > 0 ? ncpu : 1) *
		       RINGBUF_SAMPLE_BYTES * AGENT_RINGBUF_WINDOW_MS / 1000;
		if (want < AGENT_RINGBUF_MIN_BYTES)
			want = AGENT_RINGBUF_MIN_BYTES;
		if (want > AGENT_RINGBUF_MAX_BYTES)
			want = AGENT_RINGBUF_MAX_BYTES;
	}
	while (pow2 < want)
		pow2 <<= 1;
	return (uint32_t)pow2;
}

uint32_t agent_ringbuf_hz(uint32_t ringbuf_bytes, int ncpu)
{
	uint64_t hz = (uint64_t)ringbuf_bytes * 1000 /
		      ((uint64_t)(ncpu > 0 ? ncpu : 1) * RINGBUF_SAMPLE_BYTES *
		       AGENT_RINGBUF_WINDOW_MS);

	return hz > AGENT_DEFAULT_CEILING_HZ ? AGENT_DEFAULT_CEILING_HZ
					     : (uint32_t)hz;
}
