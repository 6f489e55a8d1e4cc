// SPDX-License-Identifier: Apache-2.0
/*
 * The aarch64 unwinding step (ebpf/unwind_step.h with UNWIND_AARCH64), on
 * any host: hand-made stacks in the layouts aarch64 code leaves, each step
 * checked against the registers the frame was built from. The link
 * register at the first frame, the saved x30 in each place a row can say,
 * pointer-authentication bits, Go's frames, and the signal frame at
 * __kernel_rt_sigreturn (offsets checked against the arm64 headers with
 * aarch64-linux-gnu-gcc: siginfo 128 bytes, uc_mcontext 176 bytes into
 * the ucontext, regs[] 8 bytes into it).
 */
#define UNWIND_AARCH64 1

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define STACK_BASE  0x7ffff000ull
#define STACK_WORDS 256

static uint64_t stack[STACK_WORDS];

static int read_u64(uint64_t addr, uint64_t *out)
{
	if (addr < STACK_BASE || (addr - STACK_BASE) % 8 ||
	    (addr - STACK_BASE) / 8 >= STACK_WORDS)
		return -1;
	*out = stack[(addr - STACK_BASE) / 8];
	return 0;
}

static void put(uint64_t addr, uint64_t v)
{
	stack[(addr - STACK_BASE) / 8] = v;
}

#define UNWIND_READ_U64(ctx, addr, out) ((void)(ctx), read_u64((addr), (out)))
#include "unwind_step.h"

#define SP(off) (STACK_BASE + (off))

static void reset(void **state)
{
	(void)state;
	memset(stack, 0, sizeof(stack));
}

/* A leaf (or a prologue before `stp x29, x30`): CFA = sp, return address
 * in x30. x30 is taken once: the caller's own x30 is not known. */
static void test_leaf_link_register(void **state)
{
	struct unwind_regs r = {
		.pc = 0x401000, .sp = SP(64), .fp = SP(128), .lr = 0x402010};

	reset(state);
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_SP, 0, UNWIND_FP_SAME, 0,
				     UNWIND_RA_LR, &r),
			 UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x402010);
	assert_int_equal(r.sp, SP(64)); /* no stack of its own */
	assert_int_equal(r.fp, SP(128));
	assert_int_equal(r.lr, 0);
	/* The caller's row saying "in x30" again is an error, not a loop. */
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_SP, 0, UNWIND_FP_SAME, 0,
				     UNWIND_RA_LR, &r),
			 UNWIND_STEP_ERR_RULE);
}

/* `stp x29, x30, [sp, #-48]!; mov x29, sp`: CFA = x29 + 48, x29 at
 * CFA-48, x30 at CFA-40 (above x29). */
static void test_frame_record(void **state)
{
	struct unwind_regs r = {
		.pc = 0x401100, .sp = SP(16), .fp = SP(16), .lr = 0x401104};

	reset(state);
	put(SP(16), SP(200));  /* caller's x29 */
	put(SP(24), 0x403330); /* return address */
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_FP, 48,
				     UNWIND_FP_CFA_OFFSET, -48,
				     UNWIND_RA_AFTER_FP, &r),
			 UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x403330);
	assert_int_equal(r.sp, SP(64));
	assert_int_equal(r.fp, SP(200));
	assert_int_equal(r.lr, 0);
}

/* `stp x29, x30, [sp, #-16]!`: x30 at CFA-8, as on x86_64. */
static void test_cfa_minus8(void **state)
{
	struct unwind_regs r = {.pc = 0x401100, .sp = SP(32), .fp = SP(90)};

	reset(state);
	put(SP(32), SP(96));
	put(SP(40), 0x405550);
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_SP, 16,
				     UNWIND_FP_CFA_OFFSET, -16,
				     UNWIND_RA_CFA_MINUS8, &r),
			 UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x405550);
	assert_int_equal(r.sp, SP(48));
	assert_int_equal(r.fp, SP(96));
}

/* Without frame pointers gcc saves x30 alone: `str x30, [sp, #-32]!`,
 * x30 at CFA-32, x29 untouched. */
