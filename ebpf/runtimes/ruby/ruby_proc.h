/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * What the Ruby walk (ruby.bpf.c) needs of one CRuby process, written by
 * userspace (lib/runtimes/ruby/) into the walk's ruby_procs map. Shared
 * by the BPF object and the library: fixed-size types only.
 *
 * The running thread's execution context is the thread-local
 * ruby_current_ec, found where the dynamic linker leaves its address
 * (ec: x86_64's general-dynamic GOT pair through glibc's DTV, aarch64's
 * TLS descriptor; tls_var.bpf.h follows both).
 */
#ifndef OTELPROF_RUBY_PROC_H
#define OTELPROF_RUBY_PROC_H

struct otelprof_ruby_proc {
	struct otelprof_tls_loc ec; /* where ruby_current_ec is */
	u16 ec_vm_stack;	    /* rb_execution_context_t.vm_stack */
	u16 ec_vm_stack_size;	    /* .vm_stack_size (in VALUEs) */
	u16 ec_cfp;		    /* .cfp, the innermost control frame */
	u16 cfp_size;		    /* sizeof(rb_control_frame_t) */
	u16 cfp_pc, cfp_iseq, cfp_ep;
	u16 flags; /* OTELPROF_RUBY_F_* */
	u16 pad[3];
	/* The VM's code (libruby's, or ruby's when linked statically),
	 * runtime addresses: where YJIT's code returns to (the JIT step). */
	u64 vm_text_lo, vm_text_hi;
};

/* x86_64 YJIT (3.2 to 3.3, without --yjit-perf's frame pointer): its
 * code is called from the VM (jit_exec) and pushes three registers (its
 * CFP, EC and SP) on entry, so the return address into the VM is 24 bytes
 * above the stack pointer in its code. */
#define OTELPROF_RUBY_YJIT_RA_OFFSET 24

/* Report each method frame's method entry (ep[-2]) too, as a pair
 * {me | OTELPROF_RUBY_ME_TAG, iseq} before the frame's own: its class
 * names the method (versions whose class path userspace can read). A
 * block frame's is its method's, in the local environment its ep chain
 * leads to (as rb_vm_frame_method_entry finds it). A C
 * function's frame (a cfunc: no iseq) is always reported this way, as
 * {me | OTELPROF_RUBY_ME_TAG, 0}, and named from its method entry. */
#define OTELPROF_RUBY_F_METHOD_ENTRY 1
#define OTELPROF_RUBY_ME_TAG	     (1ull << 62)

/* An object's flags: T_IMEMO (0x1a) and its imemo type (bits 12-15),
 * here imemo_svar (2) and imemo_ment (6). */
#define OTELPROF_RUBY_IMEMO_TYPE_MASK 0xf01full
#define OTELPROF_RUBY_IMEMO_SVAR      0x201aull
#define OTELPROF_RUBY_IMEMO_MENT      0x601aull

/* ep[0] of a control frame: its type (VM_FRAME_MAGIC_*) and flags. */
#define OTELPROF_RUBY_MAGIC_MASK   0x7fff0001u
#define OTELPROF_RUBY_MAGIC_METHOD 0x11110001u
#define OTELPROF_RUBY_MAGIC_BLOCK  0x22220001u
#define OTELPROF_RUBY_MAGIC_CFUNC  0x55550001u
#define OTELPROF_RUBY_MAGIC_IFUNC  0x66660001u
#define OTELPROF_RUBY_MAGIC_DUMMY  0x79990001u
/* The frame a vm_exec call started with: returning from it returns from
 * that call (VM_FRAME_FLAG_FINISH). */
#define OTELPROF_RUBY_FLAG_FINISH 0x0020u
/* ep[0]'s VM_ENV_FLAG_LOCAL: a method's (or the top's) own environment;
 * a block's holds its outer one's ep in ep[-1] (tagged in its low 2
 * bits). Blocks nested deeper than the hops keep their bare label. */
#define OTELPROF_RUBY_ENV_LOCAL 0x0002u
#define OTELPROF_RUBY_EP_HOPS	4

#endif
