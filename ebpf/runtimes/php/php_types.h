/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * PHP (Zend engine): what its walk needs per process (php_procs, keyed by
 * tgid; userspace fills it from the binary's symbols and its version's
 * layout) and what it reports per frame. Shared by the BPF program and
 * userspace (lib/runtimes/php/).
 */
#ifndef OTELPROF_RUNTIMES_PHP_TYPES_H
#define OTELPROF_RUNTIMES_PHP_TYPES_H

/* Bytes of a zend_execute_data read at once: opline, func, This's
 * type_info and prev_execute_data all lie in the first 56. */
#define OTELPROF_PHP_EXEC_READ 64

struct otelprof_php_proc {
	/* runtime address of executor_globals.current_execute_data (a
	 * non-ZTS build: one executor per process) */
	u64 current_execute_data;
	u16 ed_opline;	  /* zend_execute_data.opline */
	u16 ed_func;	  /* zend_execute_data.func */
	u16 ed_type_info; /* zend_execute_data.This.u1.type_info (call info
			     in its top 16 bits) */
	u16 ed_prev;	  /* zend_execute_data.prev_execute_data */
	u16 op_lineno;	  /* zend_op.lineno */
	/* zend_op_array.opcodes and .last: where a function's oplines are,
	 * to check the VM's opline register against */
	u16 op_opcodes;
	u16 op_last;
	u16 pad;
	/* opcache's JIT buffer [jit_start, jit_end) (0, 0: none seen) and a
	 * return address inside execute_ex's body: JIT code runs in the
	 * hybrid VM's own frame, so a JIT frame's caller is found as that
	 * body's (by its CFI) */
	u64 jit_start, jit_end;
	u64 vm_body_pc;
};

/* sizeof(zend_op) (LP64, 8.x): oplines are an array of these. */
#define OTELPROF_PHP_OP_SIZE 32

/* zend_function.type: the first byte of every zend_function. */
#define OTELPROF_PHP_INTERNAL_FUNCTION 1
/* The call info bits of This.u1.type_info the walk and naming use. */
#define OTELPROF_PHP_CALL_CODE (1u << 16) /* top-level code of a file */
#define OTELPROF_PHP_CALL_TOP  (1u << 17) /* first frame of an executor call */

/*
 * One PHP frame after the native ones, innermost first (interp_kind
 * OTELPROF_RT_PHP): word0 = the zend_function's address, with
 * OTELPROF_INTERP_F_LAST on the first frame of an execute_ex call (call
 * info ZEND_CALL_TOP); word1 = call info << 32 | the opline's line (0 for
 * internal functions, which have no opline of their own). The innermost
 * user frame's line is the running opline's when the sample caught the VM
 * with that frame in its execute_data register (see php.bpf.c), else the
 * opline last stored into the frame.
 */

#endif