static void test_lone_x30(void **state)
{
	struct unwind_regs r = {.pc = 0x401200, .sp = SP(0), .fp = 0x1234};

	reset(state);
	put(SP(0), 0x406660);
	put(SP(24), 0xdead); /* CFA-8: what an x86_64 rule would read */
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_SP, 32, UNWIND_FP_SAME,
				     -32, UNWIND_RA_CFA_OFFSET, &r),
			 UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x406660);
	assert_int_equal(r.sp, SP(32));
	assert_int_equal(r.fp, 0x1234);
}

/* A return address signed with pointer authentication: the PAC above the
 * 48 VA bits goes, in memory and in x30 alike. */
static void test_pac_stripped(void **state)
{
	struct unwind_regs r = {.pc = 0x401000, .sp = SP(0), .fp = 0};

	reset(state);
	put(SP(8), 0x0057000000401abcull);
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_SP, 16, UNWIND_FP_SAME, 0,
				     UNWIND_RA_CFA_MINUS8, &r),
			 UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x401abc);

	r = (struct unwind_regs){
		.pc = 0x401000, .sp = SP(0), .lr = 0x8012ffffb7e41234ull};
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_SP, 0, UNWIND_FP_SAME, 0,
				     UNWIND_RA_LR, &r),
			 UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0xffffb7e41234ull);
}

/* sp not moving up is a loop unless x30 gave the return address. */
static void test_loop(void **state)
{
	struct unwind_regs r = {.pc = 0x401000, .sp = SP(64), .fp = 0};

	reset(state);
	put(SP(56), 0x401000);
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_SP, 0, UNWIND_FP_SAME, -8,
				     UNWIND_RA_CFA_OFFSET, &r),
			 UNWIND_STEP_ERR_LOOP);
}

/* At __kernel_rt_sigreturn: the interrupted frame's pc, sp, x29 and x30
 * from the sigcontext; x30 serves that frame if it is a leaf. */
static void test_signal_frame(void **state)
{
	const uint64_t frame = SP(0), regs = frame + 128 + 176 + 8;
	struct unwind_regs r = {.pc = 0xffffb7ff0800ull, .sp = frame};

	reset(state);
	put(regs + 29 * 8, SP(1024)); /* x29 */
	put(regs + 30 * 8, 0x407770); /* x30 */
	put(regs + 31 * 8, SP(1536)); /* sp */
	put(regs + 32 * 8, 0x408880); /* pc */
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_SIGNAL, 0, UNWIND_FP_SAME,
				     0, UNWIND_RA_CFA_MINUS8, &r),
			 UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x408880);
	assert_int_equal(r.sp, SP(1536));
	assert_int_equal(r.fp, SP(1024));
	assert_int_equal(r.lr, 0x407770);
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_SP, 0, UNWIND_FP_SAME, 0,
				     UNWIND_RA_LR, &r),
			 UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x407770);
}

/*
 * Go's arm64 frames (obj7.go's prologue): a frameless leaf with its return
 * address in x30, then frames whose pcsp delta is their size, each with
 * the return address at 0(sp) and the caller's x29 at -8(sp). The last
 * frame is larger than an fp_offset row could reach (1040 > 1024).
 */
