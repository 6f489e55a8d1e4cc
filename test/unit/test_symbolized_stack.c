// SPDX-License-Identifier: Apache-2.0
/* A symbolized stack owns its strings (the symbolizer's sources may go
 * before the encoder reads them), is bounded, and the stack cache finds
 * exactly the raw stacks put in it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "encode/stack_cache.h"
#include "frames/symbolized_stack.h"

static struct symbolized_stack st;

static void strings_outlive_their_sources(void **state)
{
	char name[32], path[32], inl_name[32];
	struct frame_inline inl = {inl_name, NULL, "a.c", 7, 0};
	struct frame f;

	(void)state;
	symbolized_stack_init(&st);
	strcpy(name, "main");
	strcpy(path, "/usr/bin/x");
	strcpy(inl_name, "helper");
	memset(&f, 0, sizeof(f));
	f.kind = FRAME_NATIVE;
	f.address = 0x1234;
	f.function = name;
	f.mapping_file = path;
	f.inlined = &inl;
	f.ninlined = 1;
	symbolized_stack_add(&st, &f);
	/* The sources change (a rescan frees paths, an eviction names). */
	memset(name, 'X', sizeof(name) - 1);
	memset(path, 'Y', sizeof(path) - 1);
	memset(inl_name, 'Z', sizeof(inl_name) - 1);
	assert_int_equal(st.n, 1);
	assert_string_equal(st.frames[0].function, "main");
	assert_string_equal(st.frames[0].mapping_file, "/usr/bin/x");
	assert_null(st.frames[0].function_system);
	assert_int_equal(st.frames[0].address, 0x1234);
	assert_int_equal(st.frames[0].ninlined, 1);
	assert_string_equal(st.frames[0].inlined[0].function, "helper");
	assert_string_equal(st.frames[0].inlined[0].function_file, "a.c");
	assert_int_equal(st.frames[0].inlined[0].line, 7);
	assert_false(st.strings_dropped);
	symbolized_stack_clear(&st);
	assert_int_equal(st.n, 0);
	assert_true(st.cacheable);
	symbolized_stack_free(&st);
}

/* Frames past the most the kernel sends are dropped; strings past the
 * stack's budget are dropped and said so, the frames stay. */
static void frames_and_strings_are_bounded(void **state)
{
	static char big[8192];
	struct frame f;
	uint32_t named = 0;

	(void)state;
	symbolized_stack_init(&st);
	memset(big, 'n', sizeof(big) - 1);
	memset(&f, 0, sizeof(f));
	f.function = big;
	f.function_system = big;
	f.mapping_file = big;
	for (uint32_t i = 0; i < SYMBOLIZED_MAX_FRAMES + 10; i++)
		symbolized_stack_add(&st, &f);
	assert_int_equal(st.n, SYMBOLIZED_MAX_FRAMES);
	assert_true(st.strings_dropped);
	for (uint32_t i = 0; i < st.n; i++) {
		if (st.frames[i].function) {
			assert_int_equal(strlen(st.frames[i].function),
					 sizeof(big) - 1);
			named++;
		}
	}
	/* 3 names of 8 KiB per frame, 4 MiB: about 170 frames named. */
	assert_true(named > 100 && named < SYMBOLIZED_MAX_FRAMES);
	/* The next stack starts with its budget whole again. */
	symbolized_stack_clear(&st);
	symbolized_stack_add(&st, &f);
	assert_false(st.strings_dropped);
	assert_non_null(st.frames[0].function);
	symbolized_stack_free(&st);
}

static void cache_finds_only_equal_raw_stacks(void **state)
{
	uint64_t k[2] = {0xffffffff81000000ull, 0xffffffff81000010ull};
	uint64_t u[3] = {0x401000, 0x401100, 0x401200};
	uint64_t u2[3] = {0x401000, 0x401100, 0x401201};
	struct raw_stack a = {7, k, u, 2, 3}, b = a, c = a, d = a;
	struct stack_cache cache;
	int32_t stack = -1;

	(void)state;
	stack_cache_init(&cache);
	assert_false(stack_cache_find(&cache, &a, &stack));
	assert_int_equal(stack_cache_put(&cache, &a, 42), 0);
	assert_true(stack_cache_find(&cache, &b, &stack));
	assert_int_equal(stack, 42);
	c.serial = 8; /* another process: same pcs, other files */
	assert_false(stack_cache_find(&cache, &c, &stack));
	d.u = u2;
	assert_false(stack_cache_find(&cache, &d, &stack));
	d.u = u;
	d.nu = 2;
	assert_false(stack_cache_find(&cache, &d, &stack));
	for (uint32_t i = 0; i < 10000; i++) {
		struct raw_stack r = {100 + i, k, u, 2, 3};

		assert_int_equal(stack_cache_put(&cache, &r, (int32_t)i), 0);
	}
	for (uint32_t i = 0; i < 10000; i += 997) {
		struct raw_stack r = {100 + i, k, u, 2, 3};

		assert_true(stack_cache_find(&cache, &r, &stack));
		assert_int_equal(stack, (int32_t)i);
	}
	stack_cache_clear(&cache);
	assert_false(stack_cache_find(&cache, &a, &stack));
	stack_cache_free(&cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(strings_outlive_their_sources),
		cmocka_unit_test(frames_and_strings_are_bounded),
		cmocka_unit_test(cache_finds_only_equal_raw_stacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
