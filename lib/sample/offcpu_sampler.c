// SPDX-License-Identifier: Apache-2.0
#include "sample/offcpu_sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "offcpu.skel.h"

struct offcpu_sampler {
	struct offcpu_bpf *skel;
	struct bpf_program *entry; /* the program attached to sched_switch */
	struct bpf_link *link;
	bool stopped; /* detached for good */
};

/* The sampler's maps this object walks and reports through; its scratch
 * maps and program array stay its own (a raw_tp program cannot tail-call
 * into the sampler's perf_event ones). */
static const char *const shared_maps[] = {
	"events",	"counters",	 "unwind_files",
	"unwind_procs", "big_mappings",	 "ctx_procs",
	"last_copy",	"runtime_procs", NULL,
};

/* The probability as the BPF side compares it: out of 2^32, every
 * switch-out at 1. */
static uint32_t threshold_u32(double t)
{
	double v = t * 4294967296.0;

	return t >= 1.0 || v >= 4294967295.0 ? 0xffffffffu : (uint32_t)v;
}

static int load(struct offcpu_sampler *o, struct bpf_sampler *s,
		double threshold, uint32_t target_tgid, bool attach,
		struct errmsg *err)
{
	uint32_t max_frames, fallbacks = bpf_sampler_fallbacks(s, &max_frames);
	bool chained = fallbacks & OTELPROF_FALLBACK_NO_BPF_LOOP;
	char *log = malloc(BPF_SAMPLER_LOG_BYTES), *stats;
	uint64_t t0;
	int e, fd, slot = OTELPROF_PROG_WALK;

	if (!log)
		return errmsg_set(err, -ENOMEM, "out of memory");
	log[0] = '\0';
	{
		LIBBPF_OPTS(bpf_object_open_opts, oo,
			    .btf_custom_path = bpf_sampler_btf_path(s),
			    .kernel_log_buf = log,
			    .kernel_log_size = BPF_SAMPLER_LOG_BYTES);

		o->skel = offcpu_bpf__open_opts(&oo);
	}
	if (!o->skel) {
		e = -errno;
		errmsg_set(err, e, "cannot open the off-CPU BPF object: %s",
			   strerror(-e));
		goto out;
	}
	o->skel->rodata->target_tgid = target_tgid;
	o->skel->rodata->max_user_frames = max_frames;
	o->skel->rodata->offcpu_threshold = threshold_u32(threshold);
	o->skel->rodata->have_task_pt_regs =
		!(fallbacks & OTELPROF_FALLBACK_NO_TASK_PT_REGS);
	bpf_program__set_autoload(o->skel->progs.off_cpu_switch, !chained);
	bpf_program__set_autoload(o->skel->progs.off_cpu_switch_chained,
				  chained);
	bpf_program__set_autoload(o->skel->progs.off_cpu_walk, chained);
	e = bpf_sampler_share_maps(s, o->skel->obj, shared_maps, err);
	if (e)
		goto out;
	stats = bpf_sampler_stats_logs_set(o->skel->obj);
	t0 = bpf_sampler_now_ns();
	e = offcpu_bpf__load(o->skel);
	if (e) {
		free(stats);
		errmsg_set(err, e,
			   "loading the off-CPU BPF program: %s: verifier: %s",
			   strerror(-e), bpf_sampler_verdict(log));
		goto out;
	}
	bpf_sampler_stats_logs_take(s, o->skel->obj, stats,
				    bpf_sampler_now_ns() - t0);
	if (chained) {
		fd = bpf_program__fd(o->skel->progs.off_cpu_walk);
		if (bpf_map_update_elem(bpf_map__fd(o->skel->maps.walk_progs),
					&slot, &fd, BPF_ANY)) {
			e = -errno;
			errmsg_set(err, e, "off-CPU walk_progs: %s",
				   strerror(-e));
			goto out;
		}
	}
	o->entry = chained ? o->skel->progs.off_cpu_switch_chained
			   : o->skel->progs.off_cpu_switch;
	e = attach ? offcpu_sampler_set_enabled(o, true) : 0;
	if (e)
		errmsg_set(err, e,
			   "cannot attach raw tracepoint sched_switch: %s",
			   strerror(-e));
out:
	free(log);
	return e;
}

int offcpu_sampler_open(struct bpf_sampler *s, double threshold,
			uint32_t target_tgid, bool attach,
			struct offcpu_sampler **out, struct errmsg *err)
{
	struct offcpu_sampler *o;
	int e;

	*out = NULL;
	if (!(threshold > 0.0 && threshold <= 1.0))
		return errmsg_set(err, -EINVAL,
				  "off_cpu_threshold %g is out of range [0, 1]",
				  threshold);
	o = calloc(1, sizeof(*o));
	if (!o)
		return errmsg_set(err, -ENOMEM, "out of memory");
	e = load(o, s, threshold, target_tgid, attach, err);
	if (e) {
		offcpu_sampler_close(o);
		return e;
	}
	*out = o;
	return 0;
}

int offcpu_sampler_set_enabled(struct offcpu_sampler *o, bool on)
{
	if (!o || o->stopped || on == (o->link != NULL))
		return 0;
	if (!on) {
		bpf_link__destroy(o->link);
		o->link = NULL;
		return 0;
	}
	o->link = bpf_program__attach(o->entry);
	return o->link ? 0 : -errno;
}

void offcpu_sampler_detach(struct offcpu_sampler *o)
{
	if (!o)
		return;
	offcpu_sampler_set_enabled(o, false);
	o->stopped = true;
}

void offcpu_sampler_close(struct offcpu_sampler *o)
{
	if (!o)
		return;
	offcpu_sampler_detach(o);
	offcpu_bpf__destroy(o->skel);
	free(o);
}
