// SPDX-License-Identifier: Apache-2.0
/*
 * The offsets the Perl walk and reader need (one row of
 * lib/runtimes/perl/perl_layout.c), from a Perl version's own headers (its
 * CORE directory). Perl publishes no offsets in the binary (the build is
 * stripped, no debug info), so a version's row is generated here once and
 * checked against the binary at run time (PL_interp_size, PL_version).
 *
 * Compiled only (-S), never run, so that a cross compiler gives another
 * architecture's row: each value is an assembler string "->NAME VALUE"
 * (the kernel's asm-offsets way), which test/runtimes/perl_layout_gen.sh
 * turns into the row:
 *
 *   test/runtimes/perl_layout_gen.sh x86_64|arm64 CORE_DIR
 */
#include "EXTERN.h"
#include "perl.h"

#include <stddef.h>

/* D: decimal in the row, X: hex (flag bits). %c0: the constant without
 * the target's immediate prefix ($ on x86_64, # on aarch64). */
#define D(name, v) __asm__ volatile("\n.ascii \"->D " name " %c0\"" ::"i"(v))
#define X(name, v) __asm__ volatile("\n.ascii \"->X " name " %c0\"" ::"i"(v))
#define OFF(t, f)  offsetof(t, f)

void perl_layout_row(void);

void perl_layout_row(void)
{
	D("version", PERL_VERSION);
	D("subversion", PERL_SUBVERSION);
	D("interp_size", sizeof(struct interpreter));
#ifdef MULTIPLICITY
	D("walk.interp_curcop", OFF(struct interpreter, Icurcop));
	D("walk.interp_curstackinfo", OFF(struct interpreter, Icurstackinfo));
#endif
	/* Without threads struct interpreter is a 1-byte stand-in and its
	 * variables are globals (PL_curcop, PL_curstackinfo): such a build
	 * has no row of its own, its version's threaded row serves
	 * (perl_layout_find_any) and --check compares the rest of it. */
	D("walk.si_cxstack", OFF(PERL_SI, si_cxstack));
	D("walk.si_prev", OFF(PERL_SI, si_prev));
	D("walk.si_cxix", OFF(PERL_SI, si_cxix));
	D("walk.cx_size", sizeof(PERL_CONTEXT));
	D("walk.cx_type", OFF(PERL_CONTEXT, cx_u.cx_blk.blku_type));
	D("walk.cx_oldcop", OFF(PERL_CONTEXT, cx_u.cx_blk.blku_oldcop));
	D("walk.cx_sub_cv", OFF(PERL_CONTEXT, cx_u.cx_blk.blk_u.blku_sub.cv));
	D("walk.cxt_sub", CXt_SUB);
	D("walk.cxt_mask", CXTYPEMASK);
	D("cop_line", OFF(COP, cop_line));
#ifdef USE_ITHREADS
	D("cop_file", OFF(COP, cop_file));
#else
	D("cop_file", OFF(COP, cop_filegv)); /* its GV "_<path" */
#endif
	D("sv_flags", OFF(SV, sv_flags));
	D("sv_u", OFF(SV, sv_u));
	D("svt_mask", SVTYPEMASK);
	D("svt_pvgv", SVt_PVGV);
	D("svt_pvhv", SVt_PVHV);
	D("svt_pvcv", SVt_PVCV);
	X("svf_ook", SVf_OOK);
	D("xcv_gv", OFF(XPVCV, xcv_gv_u));
	D("xcv_flags", OFF(XPVCV, xcv_flags));
	D("xcv_file", OFF(XPVCV, xcv_file));
	X("cvf_named", CVf_NAMED);
	D("xgv_namehek", OFF(XPVGV, xiv_u));
	D("xgv_stash", OFF(XPVGV, xnv_u));
	D("xhv_aux", OFF(struct xpvhv_with_aux, xhv_aux));
	D("aux_name", OFF(struct xpvhv_aux, xhv_name_u));
	D("aux_name_count", OFF(struct xpvhv_aux, xhv_name_count));
	D("hek_len", OFF(HEK, hek_len));
	D("hek_key", OFF(HEK, hek_key));
}
