// SPDX-License-Identifier: Apache-2.0
/* `otelprof record`: profile through the public ABI, write one OTLP file. */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "otelprofiler.h"
#include "output_file.h"
#include "stats_summary.h"

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

int cmd_record(const struct record_args *a)
{
	struct otelprof_opts opts;
	struct otelprof_stats st;
	struct output_file out;
	struct otelprof *p;
	struct sigaction sa;
	char err[1024];
	uint8_t *data = NULL;
	size_t len = 0;
	int n, e;

	memset(&opts, 0, sizeof(opts));
	opts.sz = sizeof(opts);
	opts.frequency_hz = a->frequency;
	opts.pid = a->pid;
	opts.ringbuf_kb = a->ringbuf_kb;
	opts.symbol_budget_mb = a->symbol_budget_mb;
	opts.file_budget_mb = a->file_budget_mb;
	opts.btf_path = a->btf;
	opts.debuginfod_urls = a->debuginfod;
	opts.probabilistic_threshold = a->prob_threshold;
	opts.probabilistic_interval_ms = a->prob_interval_s * 1000;
	opts.include_env_vars = a->env_vars;
	opts.off_cpu_threshold = a->off_cpu;
	/* A recording by hand must not answer the agents the host's own
	 * profiler answers: its ids would reach the agent's transactions
	 * and never the backend. */
	if (!a->apm_agents)
		opts.flags |= OTELPROF_F_NO_APM_AGENTS;
	/* The output first: a path we cannot write fails now, not after the
	 * whole recording. */
	e = output_open(&out, a->output, err, sizeof(err));
	if (e) {
		fprintf(stderr, "otelprof: %s\n", err);
		return 1;
	}
	/* Before start: a signal during it must still end in a file. A
	 * closed terminal (SIGHUP) stops the recording like Ctrl-C. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	e = otelprof_start(&opts, &p, err, sizeof(err));
	if (e) {
		fprintf(stderr, "otelprof: cannot start: %s\n", err);
		output_abort(&out);
		return 1;
	}
	memset(&st, 0, sizeof(st));
	st.sz = sizeof(st);
	if (!a->quiet && !otelprof_stats(p, &st) && st.kernel_fallbacks) {
		if (st.kernel_fallbacks & OTELPROF_FALLBACK_NO_BPF_LOOP)
			fprintf(stderr,
				"otelprof: kernel without bpf_loop (5.17): "
				"user "
				"stacks walked by chained programs (more BPF "
				"time per sample), at most %llu frames\n",
				(unsigned long long)st.max_frames);
		if (st.kernel_fallbacks & OTELPROF_FALLBACK_NO_TASK_PT_REGS)
			fprintf(stderr,
				"otelprof: %s: user registers read from the "
				"kernel stack\n",
				a->btf ? "BTF from --btf (bpf_task_pt_regs "
					 "needs the kernel's own)"
				       : "kernel without bpf_task_pt_regs "
					 "(5.15)");
		if (st.kernel_fallbacks & OTELPROF_FALLBACK_PREALLOC_MAPS)
			fprintf(stderr,
				"otelprof: kernel before 6.1: BPF hash maps "
				"preallocated (8 MiB each at most; fewer "
				"processes unwound in the kernel)\n");
	}
	if (!a->quiet && a->duration)
		fprintf(stderr,
			"otelprof: recording %s at %u Hz for %u s (Ctrl-C "
			"stops)\n",
			a->pid ? "one process" : "all CPUs", a->frequency,
			a->duration);
	else if (!a->quiet)
		fprintf(stderr,
			"otelprof: recording %s at %u Hz until Ctrl-C or "
			"SIGTERM\n",
			a->pid ? "one process" : "all CPUs", a->frequency);
	/* duration 0: until a signal */
	for (unsigned s = 0; (!a->duration || s < a->duration) && !interrupted;
	     s++) {
		struct timespec one = {1, 0};

		while (nanosleep(&one, &one) && !interrupted)
			;
		if (!a->quiet && (!a->duration || a->duration >= 10) &&
		    (s + 1) % 5 == 0 && (!a->duration || s + 1 < a->duration)) {
			memset(&st, 0, sizeof(st));
			st.sz = sizeof(st);
			otelprof_stats(p, &st);
			if (a->duration)
				fprintf(stderr, "otelprof: %u/%u s, ", s + 1,
					a->duration);
			else
				fprintf(stderr, "otelprof: %u s, ", s + 1);
			fprintf(stderr,
				"%llu samples, %llu lost, "
				"%llu processes tracked, %llu KiB of symbols "
				"from %llu files\n",
				(unsigned long long)st.samples_received,
				(unsigned long long)st.samples_lost,
				(unsigned long long)st.processes_tracked,
				(unsigned long long)st.symbol_memory_bytes >>
					10,
				(unsigned long long)st.files_loaded);
		}
	}
	otelprof_stop(p);
	n = otelprof_poll(p, &data, &len);
	memset(&st, 0, sizeof(st));
	st.sz = sizeof(st);
	otelprof_stats(p, &st);
	if (n < 0) {
		fprintf(stderr, "otelprof: %s\n", otelprof_errmsg(p));
		output_abort(&out);
		otelprof_close(p);
		return 1;
	}
	e = output_commit(&out, data, len, err, sizeof(err));
	otelprof_buffer_free(data);
	if (e) {
		fprintf(stderr, "otelprof: cannot write %s: %s\n", a->output,
			err);
		otelprof_close(p);
		return 1;
	}
	if (!a->quiet)
		fprintf(stderr,
			"otelprof: wrote %d samples (%zu bytes) to %s; "
			"lost %llu (and %llu process events), unresolved "
			"processes %llu, malformed files %llu, reused pids "
			"%llu\n",
			n, len, a->output, (unsigned long long)st.samples_lost,
			(unsigned long long)st.task_events_lost,
			(unsigned long long)st.proc_scan_errors,
			(unsigned long long)st.files_malformed,
			(unsigned long long)st.pid_reuses);
	if (!a->quiet)
		stats_summary_print(stderr, &st);
	otelprof_close(p);
	if (a->report)
		return report_of_recording(a->output, a->report, a->quiet);
	return 0;
}
