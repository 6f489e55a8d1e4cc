/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where Perl keeps what the profiler reads, per version: the walk's
 * offsets (struct otelprof_perl_proc, for BPF) and the reader's (COP,
 * CV, GV, stash, HEK). Perl publishes no offsets (its build is stripped,
 * without debug info), so each row comes from that version's own headers
 * for one architecture (test/runtimes/perl_layout_gen.sh ARCH CORE_DIR)
 * and is accepted for a process only if the binary agrees: its
 * PL_version and its PL_interp_size (the size of struct interpreter,
 * which changes with most layout changes).
 */
#ifndef OTELPROF_RUNTIMES_PERL_LAYOUT_H
#define OTELPROF_RUNTIMES_PERL_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "runtimes/perl/perl_types.h"

struct perl_layout {
	uint8_t version, subversion; /* 5.version.subversion generated from */
	uint16_t interp_size;	     /* sizeof(struct interpreter) */
	struct otelprof_perl_proc walk; /* ctx left for the process */
	uint16_t cop_line, cop_file;	/* COP: line_t, char * (threaded: a
					 * GV * without threads) */
	uint16_t sv_flags, sv_u;	/* SV head: flags (U32), union */
	uint16_t svt_mask, svt_pvgv, svt_pvhv, svt_pvcv;
	uint32_t svf_ook; /* a stash's aux struct (its name) is there */
	uint16_t xcv_gv, xcv_flags; /* XPVCV: gv (or name HEK), flags */
	uint16_t xcv_file;	    /* XPVCV: the file it was compiled from */
	uint32_t cvf_named;	    /* xcv_gv is a HEK (lexical sub) */
	uint16_t xgv_namehek, xgv_stash;   /* XPVGV */
	uint16_t xhv_aux;		   /* xpvhv_with_aux.xhv_aux */
	uint16_t aux_name, aux_name_count; /* xpvhv_aux */
	uint16_t hek_len, hek_key;	   /* HEK */
};

/* The layout of Perl 5.version whose struct interpreter is interp_size
 * bytes, or NULL (an unknown version or build: native stacks). */
const struct perl_layout *perl_layout_find(unsigned version,
					   unsigned interp_size);

/* A layout of Perl 5.version whatever its struct interpreter: for a
 * non-threaded build, which reads no field of it (its variables are
 * globals), or NULL. */
const struct perl_layout *perl_layout_find_any(unsigned version);

/* The same for a process of another machine (ELF e_machine: EM_X86_64,
 * EM_AARCH64), e.g. to check a row against that machine's libperl. */
const struct perl_layout *
perl_layout_find_for(unsigned machine, unsigned version, unsigned interp_size);

/* Does l keep every offset inside what the walk and reader read? */
bool perl_layout_sane(const struct perl_layout *l);

#endif
