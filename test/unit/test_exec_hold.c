// SPDX-License-Identifier: Apache-2.0
/* exec_hold: an exec is due EXEC_HOLD_NS after it, a later exec of the
 * same pid replaces it, an exit drops it only for the same process start,
 * the list refuses more than EXEC_HOLD_MAX, and the next due time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "agent/exec_hold.h"

static struct exec_hold h;

static int reset(void **state)
{
	(void)state;
	memset(&h, 0, sizeof(h));
	return 0;
}

static void due_after_the_hold(void **state)
{
	struct held_exec x;

	(void)state;
	assert_true(exec_hold_add(&h, 10, 1, 1000, "/bin/true", 10));
	assert_int_equal(exec_hold_next_ms(&h, 1000), 5);
	assert_false(exec_hold_take_due(&h, 1000 + EXEC_HOLD_NS - 1, &x));
	assert_true(exec_hold_has(&h, 10));
	assert_true(exec_hold_take_due(&h, 1000 + EXEC_HOLD_NS, &x));
	assert_int_equal(x.pid, 10);
	assert_string_equal(x.filename, "/bin/true");
	assert_false(exec_hold_has(&h, 10));
	assert_int_equal(exec_hold_next_ms(&h, 0), -1);
}

static void later_exec_replaces(void **state)
{
	struct held_exec x;

	(void)state;
	assert_true(exec_hold_add(&h, 10, 1, 1000, "/usr/bin/python3", 17));
	assert_true(exec_hold_add(&h, 10, 1, 2000000, "/bin/ls", 7));
	assert_int_equal(h.n, 1);
	assert_false(exec_hold_take_due(&h, 1000 + EXEC_HOLD_NS, &x));
	assert_true(exec_hold_take_due(&h, 2000000 + EXEC_HOLD_NS, &x));
	assert_string_equal(x.filename, "/bin/ls");
}

static void exit_drops_same_process_only(void **state)
{
	(void)state;
	assert_true(exec_hold_add(&h, 10, 7, 0, "a", 2));
	assert_false(exec_hold_drop(&h, 10, 8)); /* a reused pid's exit */
	assert_false(exec_hold_drop(&h, 11, 7));
	assert_true(exec_hold_drop(&h, 10, 7));
	assert_false(exec_hold_has(&h, 10));
	assert_false(exec_hold_drop(&h, 10, 7));
}

static void bounded(void **state)
{
	(void)state;
	for (uint32_t i = 0; i < EXEC_HOLD_MAX; i++)
		assert_true(exec_hold_add(&h, i + 1, 0, i, "x", 2));
	assert_false(exec_hold_add(&h, EXEC_HOLD_MAX + 1, 0, 0, "x", 2));
	/* the same pid still replaces when full */
	assert_true(exec_hold_add(&h, 1, 0, 5, "y", 2));
	assert_int_equal(h.n, EXEC_HOLD_MAX);
}

static void name_cut_and_ended(void **state)
{
	char long_name[OTELPROF_FILENAME_LEN + 10];
	struct held_exec x;

	(void)state;
	memset(long_name, 'a', sizeof(long_name));
	assert_true(exec_hold_add(&h, 3, 0, 0, long_name, sizeof(long_name)));
	assert_true(exec_hold_take_due(&h, EXEC_HOLD_NS, &x));
	assert_int_equal(strlen(x.filename), OTELPROF_FILENAME_LEN - 1);
}

static void next_is_earliest(void **state)
{
	(void)state;
	assert_true(exec_hold_add(&h, 1, 0, 3000000, "a", 2));
	assert_true(exec_hold_add(&h, 2, 0, 1000000, "b", 2));
	/* 1 ms + 5 ms hold, 2.5 ms from now: 3.5 ms, rounded up */
	assert_int_equal(exec_hold_next_ms(&h, 2500000), 4);
	/* overdue: at once, but never 0 (a busy wait) */
	assert_int_equal(exec_hold_next_ms(&h, 100000000), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(due_after_the_hold, reset),
		cmocka_unit_test_setup(later_exec_replaces, reset),
		cmocka_unit_test_setup(exit_drops_same_process_only, reset),
		cmocka_unit_test_setup(bounded, reset),
		cmocka_unit_test_setup(name_cut_and_ended, reset),
		cmocka_unit_test_setup(next_is_earliest, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
