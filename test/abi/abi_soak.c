// SPDX-License-Identifier: Apache-2.0
/*
 * A long recording through the public ABI, the way the Collector runs it:
 * start, poll every --poll-ms, stop on --duration or SIGINT/SIGTERM. Used by
 * the hostile integration tests (exec storm, 1000 Hz overflow). After every
 * poll it prints one JSON line with otelprof_stats and what the process
 * holds: RSS, fds, threads, BPF maps/programs/links (fds whose fdinfo has a
 * map_id/prog_id/link_id), the entries of the library's unwind_procs
 * map and its per-file row arrays by size. After stop it reads the library's
 * own per-CPU `counters` map (what the BPF program counted) so a test can check
 * that what was delivered plus what was dropped adds up; after close it prints
 * what is left.
 *
 * Usage: abi_soak [--duration S] [--frequency HZ] [--ringbuf-kb N]
 *                 [--pid PID] [--poll-ms MS] [--out-dir DIR] [--dump-procs 1]
 *                 [--symbol-budget-mb N] [--file-budget-mb N]
 *                 [--max-frequency HZ] [--set-frequency-at S:HZ]
 *                 [--probabilistic-threshold N]
 *                 [--probabilistic-interval-ms MS] [--env-vars NAMES]
 *                 [--cpu-of PID]
 * --set-frequency-at calls otelprof_set_frequency S seconds after start
 * ({"event":"set_frequency",...}) and prints {"event":"mark",...} one
 * second later; those lines, "started" and "stopping" carry the wall clock
 * (unix_ns) and, with --pid, the CPU time of that process from
 * /proc/PID/schedstat (target_cpu_ns; --cpu-of PID for another process
 * than --pid's), to judge sample counts against.
 * --out-dir writes every poll's payload to DIR/poll-NNNNN.otlp;
 * --dump-procs lists the pids in unwind_procs in every line.
 * Lines: {"event":"started",...} {"event":"poll",...} {"event":"final",...}
 *        {"event":"closed",...}; on a failed start {"event":"error",...}
 *        and exit 1.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "otelprofiler.h"

/* Keep in sync with enum otelprof_counter (ebpf/profiler_types.h): this
 * program sees the library only through its ABI and the kernel. */
enum {
	CNT_SAMPLES = 0,
	CNT_LOST = 1,
	CNT_IDLE = 2,
	CNT_TASK_EVENTS_LOST = 5,
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	/* opendir's own fd is counted in /proc/self/fd: not ours to hold. */
	return strcmp(path, "/proc/self/fd") ? n : n - 1;
}

/* A line of /proc/self/status in kB: "VmRSS: %ld kB" or VmHWM (peak). */
static long status_kb(const char *fmt)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, fmt, &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static long rss_kb(void)
{
	return status_kb("VmRSS: %ld kB");
}

#define MAX_ROW_SIZES 64

struct bpf_objs {
	long maps, progs, links;
	int counters_id, procs_id; /* map ids of the library's maps, 0 if
				      not found */
	/* per-file unwind row arrays ("otelprof_rows") by size */
	struct {
		uint32_t rows;
		long n;
	} row_sizes[MAX_ROW_SIZES];
	int nrow_sizes;
};

static void map_info(int id, char *name, size_t len, uint32_t *max_entries)
{
	struct bpf_map_info info;
	__u32 ilen = sizeof(info);
	int fd = bpf_map_get_fd_by_id((__u32)id);

	name[0] = '\0';
	*max_entries = 0;
	if (fd < 0)
		return;
	memset(&info, 0, sizeof(info));
	if (!bpf_obj_get_info_by_fd(fd, &info, &ilen)) {
		snprintf(name, len, "%s", info.name);
		*max_entries = info.max_entries;
	}
	close(fd);
}

static void count_rows_map(struct bpf_objs *o, uint32_t rows)
{
	for (int i = 0; i < o->nrow_sizes; i++) {
		if (o->row_sizes[i].rows == rows) {
			o->row_sizes[i].n++;
			return;
		}
	}
	if (o->nrow_sizes < MAX_ROW_SIZES) {
		o->row_sizes[o->nrow_sizes].rows = rows;
		o->row_sizes[o->nrow_sizes++].n = 1;
	}
}

/* BPF objects this process holds an fd of (through the library). */
static void scan_bpf(struct bpf_objs *o)
{
	DIR *d = opendir("/proc/self/fdinfo");
	struct dirent *e;

	memset(o, 0, sizeof(*o));
	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[300], line[256];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			int id;

			if (sscanf(line, "map_id: %d", &id) == 1) {
				char name[32];
				uint32_t max;

				o->maps++;
				map_info(id, name, sizeof(name), &max);
				if (!strcmp(name, "counters"))
					o->counters_id = id;
				else if (!strcmp(name, "unwind_procs"))
					o->procs_id = id;
				else if (!strcmp(name, "otelprof_rows"))
					count_rows_map(o, max);
			} else if (sscanf(line, "prog_id: %d", &id) == 1) {
				o->progs++;
			} else if (sscanf(line, "link_id: %d", &id) == 1) {
				o->links++;
			}
		}
		fclose(f);
	}
	closedir(d);
}

