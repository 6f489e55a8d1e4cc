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
	if (!a->quiet)
		fprintf(stderr,
			"otelprof: recording %s at %u Hz for %u s (Ctrl-C "
			"stops)\n",
			a->pid ? "one process" : "all CPUs", a->frequency,
			a->duration);
	for (unsigned s = 0; s < a->duration && !interrupted; s++) {
		struct timespec one = {1, 0};

		while (nanosleep(&one, &one) && !interrupted)
			;
		if (!a->quiet && a->duration >= 10 && (s + 1) % 5 == 0 &&
		    s + 1 < a->duration) {
			memset(&st, 0, sizeof(st));
			st.sz = sizeof(st);
			otelprof_stats(p, &st);
			fprintf(stderr,
				"otelprof: %u/%u s, %llu samples, %llu lost, "
				"%llu processes tracked\n",
				s + 1, a->duration,
				(unsigned long long)st.samples_received,
				(unsigned long long)st.samples_lost,
				(unsigned long long)st.processes_tracked);
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
		fprintf(stderr,
			"otelprof: user stacks: %llu complete, %llu truncated, "
			"%llu stopped (rule %llu, read %llu, loop %llu, "
			"unknown "
			"code %llu), %llu unwound from stack copies, %llu cut "
			"at a table still loading; tables: "
			"%llu files, %llu rows, %llu KiB in the kernel, built "
			"in "
			"%llu ms; %llu files with unusable CFI\n",
			(unsigned long long)st.unwind_complete,
			(unsigned long long)st.unwind_truncated,
			(unsigned long long)(st.unwind_err_rule +
					     st.unwind_err_read +
					     st.unwind_err_loop +
					     st.unwind_no_mapping),
			(unsigned long long)st.unwind_err_rule,
			(unsigned long long)st.unwind_err_read,
			(unsigned long long)st.unwind_err_loop,
			(unsigned long long)st.unwind_no_mapping,
			(unsigned long long)st.stack_copies,
			(unsigned long long)st.unwind_pending,
			(unsigned long long)st.unwind_files,
			(unsigned long long)st.unwind_rows,
			(unsigned long long)(st.unwind_map_bytes / 1024),
			(unsigned long long)(st.unwind_build_ns / 1000000),
			(unsigned long long)st.unwind_table_errors);
	if (!a->quiet &&
	    (st.unwind_procs_errors || st.unwind_rows_unrepresentable ||
	     st.unwind_big_refused))
		fprintf(stderr,
			"otelprof: unwind losses: %llu processes not written "
			"to the kernel (frame pointers only), %llu CFI rows "
			"the kernel cannot follow, %llu processes with extra "
			"mappings refused\n",
			(unsigned long long)st.unwind_procs_errors,
			(unsigned long long)st.unwind_rows_unrepresentable,
			(unsigned long long)st.unwind_big_refused);
	if (!a->quiet && (st.unwind_refused_process || st.unwind_refused_host ||
			  st.rescans_held || st.file_loads_retried))
		fprintf(stderr,
			"otelprof: fair shares: %llu unwind tables refused "
			"for their process's share, %llu for the host's "
			"(frame pointers instead); %llu rescans and %llu "
			"file reads put off\n",
			(unsigned long long)st.unwind_refused_process,
			(unsigned long long)st.unwind_refused_host,
			(unsigned long long)st.rescans_held,
			(unsigned long long)st.file_loads_retried);
	if (!a->quiet && st.add_errors)
		fprintf(stderr,
			"otelprof: %llu samples, links or context attributes "
			"could not be added to the profile (out of memory or "
			"a table full)\n",
			(unsigned long long)st.add_errors);
	if (!a->quiet && (st.files_refused || st.files_over_budget ||
			  st.budget_evictions || st.unwind_over_budget))
		fprintf(stderr,
			"otelprof: hostile input: %llu mapped files refused "
			"(not regular files), %llu over the per-file budget "
			"(symbols), %llu (unwind tables), %llu evicted for the "
			"total budget (%llu read again)\n",
			(unsigned long long)st.files_refused,
			(unsigned long long)st.files_over_budget,
			(unsigned long long)st.unwind_over_budget,
			(unsigned long long)st.budget_evictions,
			(unsigned long long)st.budget_reloads);
	if (!a->quiet && (st.debuginfod_lookups || st.debuginfod_refused))
		fprintf(stderr,
			"otelprof: debuginfod: %llu build ids asked, %llu "
			"debug "
			"files taken, %llu failed, %llu refused\n",
			(unsigned long long)st.debuginfod_lookups,
			(unsigned long long)st.debuginfod_hits,
			(unsigned long long)st.debuginfod_failures,
			(unsigned long long)st.debuginfod_refused);
	if (!a->quiet && (st.ctx_samples || st.ctx_tls_resolved ||
			  st.ctx_process_reads || st.ctx_process_errors))
		fprintf(stderr,
			"otelprof: trace context: %llu samples linked, %llu "
			"unreadable; %llu TLS variables located; %llu process "
			"contexts read, %llu malformed; %llu attributes "
			"dropped\n",
			(unsigned long long)st.ctx_samples,
			(unsigned long long)st.ctx_read_errors,
			(unsigned long long)st.ctx_tls_resolved,
			(unsigned long long)st.ctx_process_reads,
			(unsigned long long)st.ctx_process_errors,
			(unsigned long long)st.ctx_attrs_dropped);
	if (!a->quiet && (st.apm_channels || st.apm_sockets_refused))
		fprintf(stderr,
			"otelprof: Elastic APM: %llu agent sockets registered "
			"with, %llu refused; %llu stack-trace correlations "
			"sent, %llu dropped\n",
			(unsigned long long)st.apm_channels,
			(unsigned long long)st.apm_sockets_refused,
			(unsigned long long)st.apm_messages_sent,
			(unsigned long long)st.apm_messages_dropped);
	if (!a->quiet && (st.interp_processes || st.interp_unknown_versions ||
			  st.jit_frames || st.jit_files_refused))
		fprintf(stderr,
			"otelprof: runtimes: %llu Python or Java processes "
			"(%llu with their own offsets, %llu unknown versions), "
			"%llu samples with Python or Java frames, %llu "
			"unreadable frames, %llu unreadable code objects or "
			"methods; %llu JIT frames named, "
			"%llu bad JIT map entries, %llu JIT files refused\n",
			(unsigned long long)st.interp_processes,
			(unsigned long long)st.interp_debug_offsets,
			(unsigned long long)st.interp_unknown_versions,
			(unsigned long long)st.interp_samples,
			(unsigned long long)st.interp_frame_errors,
			(unsigned long long)st.interp_code_errors,
			(unsigned long long)st.jit_frames,
			(unsigned long long)st.jit_bad_entries,
			(unsigned long long)st.jit_files_refused);
	otelprof_close(p);
	return 0;
}
