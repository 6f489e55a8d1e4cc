// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * PHP's walk (OTELPROF_RT_MODE_AFTER): after the native frames, copy the
 * executor's zend_execute_data chain (from
 * executor_globals.current_execute_data) into the sample as {function,
 * call info and line} pairs, so userspace names them and puts them where
 * execute_ex ran, then end the sample (OTELPROF_PROG_FINISH). Loaded when
 * the first PHP process is found. Every read is of process memory and
 * may fail: the walk then stops, keeping what it has (counted). Loops are
 * bounded: bpf_loop where the kernel has it (php_walk), a plain bounded
 * loop for older kernels (php_walk_bounded).
 *
 * The running opline: the hybrid VM (GCC builds: Debian's) keeps the
 * current execute_data and opline in two fixed registers (x86_64: r14
 * and r15; arm64: x27 and x28) and stores the opline into its frame only
 * before calls and at ops that may throw, so the frame's own slot lags
 * behind in a loop of plain ops. Where the sample's execute_data register
 * holds the frame being read and its opline register points at one of
 * that function's oplines (inside opcodes[0..last), aligned), that opline
 * is the running one; otherwise (a C function that reused the registers,
 * JIT code, a frame being entered or left, a sample in the kernel) the
 * stored one is used.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "profiler_types.h"
#include "unwind_types.h"
#include "kernel_compat.bpf.h"
#include "sampler_shared.bpf.h"
#include "runtime_after.bpf.h"
#include "runtimes/php/php_types.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "runtime_walk.bpf.h"
#include "runtime_jit_step.bpf.h"

/* Per process: where its executor keeps its state (userspace fills). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, u32);
	__type(value, struct otelprof_php_proc);
} php_procs SEC(".maps");

/* Walk state in a per-CPU map, not on the stack: the verifier then sees
 * the loop callback converge once (as for the native walker). */
struct php_scratch {
	struct otelprof_php_proc pp;
	u64 ed;		  /* the zend_execute_data to read next */
	u64 vm_fp, vm_ip; /* the sample's VM registers (vm_fp 0: used) */
	u32 n, got;
	u8 buf[OTELPROF_PHP_EXEC_READ + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct php_scratch);
} php_scratch SEC(".maps");

#if defined(__TARGET_ARCH_x86)
#define PHP_VM_FP_REG r14
#define PHP_VM_IP_REG r15
#elif defined(__TARGET_ARCH_arm64)
#define PHP_VM_FP_REG regs[27]
#define PHP_VM_IP_REG regs[28]
#endif

/* The VM's execute_data and opline registers at a sample taken in user
 * mode. In the kernel (a system call, a fault) the frame's stored opline
 * serves: the VM stores it before calling out. (The registers saved at
 * kernel entry would need bpf_task_pt_regs, 5.15, in this program.) */
static __always_inline void vm_registers(void *ctx, struct php_scratch *s)
{
	s->vm_fp = s->vm_ip = 0;
	if (PERF_CTX_USER_MODE(ctx)) {
		s->vm_fp = PERF_CTX_REG(ctx, PHP_VM_FP_REG);
		s->vm_ip = PERF_CTX_REG(ctx, PHP_VM_IP_REG);
	}
}

/* The opline register, if it points at one of func's oplines. */
static __always_inline u64 running_opline(struct php_scratch *s, u64 func)
{
	u64 opcodes = 0, ip = s->vm_ip;
	u32 last = 0;

	if (bpf_probe_read_user(&opcodes, 8,
				(const void *)(func + s->pp.op_opcodes)) ||
	    bpf_probe_read_user(&last, 4, (const void *)(func + s->pp.op_last)))
		return 0;
	if (!opcodes || ip < opcodes ||
	    ip - opcodes >= (u64)last * OTELPROF_PHP_OP_SIZE ||
	    (ip - opcodes) % OTELPROF_PHP_OP_SIZE)
		return 0;
	return ip;
}

static __always_inline u64 ed_field(struct php_scratch *s, u16 off)
{
	u64 v = 0;

	/* the mask keeps the verifier's bounds; offsets are < 64 */
	__builtin_memcpy(&v, &s->buf[off & (OTELPROF_PHP_EXEC_READ - 1)], 8);
	return v;
}

/* One executor frame per call: copy {function, call info and line},
 * step to the previous frame. */
static __always_inline long php_frame_step(u32 k, void *data)
{
	u32 zero = 0;
	struct otelprof_sample_event *e =
		bpf_map_lookup_elem(&sample_scratch, &zero);
	struct php_scratch *s = bpf_map_lookup_elem(&php_scratch, &zero);
	u64 func, opline, info, last, ed;
	u32 line = 0;
	u8 type = 0;
	u32 n;

	if (!e || !s || !s->ed)
		return 1;
	if (bpf_probe_read_user(s->buf, OTELPROF_PHP_EXEC_READ,
				(const void *)s->ed)) {
		count(OTELPROF_CNT_INTERP_ERR);
		return 1;
	}
	ed = s->ed;
	func = ed_field(s, s->pp.ed_func);
	opline = ed_field(s, s->pp.ed_opline);
	info = ed_field(s, s->pp.ed_type_info) & 0xffffffff;
	s->ed = ed_field(s, s->pp.ed_prev);
	if (!func)
		return 0; /* a frame without a function: none to name */
	if (bpf_probe_read_user(&type, 1, (const void *)func)) {
		count(OTELPROF_CNT_INTERP_ERR);
		return 1;
	}
	/* The frame the VM runs: its opline register, if it holds up. */
	if (s->vm_fp && ed == s->vm_fp) {
		u64 ip = 0;

		s->vm_fp = 0;
		if (type != OTELPROF_PHP_INTERNAL_FUNCTION)
			ip = running_opline(s, func);
		if (ip)
			opline = ip;
	}
	/* An internal function has no opline of its own (its slot holds
	 * whatever was there). */
	if (type != OTELPROF_PHP_INTERNAL_FUNCTION && opline &&
	    bpf_probe_read_user(&line, 4,
				(const void *)(opline + s->pp.op_lineno)))
		line = 0;
	n = s->n;
	if (n > OTELPROF_USTACK_WORDS - 2)
		return 1;
	last = info & OTELPROF_PHP_CALL_TOP ? OTELPROF_INTERP_F_LAST : 0;
	e->words[n & (OTELPROF_USTACK_WORDS - 1)] =
		(func & ~OTELPROF_INTERP_F_LAST) | last;
	e->words[(n + 1) & (OTELPROF_USTACK_WORDS - 1)] = info << 32 | line;
	s->n = n + 2;
	s->got++;
	return 0;
}

OTELPROF_BOUNDED_LOOP(php_walk_frames, php_frame_step)

/* have_loop: the program may use bpf_loop (5.17). */
static __always_inline void walk_php(void *ctx, struct otelprof_sample_event *e,
				     u32 tgid, const bool have_loop)
{
	const struct otelprof_php_proc *pp =
		bpf_map_lookup_elem(&php_procs, &tgid);
	u32 zero = 0;
	struct php_scratch *s;
	u64 ed = 0;

	if (!pp || e->n_user > OTELPROF_USTACK_WORDS - 2)
		return; /* frames are added while they fit */
	s = bpf_map_lookup_elem(&php_scratch, &zero);
	if (!s)
		return;
	s->pp = *pp;
	if (bpf_probe_read_user(&ed, sizeof(ed),
				(const void *)s->pp.current_execute_data) ||
	    !ed)
		return; /* not executing PHP code now */
	s->ed = ed;
	vm_registers(ctx, s);
	s->n = e->n_user;
	s->got = 0;
	if (have_loop)
		php_walk_frames_loop(OTELPROF_MAX_INTERP_FRAMES, NULL);
	else
		OTELPROF_BOUNDED(php_frame_step, OTELPROF_MAX_INTERP_FRAMES,
				 NULL);
	after_frames_done(e, s->n, s->got, OTELPROF_RT_PHP);
}

/*
 * The native walk's hand-over of a frame at a pc without CFI
 * (OTELPROF_RT_F_JIT_STEP, set once opcache's JIT buffer is seen): a pc
 * in the JIT buffer is written as a frame, and the walk goes back to the
 * native walk at a return address inside execute_ex's body with the same
 * registers. The hybrid VM jumps into JIT code (no call) and JIT code
 * keeps the VM's frame (its stack pointer, and rbp where the VM's body
 * uses it as frame pointer, 8.4's), so that body's CFI finds its caller
 * (zend_execute, ... main); the frame written there shows as execute_ex,
 * under which the PHP frames go as without the JIT. Any other pc: the
 * native walk steps it as before (declined).
 */
static __always_inline void
php_jit_step(void *ctx, struct otelprof_sample_event *e, u32 tgid)
{
	struct unwinder_state *st = jit_step_walk(e);
	const struct otelprof_php_proc *pp;
	u64 pc;

	if (!st)
		return;
	pp = bpf_map_lookup_elem(&php_procs, &tgid);
	pc = jit_step_pc(st);
	if (!pp || !pp->vm_body_pc || pc < pp->jit_start || pc >= pp->jit_end)
		st->w.declined = 1; /* not JIT code: the native walk's */
	else if (jit_step_put(e, st))
		st->w.r.pc = pp->vm_body_pc;
	jit_step_give_back(ctx, e, st);
}

static __always_inline void php_run(void *ctx, struct otelprof_sample_event *e,
				    u32 tgid, const bool have_loop)
{
	php_jit_step(ctx, e, tgid);
	walk_php(ctx, e, tgid, have_loop);
}

OTELPROF_AFTER_RUNTIME_PROGRAMS_CTX(php, php_run)