static void test_go_frames(void **state)
{
	struct unwind_regs r = {
		.pc = 0x401000, .sp = SP(16), .fp = SP(8), .lr = 0x402010};
	struct unwind_packed_row row;
	struct unwind_row in = {
		.pc = 0x402000,
		.rule = {.cfa_offset = 1040, .cfa_base = UNWIND_CFA_GO_FRAME}};

	reset(state);
	/* Frame of 32 bytes at SP(16): x30 at SP(16), x29 at SP(8). */
	put(SP(16), 0x403020);
	put(SP(8), SP(40));
	/* Its caller's frame of 1040 bytes at SP(48). */
	put(SP(48), 0x404040);
	put(SP(40), SP(1080));
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_SP, 0, UNWIND_FP_SAME, 0,
				     UNWIND_RA_LR, &r),
			 UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x402010);
	assert_int_equal(r.sp, SP(16));
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_GO_FRAME, 32,
				     UNWIND_FP_SAME, 0, UNWIND_RA_CFA_MINUS8,
				     &r),
			 UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x403020);
	assert_int_equal(r.sp, SP(48));
	assert_int_equal(r.fp, SP(40));
	/* The row as the walk reads it: the base and the full offset. */
	assert_true(unwind_row_pack(&in, &row));
	assert_int_equal(UNWIND_ROW_CFA_BASE(&row), UNWIND_CFA_GO_FRAME);
	assert_int_equal(UNWIND_ROW_CFA_OFFSET(&row), 1040);
	assert_int_equal(unwind_step(NULL, UNWIND_ROW_CFA_BASE(&row),
				     UNWIND_ROW_CFA_OFFSET(&row),
				     UNWIND_ROW_FP_RULE(&row),
				     UNWIND_ROW_FP_OFFSET(&row),
				     UNWIND_ROW_RA_RULE(&row), &r),
			 UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x404040);
	assert_int_equal(r.sp, SP(1088));
	assert_int_equal(r.fp, SP(1080));
	/* A zero return address (the stack's end) ends the walk. */
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_GO_FRAME, 16,
				     UNWIND_FP_SAME, 0, UNWIND_RA_CFA_MINUS8,
				     &r),
			 UNWIND_STEP_DONE);
	/* A stack copy starts at the sampled sp: the x29 below it is
	 * unknown (0), the return address at sp is still read. */
	r = (struct unwind_regs){.pc = 0x401000, .sp = SP(0), .fp = SP(8)};
	put(SP(0), 0x405050);
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_GO_FRAME, 32,
				     UNWIND_FP_SAME, 0, UNWIND_RA_CFA_MINUS8,
				     &r),
			 UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x405050);
	assert_int_equal(r.sp, SP(32));
	assert_int_equal(r.fp, 0);
}

/* The packed row keeps the return-address rule and its offset. */
static void test_packed_row(void **state)
{
	struct unwind_row in = {.pc = 0x1000,
				.rule = {.cfa_offset = 32,
					 .fp_offset = -32,
					 .cfa_base = UNWIND_CFA_SP,
					 .fp_rule = UNWIND_FP_SAME,
					 .ra_rule = UNWIND_RA_CFA_OFFSET}};
	struct unwind_packed_row out;

	(void)state;
	assert_true(unwind_row_pack(&in, &out));
	assert_int_equal(UNWIND_ROW_CFA_BASE(&out), UNWIND_CFA_SP);
	assert_int_equal(UNWIND_ROW_CFA_OFFSET(&out), 32);
	assert_int_equal(UNWIND_ROW_FP_RULE(&out), UNWIND_FP_SAME);
	assert_int_equal(UNWIND_ROW_FP_OFFSET(&out), -32);
	assert_int_equal(UNWIND_ROW_RA_RULE(&out), UNWIND_RA_CFA_OFFSET);

	in.rule = (struct unwind_rule){.cfa_offset = 96,
				       .fp_offset = -96,
				       .cfa_base = UNWIND_CFA_FP,
				       .fp_rule = UNWIND_FP_CFA_OFFSET,
				       .ra_rule = UNWIND_RA_AFTER_FP};
	assert_true(unwind_row_pack(&in, &out));
	assert_int_equal(UNWIND_ROW_CFA_BASE(&out), UNWIND_CFA_FP);
	assert_int_equal(UNWIND_ROW_FP_RULE(&out), UNWIND_FP_CFA_OFFSET);
	assert_int_equal(UNWIND_ROW_FP_OFFSET(&out), -96);
	assert_int_equal(UNWIND_ROW_RA_RULE(&out), UNWIND_RA_AFTER_FP);

	/* An x30 offset the row cannot hold (not a multiple of 8). */
	in.rule = (struct unwind_rule){.cfa_offset = 32,
				       .fp_offset = -20,
				       .cfa_base = UNWIND_CFA_SP,
				       .ra_rule = UNWIND_RA_CFA_OFFSET};
	assert_false(unwind_row_pack(&in, &out));
	assert_int_equal(UNWIND_ROW_CFA_BASE(&out), UNWIND_CFA_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leaf_link_register),
		cmocka_unit_test(test_frame_record),
		cmocka_unit_test(test_cfa_minus8),
		cmocka_unit_test(test_lone_x30),
		cmocka_unit_test(test_pac_stripped),
		cmocka_unit_test(test_loop),
		cmocka_unit_test(test_signal_frame),
		cmocka_unit_test(test_packed_row),
		cmocka_unit_test(test_go_frames),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
