// SPDX-License-Identifier: Apache-2.0
/* The ring buffer's size and the live rate's default ceiling: flat in the
 * CPU count beyond a few CPUs (issue 27), unchanged on small hosts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/options.h"

static void small_hosts_get_the_minimum(void **state)
{
	(void)state;
	assert_int_equal(agent_ringbuf_bytes(0, 19, 2), 2u << 20);
	assert_int_equal(agent_ringbuf_bytes(0, 99, 2), 2u << 20);
	assert_int_equal(agent_ringbuf_bytes(0, 99, 1), 2u << 20);
	assert_int_equal(agent_ringbuf_bytes(0, 99, 0), 2u << 20);
	/* 2 CPUs, 2 MiB: the ceiling stays the 256 Hz it was. */
	assert_int_equal(agent_ringbuf_hz(2u << 20, 2), 256);
}

static void many_cpus_stay_within_the_cap(void **state)
{
	(void)state;
	/* 192 CPUs at 99 Hz: 9.7 MB of 250 ms, held to 4 MiB (it was
	 * 64 MiB, the cap of 2 s). */
	assert_int_equal(agent_ringbuf_bytes(0, 99, 192), 4u << 20);
	assert_int_equal(agent_ringbuf_bytes(0, 10000, 4096), 4u << 20);
	/* 16 CPUs at 99 Hz: 811 KB of 250 ms, the minimum. */
	assert_int_equal(agent_ringbuf_bytes(0, 99, 16), 2u << 20);
	/* 48 CPUs at 99 Hz: 2.4 MB, the next power of two. */
	assert_int_equal(agent_ringbuf_bytes(0, 99, 48), 4u << 20);
	/* The ceiling follows: 250 ms from 192 CPUs fill 4 MiB at 42 Hz. */
	assert_int_equal(agent_ringbuf_hz(4u << 20, 192), 42);
	assert_int_equal(agent_ringbuf_hz(4u << 20, 48), 170);
}

static void an_explicit_size_wins(void **state)
{
	(void)state;
	assert_int_equal(agent_ringbuf_bytes(64, 99, 192), 64u << 10);
	assert_int_equal(agent_ringbuf_bytes(100, 99, 2), 128u << 10);
	assert_int_equal(agent_ringbuf_bytes(65536, 19, 2), 64u << 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(small_hosts_get_the_minimum),
		cmocka_unit_test(many_cpus_stay_within_the_cap),
		cmocka_unit_test(an_explicit_size_wins),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
