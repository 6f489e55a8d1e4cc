// SPDX-License-Identifier: Apache-2.0
/*
 * Built for aarch64 without CFI (test_unwind_table_a64.c): the shape of
 * the arm64 vDSO since it lost its .eh_frame, a nop, then the exported
 * signal trampoline, and a function beside it.
 */
__asm__(".text\n"
	".globl __kernel_rt_sigreturn\n"
	".type __kernel_rt_sigreturn, %function\n"
	"nop\n"
	"__kernel_rt_sigreturn:\n"
	"mov x8, #139\n"
	"svc #0\n"
	".size __kernel_rt_sigreturn, 8\n");

int beside(int x)
{
	return x + 1;
}
