// SPDX-License-Identifier: Apache-2.0
/*
 * Process identity (pid + start_boottime from the kernel) against a fake
 * /proc (process_table.proc_root): a reused pid becomes a new process,
 * in-flight samples of an exited one stay with it, a sample of the image
 * before an exec is not filed under the new image, an exec event read
 * after the pid moved on keeps the event's identity, and a rescan reports
 * the mappings it added and removed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/process_table.h"
#include "util/clock.h"

#define PID 4242
#define MS  (1000ull * 1000)
#define SEC (1000 * MS)

static char root[64];

/* Write /proc/PID as a process named comm, running exe, started at tick
 * `start` (NULL comm: the process is gone). */
static void fake_proc(const char *comm, const char *exe, uint64_t start)
{
	char dir[128], path[192];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/%d", root, PID);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
	if (!comm)
		return;
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/stat", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"%d (%s) S 1 %d %d 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n",
		PID, comm, PID, PID, (unsigned long long)start);
	fclose(f);
	snprintf(path, sizeof(path), "%s/comm", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", comm);
	fclose(f);
	snprintf(path, sizeof(path), "%s/maps", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/exe", dir);
	assert_int_equal(symlink(exe, path), 0);
}

static int setup(void **state)
{
	static struct file_table files;
	struct process_table *t = calloc(1, sizeof(*t));

	snprintf(root, sizeof(root), "/tmp/otelprof-proc-XXXXXX");
	assert_non_null(mkdtemp(root));
	file_table_init(&files);
	process_table_init(t, &files);
	snprintf(t->proc_root, sizeof(t->proc_root), "%s", root);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	process_table_free(*state);
	free(*state);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

/* start_boottime (ns) of a process /proc shows as started at tick t
 * (USER_HZ 100), plus an offset inside the tick. */
#define START(t, off) ((uint64_t)(t)*10 * MS + (off))

static void reused_pid_is_a_new_process(void **state)
{
	struct process_table *t = *state;
	struct process *a, *p;
	uint64_t serial, sa = START(100, 3 * MS);

	fake_proc("reuse_a", "/bin/reuse_a", 100);
	a = process_table_get_sample(t, PID, PID, "reuse_a", sa, 10 * SEC);
	assert_non_null(a);
	serial = a->serial;
	process_table_exit(t, PID, sa, 11 * SEC);
	/* In flight (same start), read before or after the exit event,
	 * from any thread: the same process. */
	p = process_table_get_sample(t, PID, PID, "reuse_a", sa, 11 * SEC - MS);
	assert_int_equal(p->serial, serial);
	p = process_table_get_sample(t, PID, PID + 1, "worker", sa,
				     11 * SEC + 2 * MS);
	assert_int_equal(p->serial, serial);
	/* An exit event of another process under the pid changes nothing. */
	process_table_exit(t, PID, START(90, 0), 11 * SEC + 3 * MS);
	/* The pid now runs a process started later: a new one. */
	fake_proc("pidreuse", "/bin/pidreuse", 1200);
	p = process_table_get_sample(t, PID, PID, "pidreuse",
				     START(1200, 1 * MS), 12 * SEC);
	assert_int_not_equal(p->serial, serial);
	assert_string_equal(p->exe_path, "/bin/pidreuse");
	assert_int_equal(process_table_count(t), 1);
	assert_int_equal(t->counters.pid_reuses, 1);
}

static void reuse_within_one_tick(void **state)
{
	struct process_table *t = *state;
	struct process *p;
	uint64_t serial;

	/* Same /proc start tick, different start_boottime: the kernel's
	 * nanoseconds tell them apart, not names. */
	fake_proc("reuse_b", "/bin/reuse_b", 100);
	serial = process_table_get_sample(t, PID, PID, "reuse_b",
					  START(100, 1 * MS), SEC)
			 ->serial;
	fake_proc("reuse_b", "/bin/reuse_b", 100);
	p = process_table_get_sample(t, PID, PID, "reuse_b", START(100, 5 * MS),
				     SEC + 5 * MS);
	assert_int_not_equal(p->serial, serial);
	/* Gone by the time we look: still a process of its own, named
	 * after the sample. */
	serial = p->serial;
	fake_proc(NULL, NULL, 0);
	p = process_table_get_sample(t, PID, PID, "reuse_a", START(100, 8 * MS),
				     SEC + 12 * MS);
	assert_int_not_equal(p->serial, serial);
	assert_string_equal(p->comm, "reuse_a");
}

static void sample_before_exec_is_not_the_new_image(void **state)
{
	struct process_table *t = *state;
	struct process *p;

	/* The sample ran "storm"; /proc, read later, shows the exec'ed
	 * "storm_b" (an exec keeps the start time): a one-off entry under
	 * the sample's name. */
	fake_proc("storm_b", "/bin/storm_b", 100);
	p = process_table_get_sample(t, PID, PID, "storm", START(100, 0),
				     2 * SEC);
	assert_non_null(p);
	assert_true(p->ghost);
	assert_string_equal(p->comm, "storm");
	assert_string_equal(p->exe_path, "");
	assert_int_equal(p->maps.n, 0);
	assert_int_equal(process_table_count(t), 0);
	/* A sample that ran storm_b gets the real entry. */
	p = process_table_get_sample(t, PID, PID, "storm_b", START(100, 0),
				     2 * SEC + MS);
	assert_false(p->ghost);
	assert_string_equal(p->exe_path, "/bin/storm_b");
	assert_int_equal(process_table_count(t), 1);
}

static void late_exec_event_keeps_its_identity(void **state)
{
	struct process_table *t = *state;
	struct process *p;
	char path[256] = "/opt/w/reuse_a";
	uint64_t serial, sa = START(100, 0), sb = START(300, 0);

	/* Read in time: /proc agrees with the event. */
	fake_proc("reuse_a", "/opt/w/reuse_a", 100);
	process_table_exec(t, PID);
	p = process_table_get(t, PID, NULL, sa, 2 * SEC);
	process_set_exec_path(p, path, sizeof(path));
	assert_false(p->ghost);
	assert_string_equal(p->exe_path, "/opt/w/reuse_a");

	/* Read late: the pid runs a process started after ours. Nothing
	 * /proc says is ours; the event's path is. */
	fake_proc("reuse_b", "/opt/w/reuse_b", 300);
	process_table_exec(t, PID);
	p = process_table_get(t, PID, NULL, sa, 2 * SEC);
	process_set_exec_path(p, path, sizeof(path));
	assert_true(p->ghost);
	assert_string_equal(p->exe_path, "/opt/w/reuse_a");
	assert_string_equal(p->exe_name, "reuse_a");
	assert_int_equal(p->maps.n, 0);
	/* and no rescan brings reuse_b's mappings in */
	assert_false(process_table_rescan(t, p, 3 * SEC));
	/* Its samples stay with it; the next process's do not. */
	assert_ptr_equal(process_table_get_sample(t, PID, PID, "reuse_a", sa,
						  2 * SEC + MS),
			 p);
	serial = p->serial;
	p = process_table_get_sample(t, PID, PID, "reuse_b", sb,
				     2 * SEC + 3 * MS);
	assert_int_not_equal(p->serial, serial);
	assert_string_equal(p->exe_path, "/opt/w/reuse_b");
}

/* What the table reports, taken as the agent takes it. */
static struct process_change told;
static int ntold, nremoved;

static void take(struct process_table *t)
{
	struct process_change c;
	struct process *p;

	while ((p = process_table_take_removed(t))) {
		nremoved++;
		process_table_release(t, p);
	}
	while ((p = process_table_take_changed(t, &c))) {
		told = c;
		ntold++;
	}
}

static void write_maps(const char *text)
{
	char path[192];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/maps", root, PID);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

#define MAP_A "7f0000000000-7f0000001000 r-xp 00000000 08:01 11 /lib/a.so\n"
#define MAP_B "7f0000100000-7f0000101000 r-xp 00000000 08:01 12 /lib/b.so\n"
#define MAP_C "7f0000200000-7f0000201000 r-xp 00000000 08:01 13 /lib/c.so\n"

static bool fresh(const struct process *p, uint64_t start)
{
	for (size_t i = 0; i < p->maps.n; i++)
		if (p->maps.v[i].start == start)
			return p->maps.v[i].fresh;
	fail_msg("no mapping at %llx", (unsigned long long)start);
	return false;
}

/* The table reports a new process, and of a rescan only what it changed:
 * the mappings added (marked fresh) and removed. Changes not taken in
 * between are merged; a removed process is reported once, its pending
 * change dropped, and stays readable until released. */
static void rescan_reports_what_changed(void **state)
{
	struct process_table *t = *state;
	struct process *p, *q;
	struct process_change c;
	uint64_t s = START(100, 0);

	ntold = nremoved = 0;
	fake_proc("changes", "/bin/changes", 100);
	write_maps(MAP_A MAP_B);
	p = process_table_get_sample(t, PID, PID, "changes", s, SEC);
	assert_non_null(p);
	take(t);
	assert_int_equal(ntold, 1);
	assert_int_equal(told.why, PROCESS_NEW);
	assert_int_equal(p->maps.n, 2);

	write_maps(MAP_A MAP_C); /* b unmapped, c mapped */
	assert_true(process_table_rescan(t, p, 2 * SEC));
	take(t);
	assert_int_equal(ntold, 2);
	assert_int_equal(told.why, PROCESS_RESCANNED);
	assert_int_equal(told.added, 1);
	assert_int_equal(told.removed, 1);
	assert_false(fresh(p, 0x7f0000000000ull));
	assert_true(fresh(p, 0x7f0000200000ull));

	assert_true(process_table_rescan(t, p, 3 * SEC));
	take(t);
	assert_int_equal(told.added, 0);
	assert_int_equal(told.removed, 0);
	assert_false(fresh(p, 0x7f0000200000ull));

	/* Two rescans not taken in between: one change, counts added. */
	write_maps(MAP_A);
	assert_true(process_table_rescan(t, p, 3 * SEC + MS));
	write_maps(MAP_A MAP_B);
	assert_true(process_table_rescan(t, p, 3 * SEC + 2 * MS));
	q = process_table_take_changed(t, &c);
	assert_ptr_equal(q, p);
	assert_int_equal(c.why, PROCESS_RESCANNED);
	assert_int_equal(c.added, 1);
	assert_int_equal(c.removed, 1);
	assert_null(process_table_take_changed(t, &c));

	/* Changed, then removed before taken: removed only. */
	assert_true(process_table_rescan(t, p, 3 * SEC + 3 * MS));
	process_table_exec(t, PID);
	assert_null(process_table_find(t, PID));
	assert_null(process_table_take_changed(t, &c));
	q = process_table_take_removed(t);
	assert_ptr_equal(q, p);
	assert_true(q->removed);
	assert_int_equal(q->maps.n, 2); /* still readable */
	process_table_release(t, q);
	assert_null(process_table_take_removed(t));

	p = process_table_get_sample(t, PID, PID, "changes", s, 4 * SEC);
	assert_non_null(p);
	take(t);
	process_table_exit(t, PID, s, 4 * SEC);
	process_table_sweep(t, 5 * SEC); /* exited before 5 s: freed */
	take(t);
	assert_int_equal(nremoved, 1);
}

/* PID exec'ed (its earlier image's change taken): young from young_at. */
static struct process *exec_young(struct process_table *t, uint64_t now,
				  uint64_t young_at)
{
	struct process *p;

	process_table_exec(t, PID);
	take(t);
	p = process_table_get(t, PID, NULL, 0, now);
	assert_non_null(p);
	process_table_young(t, p, young_at);
	return p;
}

/* A process known from an exec waits for a sample before its first change
 * is taken (files, unwind tables, runtimes), until young_ns have passed;
 * one that exits unsampled is never taken (counted), unless a sample taken
 * before its exit is read after it. */
static void young_process_waits_for_a_sample(void **state)
{
	struct process_table *t = *state;
	struct process *p;
	uint64_t now = boot_ns();

	t->young_ns = 250 * MS;
	ntold = nremoved = 0;
	fake_proc("young", "/bin/young", 100);
	p = exec_young(t, now, now);
	take(t);
	assert_int_equal(ntold, 0);
	/* its first sample: taken now */
	assert_ptr_equal(process_table_get_sample(t, PID, PID, "young", 0, now),
			 p);
	take(t);
	assert_int_equal(ntold, 1);
	assert_int_equal(told.why, PROCESS_NEW);

	/* exec'ed again, unsampled past its wait: taken */
	exec_young(t, now, now - 300 * MS);
	take(t);
	assert_int_equal(ntold, 2);

	/* exec'ed again, exits unsampled: never taken, counted */
	p = exec_young(t, now, now);
	process_table_exit(t, PID, 0, now);
	assert_int_equal(t->counters.gone_young, 1);
	take(t);
	assert_int_equal(ntold, 2);
	/* a sample from before its exit, read after it: taken after all */
	assert_ptr_equal(process_table_get_sample(t, PID, PID, "young", 0, now),
			 p);
	assert_int_equal(t->counters.gone_young, 0);
	take(t);
	assert_int_equal(ntold, 3);
	assert_int_equal(told.why, PROCESS_NEW);

	/* and once more, gone for good: removed without being taken */
	exec_young(t, now, now);
	process_table_exit(t, PID, 0, now);
	process_table_sweep(t, now + 1);
	take(t);
	assert_int_equal(ntold, 3);
	assert_int_equal(t->counters.gone_young, 1);
	assert_int_equal(process_table_count(t), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(reused_pid_is_a_new_process,
						setup, teardown),
		cmocka_unit_test_setup_teardown(reuse_within_one_tick, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			sample_before_exec_is_not_the_new_image, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			late_exec_event_keeps_its_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(rescan_reports_what_changed,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			young_process_waits_for_a_sample, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