static int dump_procs; /* --dump-procs: list the pids in unwind_procs */

/* Entries of the library's unwind_procs map (pid -> mappings); with
 * --dump-procs their pids too, as ,"bpf_proc_pids":[...]. */
static long map_entries(int id, bool print)
{
	uint32_t key, next;
	long n = 0;
	int fd = id ? bpf_map_get_fd_by_id((__u32)id) : -1;

	if (fd < 0)
		return -1;
	if (print)
		printf(",\"bpf_proc_pids\":[");
	if (!bpf_map_get_next_key(fd, NULL, &next)) {
		do {
			if (print)
				printf("%s%u", n ? "," : "", next);
			n++;
			key = next;
		} while (!bpf_map_get_next_key(fd, &key, &next));
	}
	if (print)
		printf("]");
	close(fd);
	return n;
}

/* Sum over CPUs of one slot of the library's per-CPU counters map. */
static long long bpf_counter(int id, uint32_t which)
{
	long long sum = 0;
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;
	int fd;

	if (!id || ncpu <= 0)
		return -1;
	fd = bpf_map_get_fd_by_id((__u32)id);
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (fd < 0 || !vals || bpf_map_lookup_elem(fd, &which, vals)) {
		if (fd >= 0)
			close(fd);
		free(vals);
		return -1;
	}
	for (int i = 0; i < ncpu; i++)
		sum += (long long)vals[i];
	close(fd);
	free(vals);
	return sum;
}

#define STATS_FIELDS(X)                                                        \
	X(samples_received)                                                    \
	X(samples_lost)                                                        \
	X(samples_idle)                                                        \
	X(samples_encoded)                                                     \
	X(kernel_stack_errors)                                                 \
	X(user_stack_errors)                                                   \
	X(proc_scan_errors)                                                    \
	X(files_malformed)                                                     \
	X(files_loaded)                                                        \
	X(processes_tracked)                                                   \
	X(symbol_memory_bytes)                                                 \
	X(polls)                                                               \
	X(bytes_encoded)                                                       \
	X(unwind_complete)                                                     \
	X(unwind_truncated)                                                    \
	X(unwind_err_rule)                                                     \
	X(unwind_err_read)                                                     \
	X(unwind_err_loop)                                                     \
	X(unwind_no_mapping)                                                   \
	X(stack_copies)                                                        \
	X(unwind_files)                                                        \
	X(unwind_rows)                                                         \
	X(unwind_map_bytes)                                                    \
	X(unwind_table_errors)                                                 \
	X(unwind_build_ns)                                                     \
	X(unwind_pending)                                                      \
	X(task_events_lost)                                                    \
	X(maps_changed_events)                                                 \
	X(maps_notify_held)                                                    \
	X(rescans_asked)                                                       \
	X(rescans_held)                                                        \
	X(drain_max_hold_ns)                                                   \
	X(files_refused)                                                       \
	X(files_over_budget)                                                   \
	X(budget_evictions)                                                    \
	X(budget_used_bytes)                                                   \
	X(cpus_onlined)                                                        \
	X(ctx_attrs_denied)                                                    \
	X(unwind_refused_process)                                              \
	X(unwind_refused_host)                                                 \
	X(samples_dropped_at_stop)                                             \
	X(add_errors)                                                          \
	X(unwind_over_budget)                                                  \
	X(budget_reloads)                                                      \
	X(demangle_refused)                                                    \
	X(unwind_procs_errors)                                                 \
	X(unwind_rows_unrepresentable)                                         \
	X(unwind_big_refused)                                                  \
	X(file_loads_retried)                                                  \
	X(debuginfod_lookups)                                                  \
	X(debuginfod_hits)                                                     \
	X(debuginfod_failures)                                                 \
	X(debuginfod_refused)                                                  \
	X(sampling_frequency_hz)                                               \
	X(frequency_changes)                                                   \
	X(perf_ioctl_errors)                                                   \
	X(probabilistic_intervals_on)                                          \
	X(probabilistic_intervals_off)                                         \
	X(events_malformed)                                                    \
	X(env_reads_refused)                                                   \
	X(env_values_dropped)                                                  \
	X(files_shared)                                                        \
	X(files_share_mismatch)                                                \
	X(files_share_unverified)                                              \
	X(processes_gone_young)                                                \
	X(exec_reads_skipped)

