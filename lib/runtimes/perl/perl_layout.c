// SPDX-License-Identifier: Apache-2.0
#include <elf.h>
#include <stdbool.h>
#include <stddef.h>

#include "runtimes/perl/perl_layout.h"

/*
 * Rows printed by test/runtimes/perl_layout_gen.sh ARCH CORE_DIR from each
 * version's CORE headers (Debian's threaded builds: 5.36.0 of Debian 12,
 * 5.40.1 of Debian 13), per architecture: struct interpreter holds a
 * sigjmp_buf (JMPENV), 200 bytes on x86_64 and 312 on aarch64, which
 * moves what follows it. Per-version data only because Perl's binary says
 * nothing else; PL_interp_size must match at run time. Both tables are
 * built everywhere, so that a test on one machine can check the other's
 * rows against that architecture's libperl.
 */
static const struct perl_layout layouts_x86_64[] = {
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
	{.version = 0}, /* the end (the only row where none is known) */
};

static const struct perl_layout layouts_aarch64[] = {
	{
		.version = 36,
		.subversion = 0,
		.interp_size = 3864,
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
		.interp_size = 3864,
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
	{.version = 0},
};

/* The machine this build reads processes of (no rows: none known). */
#if defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#else
#define HOST_MACHINE EM_NONE
#endif

const struct perl_layout *
perl_layout_find_for(unsigned machine, unsigned version, unsigned interp_size)
{
	const struct perl_layout *layouts;

	if (machine == EM_X86_64)
		layouts = layouts_x86_64;
	else if (machine == EM_AARCH64)
		layouts = layouts_aarch64;
	else
		return NULL;
	for (size_t i = 0; layouts[i].version; i++)
		if (layouts[i].version == version &&
		    layouts[i].interp_size == interp_size)
			return &layouts[i];
	return NULL;
}

const struct perl_layout *perl_layout_find_any(unsigned version)
{
	const struct perl_layout *layouts =
		HOST_MACHINE == EM_AARCH64 ? layouts_aarch64 : layouts_x86_64;

	if (HOST_MACHINE != EM_X86_64 && HOST_MACHINE != EM_AARCH64)
		return NULL;
	for (size_t i = 0; layouts[i].version; i++)
		if (layouts[i].version == version)
			return &layouts[i];
	return NULL;
}

const struct perl_layout *perl_layout_find(unsigned version,
					   unsigned interp_size)
{
	return perl_layout_find_for(HOST_MACHINE, version, interp_size);
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
