// SPDX-License-Identifier: Apache-2.0
/* The frame memo gives back only what was set for exactly the same
 * place (process, pc, mapping, file, return address), forgets it all
 * with the window, stays bounded; and the builder takes a memoized
 * frame's Location as the one it interned for the frame. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "encode/profile_builder.h"
#include "frames/frame_memo.h"

static struct frame_memo_key key(uint64_t serial, uint64_t pc)
{
	struct frame_memo_key k;

	memset(&k, 0, sizeof(k));
	k.serial = serial;
	k.pc = pc;
	k.map_start = 0x400000;
	k.map_end = 0x500000;
	k.map_offset = 0x1000;
	k.inode = 77;
	k.dev = 8 << 20 | 1;
	k.return_address = 1;
	return k;
}

static void found_only_once_set(void **state)
{
	struct frame_memo m;
	struct frame_memo_key k = key(5, 0x401234);
	const struct frame_memo_entry *e;
	uint32_t id;

	(void)state;
	frame_memo_init(&m);
	assert_null(frame_memo_find(&m, &k));
	id = frame_memo_reserve(&m, &k, 1u << 3);
	assert_int_not_equal(id, 0);
	/* reserved, not yet encoded: still a miss */
	assert_null(frame_memo_find(&m, &k));
	/* the same place, named again before its encoding: one entry */
	assert_int_equal(frame_memo_reserve(&m, &k, 1u << 3), id);
	frame_memo_set(&m, id, 42);
	e = frame_memo_find(&m, &k);
	assert_non_null(e);
	assert_int_equal(e->value, 42);
	assert_int_equal(e->loop_mask, 1u << 3);
	/* bad ids and values change nothing */
	frame_memo_set(&m, id, 0);
	frame_memo_set(&m, id, -3);
	frame_memo_set(&m, 0, 9);
	frame_memo_set(&m, id + 100, 9);
	assert_int_equal(frame_memo_find(&m, &k)->value, 42);
	frame_memo_free(&m);
}

static void every_field_is_identity(void **state)
{
	struct frame_memo m;
	struct frame_memo_key k = key(5, 0x401234), o;

	(void)state;
	frame_memo_init(&m);
	frame_memo_set(&m, frame_memo_reserve(&m, &k, 0), 7);
	assert_non_null(frame_memo_find(&m, &k));
	/* Another process, pc, mapping, file or naming: never this one. */
	o = k, o.serial = 6;
	assert_null(frame_memo_find(&m, &o));
	o = k, o.pc++;
	assert_null(frame_memo_find(&m, &o));
	o = k, o.map_start = 0x300000;
	assert_null(frame_memo_find(&m, &o));
	o = k, o.map_end = 0x600000;
	assert_null(frame_memo_find(&m, &o));
	o = k, o.map_offset = 0;
	assert_null(frame_memo_find(&m, &o));
	o = k, o.inode = 78;
	assert_null(frame_memo_find(&m, &o));
	o = k, o.dev = 8 << 20 | 2;
	assert_null(frame_memo_find(&m, &o));
	o = k, o.return_address = 0;
	assert_null(frame_memo_find(&m, &o));
	/* a kernel frame (no process, no mapping) at the same pc */
	memset(&o, 0, sizeof(o));
	o.pc = k.pc;
	assert_null(frame_memo_find(&m, &o));
	frame_memo_free(&m);
}

static void window_forgets_and_memo_is_bounded(void **state)
{
	struct frame_memo m;
	struct frame_memo_key k = key(1, 0x1000);
	uint32_t i, id;

	(void)state;
	frame_memo_init(&m);
	frame_memo_set(&m, frame_memo_reserve(&m, &k, 0), 3);
	frame_memo_clear(&m);
	assert_null(frame_memo_find(&m, &k));
	for (i = 0; i < FRAME_MEMO_MAX; i++) {
		struct frame_memo_key x = key(1, 0x1000 + i);

		id = frame_memo_reserve(&m, &x, 0);
		assert_int_equal(id, i + 1);
		frame_memo_set(&m, id, (int32_t)i + 1);
	}
	/* full: nothing more is kept, what is there is still found */
	k = key(2, 0x1000);
	assert_int_equal(frame_memo_reserve(&m, &k, 0), 0);
	k = key(1, 0x1000 + 17);
	assert_int_equal(frame_memo_find(&m, &k)->value, 18);
	/* the next stack starts on an empty memo */
	frame_memo_begin(&m);
	assert_null(frame_memo_find(&m, &k));
	assert_int_equal(frame_memo_reserve(&m, &k, 0), 1);
	assert_true(m.cap <= FRAME_MEMO_MAX);
	frame_memo_free(&m);
}

static void builder_takes_the_memoized_location(void **state)
{
	struct profile_builder b;
	struct frame f[2], again[2];
	int32_t locs[2], locs2[2], st, st2;

	(void)state;
	assert_int_equal(pb_init(&b), 0);
	memset(f, 0, sizeof(f));
	f[0].kind = FRAME_NATIVE;
	f[0].address = 0x1234;
	f[0].function = "leaf";
	f[0].mapping_file = "/usr/bin/x";
	f[0].map_start = 0x400000;
	f[0].map_limit = 0x500000;
	f[1] = f[0];
	f[1].address = 0x2345;
	f[1].function = "main";
	st = pb_frames_stack(&b, f, 2, locs);
	assert_true(st >= 0);
	assert_true(locs[0] > 0 && locs[1] > 0 && locs[0] != locs[1]);
	/* the same frames, memoized: no fields, the same stack */
	memset(again, 0, sizeof(again));
	again[0].memo_value = locs[0];
	again[1].memo_value = locs[1];
	st2 = pb_frames_stack(&b, again, 2, locs2);
	assert_int_equal(st2, st);
	assert_memory_equal(locs2, locs, sizeof(locs));
	/* a value past the table (a memo not cleared with its window) is
	 * not believed: the frame is interned from its fields */
	f[0].memo_value = (int32_t)b.locations.n + 5;
	assert_int_equal(pb_frames_stack(&b, f, 2, locs2), st);
	assert_int_equal(locs2[0], locs[0]);
	pb_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(found_only_once_set),
		cmocka_unit_test(every_field_is_identity),
		cmocka_unit_test(window_forgets_and_memo_is_bounded),
		cmocka_unit_test(builder_takes_the_memoized_location),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