static void print_stats(struct otelprof *p)
{
	struct otelprof_stats st;

	memset(&st, 0, sizeof(st));
	st.sz = sizeof(st);
	if (otelprof_stats(p, &st))
		return;
#define X(f) printf(",\"" #f "\":%llu", (unsigned long long)st.f);
	STATS_FIELDS(X)
#undef X
}

static void print_process(void)
{
	struct bpf_objs o;

	scan_bpf(&o);
	printf(",\"rss_kb\":%ld,\"hwm_kb\":%ld,\"fds\":%ld,\"threads\":%ld,"
	       "\"bpf_maps\":%ld,"
	       "\"bpf_progs\":%ld,\"bpf_links\":%ld,\"bpf_procs\":%ld",
	       rss_kb(), status_kb("VmHWM: %ld kB"), count_dir("/proc/self/fd"),
	       count_dir("/proc/self/task"), o.maps, o.progs, o.links,
	       map_entries(o.procs_id, false));
	printf(",\"rows_maps\":{");
	for (int i = 0; i < o.nrow_sizes; i++)
		printf("%s\"%u\":%ld", i ? "," : "", o.row_sizes[i].rows,
		       o.row_sizes[i].n);
	printf("}");
	if (dump_procs)
		map_entries(o.procs_id, true);
}

static int write_payload(const char *dir, int seq, const uint8_t *data,
			 size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/poll-%05d.otlp", dir, seq);
	f = fopen(path, "wb");
	if (!f)
		return -errno;
	if (fwrite(data, 1, len, f) != len) {
		fclose(f);
		return -EIO;
	}
	return fclose(f) ? -errno : 0;
}

/* CPU time of pid (schedstat's first field), 0 if unreadable. */
static long long target_cpu_ns(int pid)
{
	char path[64];
	long long ns = 0;
	FILE *f;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/schedstat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lld", &ns) != 1)
		ns = 0;
	fclose(f);
	return ns;
}

/* When a line was printed and what the profiled process had run by then. */
static void print_clock(int pid)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	printf(",\"unix_ns\":%lld,\"target_cpu_ns\":%lld",
	       (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec,
	       target_cpu_ns(pid));
}

/* Poll once; prints nothing. Returns samples or -errno. */
static int poll_once(struct otelprof *p, const char *dir, int *seq,
		     long long *encoded)
{
	uint8_t *data;
	size_t len;
	int n = otelprof_poll(p, &data, &len);

	if (n < 0) {
		fprintf(stderr, "abi_soak: poll: %s\n", otelprof_errmsg(p));
		return n;
	}
	*encoded += n;
	if (n > 0 && dir && write_payload(dir, (*seq)++, data, len))
		fprintf(stderr, "abi_soak: cannot write to %s\n", dir);
	otelprof_buffer_free(data);
	return n;
}

