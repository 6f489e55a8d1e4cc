/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * What Perl's walk (perl.bpf.c) and its tracker (lib/runtimes/perl/) share:
 * per process, where the running interpreter is found and the offsets of
 * the few fields the walk follows; and the shape of the pairs it reports.
 */
#ifndef OTELPROF_PERL_TYPES_H
#define OTELPROF_PERL_TYPES_H

#include "profiler_types.h"

/*
 * Per Perl process (perl_procs, keyed by tgid). A threaded build
 * (MULTIPLICITY) keeps each thread's interpreter in the TLS variable
 * PL_current_context (5.36+): `ctx` says where it is. A non-threaded one
 * has a single interpreter whose variables are globals: their addresses
 * in the process are in global_curcop and global_curstackinfo (ctx
 * unused), and its main thread runs it. Offsets are of struct
 * interpreter, struct stackinfo and PERL_CONTEXT.
 */
struct otelprof_perl_proc {
	struct otelprof_tls_loc ctx; /* PL_current_context */
	u16 interp_curcop;	     /* PL_curcop: the innermost statement */
	u16 interp_curstackinfo;     /* PL_curstackinfo */
	u16 si_cxstack;		     /* stackinfo.si_cxstack */
	u16 si_prev;		     /* stackinfo.si_prev */
	u16 si_cxix;		     /* stackinfo.si_cxix (I32) */
	u16 cx_size;		     /* sizeof(PERL_CONTEXT) */
	u16 cx_type;		     /* blku_type (U8) */
	u16 cx_oldcop;		     /* blku_oldcop: the caller's statement */
	u16 cx_sub_cv;		     /* blk_sub.cv */
	u8 cxt_sub;		     /* CXt_SUB */
	u8 cxt_mask;		     /* CXTYPEMASK */
	u8 pad[4];
	u64 global_curcop;	 /* non-threaded: &PL_curcop, else 0 */
	u64 global_curstackinfo; /* non-threaded: &PL_curstackinfo */
};

/*
 * The walk reports, innermost first, one pair per sub call and one for
 * the main program: {CV*, COP*}, the sub and the statement it is at
 * (the innermost: PL_curcop; the others: the statement that called the
 * next one in). word0 OTELPROF_PERL_MAIN names the main program. The last
 * pair of each stackinfo (a runops call: the main program, a sort block,
 * a callback from C) carries OTELPROF_INTERP_F_LAST.
 */
#define OTELPROF_PERL_MAIN 1ull

/* Bytes of a PERL_CONTEXT read at once: every field the walk needs lies
 * in the first 80 (5.36-5.40; the tracker refuses a layout beyond), and
 * a context is larger (104), so the read stays inside it. */
#define OTELPROF_PERL_CX_READ 80

#endif
