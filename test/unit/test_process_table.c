// SPDX-License-Identifier: Apache-2.0
/*
 * Process identity against a fake /proc (process_table.proc_root): a
 * reused pid becomes a new process, in-flight samples of an exited one
 * stay with it, a sample of the image before an exec is not filed under
 * the new image, and an exec event read after the pid moved on keeps the
 * event's identity.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/process_table.h"

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
	static struct file_cache files;
	struct process_table *t = calloc(1, sizeof(*t));

	snprintf(root, sizeof(root), "/tmp/otelprof-proc-XXXXXX");
	assert_non_null(mkdtemp(root));
	file_cache_init(&files);
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

static void reused_pid_is_a_new_process(void **state)
{
	struct process_table *t = *state;
	struct process *a, *p;
	uint64_t serial;

	fake_proc("reuse_a", "/bin/reuse_a", 100);
	a = process_table_get_sample(t, PID, PID, "reuse_a", 10 * SEC);
	assert_non_null(a);
	serial = a->serial;
	process_table_exit(t, PID, 11 * SEC);
	/* In flight: taken before the exit, or just after under its name. */
	p = process_table_get_sample(t, PID, PID, "reuse_a", 11 * SEC - MS);
	assert_int_equal(p->serial, serial);
	p = process_table_get_sample(t, PID, PID + 1, "reuse_a",
				     11 * SEC + MS / 2);
	assert_int_equal(p->serial, serial);
	/* Another thread under another name while the pid still shows the
	 * same process (a zombie leader): the same process. */
	p = process_table_get_sample(t, PID, PID + 1, "worker",
				     11 * SEC + 2 * MS);
	assert_int_equal(p->serial, serial);
	/* The pid now runs a process started later: a new one. */
	fake_proc("pidreuse", "/bin/pidreuse", 1200);
	p = process_table_get_sample(t, PID, PID, "pidreuse", 12 * SEC);
	assert_int_not_equal(p->serial, serial);
	assert_string_equal(p->exe_path, "/bin/pidreuse");
	assert_int_equal(process_table_count(t), 1);
}

static void reuse_within_one_tick(void **state)
{
	struct process_table *t = *state;
	struct process *p;
	uint64_t serial;

	/* Same start tick: the name in stat tells (a zombie's too). */
	fake_proc("reuse_b", "/bin/reuse_b", 100);
	serial = process_table_get_sample(t, PID, PID, "reuse_b", SEC)->serial;
	process_table_exit(t, PID, SEC + 4 * MS);
	fake_proc("pidreuse", "/bin/pidreuse", 100);
	p = process_table_get_sample(t, PID, PID, "pidreuse", SEC + 5 * MS);
	assert_int_not_equal(p->serial, serial);
	assert_string_equal(p->comm, "pidreuse");
	/* Gone by the time we look: another name is another process. */
	serial = p->serial;
	process_table_exit(t, PID, SEC + 9 * MS);
	fake_proc(NULL, NULL, 0);
	p = process_table_get_sample(t, PID, PID, "reuse_a", SEC + 12 * MS);
	assert_int_not_equal(p->serial, serial);
	assert_string_equal(p->comm, "reuse_a");
}

static void sample_before_exec_is_not_the_new_image(void **state)
{
	struct process_table *t = *state;
	struct process *p;

	/* The sample ran "storm"; /proc, read later, shows the exec'ed
	 * "storm_b": a one-off entry under the sample's name. */
	fake_proc("storm_b", "/bin/storm_b", 100);
	p = process_table_get_sample(t, PID, PID, "storm", 2 * SEC);
	assert_non_null(p);
	assert_true(p->ghost);
	assert_string_equal(p->comm, "storm");
	assert_string_equal(p->exe_path, "");
	assert_int_equal(p->maps.n, 0);
	assert_int_equal(process_table_count(t), 0);
	/* A sample that ran storm_b gets the real entry. */
	p = process_table_get_sample(t, PID, PID, "storm_b", 2 * SEC + MS);
	assert_false(p->ghost);
	assert_string_equal(p->exe_path, "/bin/storm_b");
	assert_int_equal(process_table_count(t), 1);
}

static void late_exec_event_keeps_its_identity(void **state)
{
	struct process_table *t = *state;
	struct process *p;
	char path[256] = "/opt/w/reuse_a";
	uint64_t serial;

	/* Read in time: /proc agrees with the event. */
	fake_proc("reuse_a", "/opt/w/reuse_a", 100);
	process_table_exec(t, PID);
	p = process_table_get(t, PID, NULL, 2 * SEC);
	process_table_check_exec(t, p, path, sizeof(path), 2 * SEC);
	assert_false(p->ghost);
	assert_string_equal(p->exe_path, "/opt/w/reuse_a");

	/* Read late: the pid runs a process started after the exec. */
	fake_proc("reuse_b", "/opt/w/reuse_b", 300);
	process_table_exec(t, PID);
	p = process_table_get(t, PID, NULL, 2 * SEC);
	assert_string_equal(p->exe_path, "/opt/w/reuse_b");
	process_table_check_exec(t, p, path, sizeof(path), 2 * SEC);
	assert_true(p->ghost);
	assert_string_equal(p->exe_path, "/opt/w/reuse_a");
	assert_string_equal(p->exe_name, "reuse_a");
	assert_string_equal(p->comm, "reuse_a");
	assert_int_equal(p->maps.n, 0);
	/* and no rescan brings reuse_b's mappings back */
	assert_false(process_table_rescan(t, p, 3 * SEC, 0));
	/* Its samples stay with it; the next process's do not. */
	assert_ptr_equal(
		process_table_get_sample(t, PID, PID, "reuse_a", 2 * SEC + MS),
		p);
	serial = p->serial;
	process_table_exit(t, PID, 2 * SEC + 2 * MS);
	p = process_table_get_sample(t, PID, PID, "reuse_b", 2 * SEC + 3 * MS);
	assert_int_not_equal(p->serial, serial);
	assert_string_equal(p->exe_path, "/opt/w/reuse_b");
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