int main(int argc, char **argv)
{
	struct otelprof_opts o;
	struct otelprof *p;
	struct sigaction sa;
	struct bpf_objs objs;
	double duration = 0, poll_s = 1, t0, t_stop, t_poll, stop_ms;
	double set_at = -1, mark_at = -1;
	unsigned set_hz = 0;
	int cpu_of = -1; /* whose CPU time print_clock reports */
	const char *dir = NULL;
	long long encoded = 0;
	char err[1024];
	long pre_fds, pre_threads, pre_rss;
	int e, seq = 0;

	memset(&o, 0, sizeof(o));
	o.sz = sizeof(o);
	o.frequency_hz = 99;
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (!strcmp(k, "--duration"))
			duration = atof(v);
		else if (!strcmp(k, "--frequency"))
			o.frequency_hz = (uint32_t)atoi(v);
		else if (!strcmp(k, "--ringbuf-kb"))
			o.ringbuf_kb = (uint32_t)atoi(v);
		else if (!strcmp(k, "--pid"))
			o.pid = atoi(v);
		else if (!strcmp(k, "--poll-ms"))
			poll_s = atof(v) / 1000;
		else if (!strcmp(k, "--out-dir"))
			dir = v;
		else if (!strcmp(k, "--dump-procs"))
			dump_procs = atoi(v);
		else if (!strcmp(k, "--symbol-budget-mb"))
			o.symbol_budget_mb = (uint32_t)atoi(v);
		else if (!strcmp(k, "--file-budget-mb"))
			o.file_budget_mb = (uint32_t)atoi(v);
		else if (!strcmp(k, "--max-frequency"))
			o.max_frequency_hz = (uint32_t)atoi(v);
		else if (!strcmp(k, "--set-frequency-at"))
			sscanf(v, "%lf:%u", &set_at, &set_hz);
		else if (!strcmp(k, "--probabilistic-threshold"))
			o.probabilistic_threshold = (uint32_t)atoi(v);
		else if (!strcmp(k, "--probabilistic-interval-ms"))
			o.probabilistic_interval_ms = (uint32_t)atoi(v);
		else if (!strcmp(k, "--cpu-of"))
			cpu_of = atoi(v);
		else if (!strcmp(k, "--env-vars"))
			o.include_env_vars = v;
		else {
			fprintf(stderr, "abi_soak: unknown option %s\n", k);
			return 2;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);

	pre_fds = count_dir("/proc/self/fd");
	pre_threads = count_dir("/proc/self/task");
	pre_rss = rss_kb();
	e = otelprof_start(&o, &p, err, sizeof(err));
	if (e) {
		printf("{\"event\":\"error\",\"errno\":%d}\n", -e);
		fprintf(stderr, "abi_soak: cannot start: %s\n", err);
		return 1;
	}
	t0 = mono_s();
	printf("{\"event\":\"started\",\"ncpu\":%ld,\"frequency_hz\":%u,"
	       "\"pre_fds\":%ld,\"pre_threads\":%ld,\"pre_rss_kb\":%ld",
	       sysconf(_SC_NPROCESSORS_ONLN), o.frequency_hz, pre_fds,
	       pre_threads, pre_rss);
	print_clock(cpu_of >= 0 ? cpu_of : o.pid);
	print_process();
	printf("}\n");
	while (!interrupted && (duration <= 0 || mono_s() - t0 < duration)) {
		double next = mono_s() + poll_s;
		int n;

		while (!interrupted && mono_s() < next) {
			struct timespec ms10 = {0, 10 * 1000 * 1000};

			nanosleep(&ms10, NULL);
			if (set_at >= 0 && mono_s() - t0 >= set_at) {
				e = otelprof_set_frequency(p, set_hz);
				printf("{\"event\":\"set_frequency\",\"hz\":%u,"
				       "\"rc\":%d",
				       set_hz, e);
				print_clock(cpu_of >= 0 ? cpu_of : o.pid);
				printf("}\n");
				if (e)
					fprintf(stderr,
						"abi_soak: set_frequency: %s\n",
						otelprof_errmsg(p));
				mark_at = set_at + 1;
				set_at = -1;
			}
			if (mark_at >= 0 && mono_s() - t0 >= mark_at) {
				printf("{\"event\":\"mark\"");
				print_clock(cpu_of >= 0 ? cpu_of : o.pid);
				printf("}\n");
				mark_at = -1;
			}
		}
		t_poll = mono_s();
		n = poll_once(p, dir, &seq, &encoded);
		if (n < 0)
			return 1;
		printf("{\"event\":\"poll\",\"t\":%.3f,\"n\":%d,"
		       "\"poll_ms\":%.1f",
		       mono_s() - t0, n, (mono_s() - t_poll) * 1000);
		print_stats(p);
		print_process();
		printf("}\n");
	}
	printf("{\"event\":\"stopping\"");
	print_clock(cpu_of >= 0 ? cpu_of : o.pid);
	printf("}\n");
	t_stop = mono_s();
	e = otelprof_stop(p);
	stop_ms = (mono_s() - t_stop) * 1000;
	if (e) {
		fprintf(stderr, "abi_soak: stop: %s\n", otelprof_errmsg(p));
		return 1;
	}
	/* Poll after stop: what was buffered, then nothing. */
	while ((e = poll_once(p, dir, &seq, &encoded)) > 0)
		;
	if (e < 0)
		return 1;
	scan_bpf(&objs);
	printf("{\"event\":\"final\",\"seconds\":%.3f,\"encoded_total\":%lld,"
	       "\"bpf_samples\":%lld,\"bpf_lost\":%lld,\"bpf_idle\":%lld,"
	       "\"bpf_task_events_lost\":%lld,\"stop_ms\":%.1f",
	       t_stop - t0, encoded, bpf_counter(objs.counters_id, CNT_SAMPLES),
	       bpf_counter(objs.counters_id, CNT_LOST),
	       bpf_counter(objs.counters_id, CNT_IDLE),
	       bpf_counter(objs.counters_id, CNT_TASK_EVENTS_LOST), stop_ms);
	print_stats(p);
	print_process();
	printf("}\n");
	otelprof_close(p);
	/* Joined threads leave /proc/self/task a moment after the join
	 * returns; a leaked one never does. Wait up to 2 s. */
	for (int w = 0; w < 200 && count_dir("/proc/self/task") > pre_threads;
	     w++) {
		struct timespec ms10 = {0, 10 * 1000 * 1000};

		nanosleep(&ms10, NULL);
	}
	printf("{\"event\":\"closed\"");
	print_process();
	printf("}\n");
	return 0;
}
