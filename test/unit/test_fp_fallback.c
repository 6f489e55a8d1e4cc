// SPDX-License-Identifier: Apache-2.0
/*
 * The frame-pointer fallback for pcs without CFI (unwind_step.h), on a
 * synthetic stack: a real frame is taken, implausible ones never are.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#define STACK_BASE  0x7ffd00000000ull
#define STACK_WORDS 512
static uint64_t stack[STACK_WORDS];

static int read_u64(uint64_t addr, uint64_t *out)
{
	uint64_t off = addr - STACK_BASE;

	if (addr < STACK_BASE || (off & 7) || off / 8 >= STACK_WORDS)
		return -1;
	*out = stack[off / 8];
	return 0;
}

#define UNWIND_READ_U64(ctx, addr, out) ((void)(ctx), read_u64((addr), (out)))
#include "unwind_step.h"

#define AT(i) (STACK_BASE + 8 * (uint64_t)(i))

static void takes_a_real_frame(void **state)
{
	struct unwind_regs r = {0x401000, AT(4), AT(10)};

	(void)state;
	memset(stack, 0, sizeof(stack));
	stack[10] = AT(40);   /* caller's rbp */
	stack[11] = 0x402345; /* return address */
	assert_int_equal(unwind_step_fp_fallback(NULL, &r), UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x402345);
	assert_int_equal(r.sp, AT(12));
	assert_int_equal(r.fp, AT(40));
}

static void refuses_implausible_frames(void **state)
{
	struct unwind_regs r;

	(void)state;
	memset(stack, 0, sizeof(stack));
	stack[11] = 0x402345;
	/* rbp not 8-aligned (a general-purpose value) */
	r = (struct unwind_regs){0x401000, AT(4), AT(10) + 3};
	assert_int_equal(unwind_step_fp_fallback(NULL, &r),
			 UNWIND_STEP_ERR_RULE);
	/* rbp below sp: not a frame of this stack's live part */
	r = (struct unwind_regs){0x401000, AT(20), AT(10)};
	assert_int_equal(unwind_step_fp_fallback(NULL, &r),
			 UNWIND_STEP_ERR_RULE);
	/* rbp far above sp (a heap or data pointer) */
	r = (struct unwind_regs){0x401000, AT(4),
				 AT(4) + UNWIND_FP_MAX_FRAME + 8};
	assert_int_equal(unwind_step_fp_fallback(NULL, &r),
			 UNWIND_STEP_ERR_RULE);
	/* rbp 0 (outermost frame or code that uses rbp for data) */
	r = (struct unwind_regs){0x401000, AT(4), 0};
	assert_int_equal(unwind_step_fp_fallback(NULL, &r),
			 UNWIND_STEP_ERR_RULE);
	/* rbp unreadable */
	r = (struct unwind_regs){0x401000, AT(STACK_WORDS - 1),
				 AT(STACK_WORDS - 1)};
	assert_int_equal(unwind_step_fp_fallback(NULL, &r),
			 UNWIND_STEP_ERR_READ);
	/* The registers are left alone when a frame is refused. */
	r = (struct unwind_regs){0x401000, AT(20), AT(10)};
	(void)unwind_step_fp_fallback(NULL, &r);
	assert_int_equal(r.pc, 0x401000);
	assert_int_equal(r.sp, AT(20));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(takes_a_real_frame),
		cmocka_unit_test(refuses_implausible_frames),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
