// SPDX-License-Identifier: Apache-2.0
/*
 * Prints one row of lib/runtimes/perl/perl_layout.c: the offsets the Perl
 * walk and reader need, from a Perl version's own headers (its CORE
 * directory). Perl publishes no offsets in the binary (the build is
 * stripped, no debug info), so a version's row is generated here once and
 * checked against the binary at run time (PL_interp_size, PL_version).
 *
 *   cc -I $CORE test/runtimes/perl_layout_gen.c -o gen && ./gen
 */
#include "EXTERN.h"
#include "perl.h"

#include <stddef.h>
#include <stdio.h>

#define OFF(t, f) ((unsigned)offsetof(t, f))

int main(void)
{
	printf("\t{\n");
	printf("\t\t.version = %d, .subversion = %d,\n", PERL_VERSION,
	       PERL_SUBVERSION);
	printf("\t\t.interp_size = %u,\n",
	       (unsigned)sizeof(struct interpreter));
	printf("\t\t.walk = {\n");
	printf("\t\t\t.interp_curcop = %u,\n",
	       OFF(struct interpreter, Icurcop));
	printf("\t\t\t.interp_curstackinfo = %u,\n",
	       OFF(struct interpreter, Icurstackinfo));
	printf("\t\t\t.si_cxstack = %u,\n", OFF(PERL_SI, si_cxstack));
	printf("\t\t\t.si_prev = %u,\n", OFF(PERL_SI, si_prev));
	printf("\t\t\t.si_cxix = %u,\n", OFF(PERL_SI, si_cxix));
	printf("\t\t\t.cx_size = %u,\n", (unsigned)sizeof(PERL_CONTEXT));
	printf("\t\t\t.cx_type = %u,\n",
	       OFF(PERL_CONTEXT, cx_u.cx_blk.blku_type));
	printf("\t\t\t.cx_oldcop = %u,\n",
	       OFF(PERL_CONTEXT, cx_u.cx_blk.blku_oldcop));
	printf("\t\t\t.cx_sub_cv = %u,\n",
	       OFF(PERL_CONTEXT, cx_u.cx_blk.blk_u.blku_sub.cv));
	printf("\t\t\t.cxt_sub = %u,\n", CXt_SUB);
	printf("\t\t\t.cxt_mask = %u,\n", CXTYPEMASK);
	printf("\t\t},\n");
	printf("\t\t.cop_line = %u,\n", OFF(COP, cop_line));
	printf("\t\t.cop_file = %u,\n", OFF(COP, cop_file));
	printf("\t\t.sv_flags = %u,\n", OFF(SV, sv_flags));
	printf("\t\t.sv_u = %u,\n", OFF(SV, sv_u));
	printf("\t\t.svt_mask = %u,\n", SVTYPEMASK);
	printf("\t\t.svt_pvgv = %u,\n", SVt_PVGV);
	printf("\t\t.svt_pvhv = %u,\n", SVt_PVHV);
	printf("\t\t.svt_pvcv = %u,\n", SVt_PVCV);
	printf("\t\t.svf_ook = 0x%x,\n", SVf_OOK);
	printf("\t\t.xcv_gv = %u,\n", OFF(XPVCV, xcv_gv_u));
	printf("\t\t.xcv_flags = %u,\n", OFF(XPVCV, xcv_flags));
	printf("\t\t.xcv_file = %u,\n", OFF(XPVCV, xcv_file));
	printf("\t\t.cvf_named = 0x%x,\n", CVf_NAMED);
	printf("\t\t.xgv_namehek = %u,\n", OFF(XPVGV, xiv_u));
	printf("\t\t.xgv_stash = %u,\n", OFF(XPVGV, xnv_u));
	printf("\t\t.xhv_aux = %u,\n", OFF(struct xpvhv_with_aux, xhv_aux));
	printf("\t\t.aux_name = %u,\n", OFF(struct xpvhv_aux, xhv_name_u));
	printf("\t\t.aux_name_count = %u,\n",
	       OFF(struct xpvhv_aux, xhv_name_count));
	printf("\t\t.hek_len = %u,\n", OFF(HEK, hek_len));
	printf("\t\t.hek_key = %u,\n", OFF(HEK, hek_key));
	printf("\t},\n");
	return 0;
}
