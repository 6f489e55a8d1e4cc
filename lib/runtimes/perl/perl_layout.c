// SPDX-License-Identifier: Apache-2.0
#include <stdbool.h>
#include <stddef.h>

#include "runtimes/perl/perl_layout.h"

/*
 * Rows printed by test/runtimes/perl_layout_gen.c from each version's
 * CORE headers (Debian's threaded x86_64 builds: 5.36.0 of Debian 12,
 * 5.40.1 of Debian 13). Per-version data only because Perl's binary says
 * nothing else; PL_interp_size must match at run time. Other
 * architectures have no rows yet (struct interpreter holds a jmp_buf,
 * whose size differs): their Perl processes are reported unknown.
 */
static const struct perl_layout layouts[] = {
#if defined(__x86_64__)
	{
		.version = 36,
		.subversion = 0,
		.interp_size = 3768,
		.walk =
			{
				.interp_curcop = 208,
				.interp_curstackinfo = 224,
				.si_cxstack = 8,
				.si_prev = 16,
				.si_cxix = 32,
				.cx_size = 104,
				.cx_type = 0,
				.cx_oldcop = 16,
				.cx_sub_cv = 72,
				.cxt_sub = 9,
				.cxt_mask = 15,
			},
		.cop_line = 36,
		.cop_file = 48,
		.sv_flags = 12,
		.sv_u = 16,
		.svt_mask = 255,
		.svt_pvgv = 9,
		.svt_pvhv = 12,
		.svt_pvcv = 13,
		.svf_ook = 0x2000000,
		.xcv_gv = 56,
		.xcv_flags = 92,
		.xcv_file = 64,
		.cvf_named = 0x8000,
		.xgv_namehek = 32,
		.xgv_stash = 40,
		.xhv_aux = 32,
		.aux_name = 0,
		.aux_name_count = 28,
		.hek_len = 4,
		.hek_key = 8,
	},
	{
		.version = 40,
		.subversion = 1,
		.interp_size = 3768,
		.walk =
			{
				.interp_curcop = 208,
				.interp_curstackinfo = 224,
				.si_cxstack = 8,
				.si_prev = 16,
				.si_cxix = 32,
				.cx_size = 104,
				.cx_type = 0,
				.cx_oldcop = 16,
				.cx_sub_cv = 72,
				.cxt_sub = 9,
				.cxt_mask = 15,
			},
		.cop_line = 36,
		.cop_file = 48,
		.sv_flags = 12,
		.sv_u = 16,
		.svt_mask = 255,
		.svt_pvgv = 9,
		.svt_pvhv = 12,
		.svt_pvcv = 13,
		.svf_ook = 0x2000000,
		.xcv_gv = 56,
		.xcv_flags = 92,
		.xcv_file = 64,
		.cvf_named = 0x8000,
		.xgv_namehek = 32,
		.xgv_stash = 40,
		.xhv_aux = 32,
		.aux_name = 0,
		.aux_name_count = 28,
		.hek_len = 4,
		.hek_key = 8,
	},
#endif
	{.version = 0}, /* the end (the only row where none is known) */
};

const struct perl_layout *perl_layout_find(unsigned version,
					   unsigned interp_size)
{
	for (size_t i = 0; layouts[i].version; i++)
		if (layouts[i].version == version &&
		    layouts[i].interp_size == interp_size)
			return &layouts[i];
	return NULL;
}

bool perl_layout_sane(const struct perl_layout *l)
{
	const struct otelprof_perl_proc *w = &l->walk;

	return w->cx_type < OTELPROF_PERL_CX_READ &&
	       w->cx_oldcop + 8 <= OTELPROF_PERL_CX_READ &&
	       w->cx_sub_cv + 8 <= OTELPROF_PERL_CX_READ &&
	       w->cx_size >= OTELPROF_PERL_CX_READ && l->cop_line < 256 &&
	       l->cop_file < 256 && l->xcv_gv < 256 && l->xcv_flags < 256 &&
	       l->xcv_file < 256 && l->xgv_namehek < 256 &&
	       l->xgv_stash < 256 && l->xhv_aux < 256 && l->aux_name < 256 &&
	       l->aux_name_count < 256 && l->hek_key < 64 && l->hek_len < 64 &&
	       l->sv_flags < 64;
}
