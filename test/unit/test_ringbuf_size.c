// SPDX-License-Identifier: Apache-2.0
/* The ring buffer's size and the live rate's default ceiling: flat in the
 * CPU count beyond a few CPUs (issue 27), the ceiling unchanged on small
 * hosts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/options.h"

static void small_hosts_get_the_minimum(void **state)
{
	(void)state;
	assert_int_equal(agent_ringbuf_bytes(0, 19, 2), 1u << 20);
	assert_int_equal(agent_ringbuf_bytes(0, 99, 2), 1u << 20);
	assert_int_equal(agent_ringbuf_bytes(0, 99, 1), 1u << 20);
	assert_int_equal(agent_ringbuf_bytes(0, 99, 0), 1u << 20);
	/* 16 CPUs at 99 Hz: 406 KB of 250 ms, the minimum. */
	assert_int_equal(agent_ringbuf_bytes(0, 99, 16), 1u << 20);
	/* 2 CPUs, 1 MiB: the ceiling stays the 256 Hz it was. */
	assert_int_equal(agent_ringbuf_hz(1u << 20, 2), 256);
	assert_int_equal(agent_ringbuf_hz(1u << 20, 16), 256);
}

static void many_cpus_stay_within_the_cap(void **state)
{
	(void)state;
	/* 192 CPUs at 99 Hz: 4.9 MB of 250 ms, held to 2 MiB (it was
	 * 64 MiB, the cap of 2 s, then 4 MiB). */
	assert_int_equal(agent_ringbuf_bytes(0, 99, 192), 2u << 20);
	assert_int_equal(agent_ringbuf_bytes(0, 10000, 4096), 2u << 20);
	/* 48 CPUs at 99 Hz: 1.2 MB, the next power of two. */
	assert_int_equal(agent_ringbuf_bytes(0, 99, 48), 2u << 20);
	/* 192 CPUs at 19 Hz: 934 KB, the minimum. */
	assert_int_equal(agent_ringbuf_bytes(0, 19, 192), 1u << 20);
	/* The ceiling follows: 250 ms from 192 CPUs fill 2 MiB at 42 Hz,
	 * as they filled 4 MiB of 2 KiB samples. */
	assert_int_equal(agent_ringbuf_hz(2u << 20, 192), 42);
	assert_int_equal(agent_ringbuf_hz(2u << 20, 48), 170);
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
