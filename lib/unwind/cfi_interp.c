// SPDX-License-Identifier: Apache-2.0
/*
 * Direct interpreter of x86_64 and aarch64 CFA programs: one pass over an
 * FDE's program (after its CIE's initial instructions) yields every row,
 * each classified into an unwind_span. Only the CFA, the frame pointer
 * (rbp 6 / x29 29) and the return address (rip 16 / x30 30) are tracked:
 * no other register can change a row.
 *
 * The rules are libdw's (elfutils 0.188) reading of the same bytes, which
 * the engine this replaced used (test_cfi_oracle.c holds every row to it,
 * docs/unwinding.md): the x86_64 ABI's initial state (rbp and rip
 * same_value, CFA undefined), def_cfa_register/offset on a CFA that is not
 * register-based making it invalid, a program that fails to run dropping
 * the whole FDE. Only the FDE is dropped, never the section: with no
 * per-register state and one pass there is nothing to protect.
 */
#include <errno.h>
#include <string.h>

#include "unwind/cfi_read.h"
#include "unwind/unwind_internal.h"

#define REG_RBP	   6
#define REG_RSP	   7
#define REG_RIP	   16
#define REG_X29	   29
#define REG_X30	   30
#define REG_A64_SP 31

/* aarch64's pointer-authentication state toggle (the opcode of SPARC's
 * DW_CFA_GNU_window_save): it says the return address is signed from
 * here on, which changes no row since the walk strips it anyway. */
#define DW_CFA_AARCH64_negate_ra_state 0x2d

/* The DWARF numbers of the registers a row is about. */
struct arch_regs {
	uint64_t sp, fp, ra;
};

static const struct arch_regs regs_x86_64 = {REG_RSP, REG_RBP, REG_RIP};
static const struct arch_regs regs_aarch64 = {REG_A64_SP, REG_X29, REG_X30};

/* Per run beyond the program bytes: decoding the FDE and its CIE. */
#define RUN_COST 64

enum rule_kind {
	RK_UNDEF,
	RK_SAME,
	RK_OFFSET,     /* saved at CFA + v */
	RK_VAL_OFFSET, /* is CFA + v */
	RK_REGISTER,
	RK_EXPR, /* saved at the address DWARF expression x computes */
	RK_VAL_EXPR,
};

struct reg_rule {
	uint8_t kind;
	uint64_t v;
	const uint8_t *x;
	uint64_t xlen;
};

enum cfa_kind { CK_UNDEF, CK_REG, CK_EXPR, CK_INVALID };

struct frame_state {
	uint8_t cfa;
	uint64_t cfa_reg, cfa_off;
	const uint8_t *x;
	uint64_t xlen;
	struct reg_rule rbp, rip;
};

struct run {
	const struct cfi_sec *s;
	const struct cfi_cie *c;
	const struct arch_regs *a;
	const struct frame_state *initial; /* NULL: running the CIE's */
	struct frame_state fs;
	struct frame_state stack[UNWIND_MAX_STATE_DEPTH];
	unsigned int depth;
	uint64_t loc, fde_hi;
	uint64_t lo, hi; /* rows wanted */
	struct unwind_spans *out;
};

/* One DWARF expression that is exactly `DW_OP_bregN off` (N = the sp or
 * fp of `a`) or `DW_OP_bregx N off`. */
static bool expr_breg(const struct arch_regs *a, const uint8_t *p, uint64_t len,
		      uint64_t *reg, int64_t *off)
{
	const uint8_t *end = p + len;

	if (!len)
		return false;
	if (*p == DW_OP_breg0 + a->fp || *p == DW_OP_breg0 + a->sp) {
		*reg = (uint64_t)(*p - DW_OP_breg0);
		p++;
	} else if (*p == DW_OP_bregx) {
		p++;
		if (cfi_read_uleb(&p, end, reg))
			return false;
	} else {
		return false;
	}
	return !cfi_read_sleb(&p, end, off) && p == end;
}

/*
 * The lazy-binding PLT expression of GNU ld and lld:
 * rsp + 8 + ((rip & 15) >= 11 ? 8 : 0). Only this exact form maps to
 * UNWIND_CFA_PLT, whose BPF side hardcodes the 11.
 */
static bool expr_plt(const uint8_t *p, uint64_t len)
{
	static const uint8_t tail[] = {DW_OP_lit15, DW_OP_and,	DW_OP_lit11,
				       DW_OP_ge,    DW_OP_lit3, DW_OP_shl,
				       DW_OP_plus};
	const uint8_t *end = p + len;
	int64_t a, b;

	if (len < 3 || *p++ != DW_OP_breg7 || cfi_read_sleb(&p, end, &a) ||
	    a != 8 || p >= end || *p++ != DW_OP_breg16 ||
	    cfi_read_sleb(&p, end, &b) || b != 0)
		return false;
	return (size_t)(end - p) == sizeof(tail) &&
	       !memcmp(p, tail, sizeof(tail));
}

/* "Saved at CFA + off" in any of its spellings. */
static bool saved_at_cfa(const struct reg_rule *r, int64_t *off)
{
	if (r->kind == RK_OFFSET) {
		*off = (int64_t)r->v;
		return true;
	}
	if (r->kind == RK_EXPR) {
		/* The expression starts from the CFA pushed: empty, or
		 * `DW_OP_plus_uconst off`. */
		const uint8_t *p = r->x, *end = r->x + r->xlen;
		uint64_t u;

		if (!r->xlen) {
			*off = 0;
			return true;
		}
		if (*p++ == DW_OP_plus_uconst && !cfi_read_uleb(&p, end, &u) &&
		    p == end) {
			*off = (int64_t)u;
			return true;
		}
	}
	return false;
}

/*
 * aarch64's return address: still in x30 (same_value: leaf functions,
 * prologues before the save), or saved at CFA + off. Saved, the common
 * layouts fit the row without a field of their own: at CFA - 8, or just
 * above x29 (the {x29, x30} frame record); elsewhere its offset takes
 * fp_offset's place and the caller's x29 is given up (fp_rule UNDEFINED
 * where it was saved: only a caller whose CFA is x29-based misses it).
 */
static bool classify_ra_a64(const struct reg_rule *ra, struct unwind_rule *u)
{
	int64_t off;

	if (ra->kind == RK_SAME) {
		u->ra_rule = UNWIND_RA_LR;
		return true;
	}
	if (!saved_at_cfa(ra, &off))
		return false;
	if (off == -8) {
		u->ra_rule = UNWIND_RA_CFA_MINUS8;
	} else if (u->fp_rule == UNWIND_FP_CFA_OFFSET &&
		   off == (int64_t)u->fp_offset + 8) {
		u->ra_rule = UNWIND_RA_AFTER_FP;
	} else if (off >= INT16_MIN && off <= INT16_MAX) {
		u->ra_rule = UNWIND_RA_CFA_OFFSET;
		if (u->fp_rule == UNWIND_FP_CFA_OFFSET)
			u->fp_rule = UNWIND_FP_UNDEFINED;
		u->fp_offset = (int16_t)off;
	} else {
		return false;
	}
	return true;
}

static void classify(const struct run *r, struct unwind_span *sp)
{
	const struct frame_state *fs = &r->fs;
	const struct arch_regs *a = r->a;
	bool a64 = r->s->aarch64;
	uint64_t reg;
	int64_t off, cfa_off;

	sp->rule.cfa_base = UNWIND_CFA_INVALID;
	sp->rule.cfa_offset = 0;
	sp->rule.fp_rule = UNWIND_FP_SAME;
	sp->rule.fp_offset = 0;
	sp->rule.ra_rule = UNWIND_RA_CFA_MINUS8;

	/* Whole signal trampolines: the BPF side reads the ucontext. */
	if (r->c->signal) {
		sp->rule.cfa_base = UNWIND_CFA_SIGNAL;
		return;
	}
	if (r->c->ra != a->ra)
		return;
	/* Return address: undefined marks the outermost frame; on x86_64
	 * anything but "at CFA-8" cannot be expressed in a row. */
	if (fs->rip.kind == RK_UNDEF) {
		sp->rule.cfa_base = UNWIND_CFA_STOP;
		return;
	}
	if (!a64 && (!saved_at_cfa(&fs->rip, &off) || off != -8))
		return;

	if (fs->cfa == CK_REG) {
		reg = fs->cfa_reg;
		cfa_off = (int64_t)fs->cfa_off;
	} else if (!a64 && fs->cfa == CK_EXPR && expr_plt(fs->x, fs->xlen)) {
		sp->rule.cfa_base = UNWIND_CFA_PLT;
		return; /* PLT stubs never touch rbp */
	} else if (fs->cfa != CK_EXPR ||
		   !expr_breg(a, fs->x, fs->xlen, &reg, &cfa_off)) {
		return;
	}
	if (cfa_off < INT32_MIN || cfa_off > INT32_MAX ||
	    (reg != a->sp && reg != a->fp))
		return;

	if (fs->rbp.kind == RK_SAME) {
		sp->rule.fp_rule = UNWIND_FP_SAME;
	} else if (saved_at_cfa(&fs->rbp, &off) && off >= INT16_MIN &&
		   off <= INT16_MAX) {
		sp->rule.fp_rule = UNWIND_FP_CFA_OFFSET;
		sp->rule.fp_offset = (int16_t)off;
	} else {
		/* Undefined, in another register or an expression: not
		 * recoverable with a row, but the CFA still is. */
		sp->rule.fp_rule = UNWIND_FP_UNDEFINED;
	}
	if (a64 && !classify_ra_a64(&fs->rip, &sp->rule)) {
		sp->rule.fp_rule = UNWIND_FP_SAME;
		sp->rule.fp_offset = 0;
		sp->rule.ra_rule = UNWIND_RA_CFA_MINUS8;
		return;
	}
	sp->rule.cfa_base = reg == a->sp ? UNWIND_CFA_SP : UNWIND_CFA_FP;
	sp->rule.cfa_offset = (int32_t)cfa_off;
}

/* The current state holds for [a, b): append what falls in [lo, hi). */
static int emit(struct run *r, uint64_t a, uint64_t b)
{
	struct unwind_span sp;

	if (a < r->lo)
		a = r->lo;
	if (b > r->hi)
		b = r->hi;
	if (a >= b)
		return 0;
	classify(r, &sp);
	sp.lo = a;
	sp.hi = b;
	return unwind_spans_push(r->out, &sp);
}

static void set_rule(struct run *r, uint64_t reg, uint8_t kind, uint64_t v,
		     const uint8_t *x, uint64_t xlen)
{
	struct reg_rule *rr = reg == r->a->fp	? &r->fs.rbp
			      : reg == r->a->ra ? &r->fs.rip
						: NULL;

	if (rr)
		*rr = (struct reg_rule){
			.kind = kind, .v = v, .x = x, .xlen = xlen};
}

/* Move to `loc`: the state so far covers [r->loc, loc). Returns 0, 1 (a
 * bad program), 2 (past the rows wanted: done) or a negative errno. */
static int advance(struct run *r, uint64_t loc)
{
	int err;

	if (!r->initial)
		return 1; /* a CIE describes no addresses */
	if (loc < r->loc)
		return 1;
	if (loc == r->loc)
		return 0;
	err = emit(r, r->loc, loc < r->fde_hi ? loc : r->fde_hi);
	if (err)
		return err;
	r->loc = loc;
	return loc >= r->hi || loc >= r->fde_hi ? 2 : 0;
}

/* Run one program. Returns 0 (ran to its end), 1 (bad), 2 (done) or a
 * negative errno. */
static int execute(struct run *r, const uint8_t *p, const uint8_t *end)
{
	const struct cfi_cie *c = r->c;

	while (p < end) {
		uint8_t op = *p++;
		uint64_t reg, v, delta;
		int64_t sv;
		int res;

		switch (op >> 6) {
		case 1: /* DW_CFA_advance_loc */
			delta = op & 0x3f;
			goto advance_by;
		case 2: /* DW_CFA_offset */
			if (cfi_read_uleb(&p, end, &v))
				return 1;
			set_rule(r, op & 0x3f, RK_OFFSET, v * (uint64_t)c->daf,
				 NULL, 0);
			continue;
		case 3: /* DW_CFA_restore */
			reg = op & 0x3f;
			goto restore;
		}
		switch (op) {
		case DW_CFA_nop:
			continue;
		case DW_CFA_set_loc:
			if (cfi_read_encoded(
				    &p, end, c->enc,
				    r->s->addr + (uint64_t)(p - r->s->buf), &v))
				return 1;
			res = advance(r, v);
			if (res)
				return res;
			continue;
		case DW_CFA_advance_loc1:
			if (end - p < 1)
				return 1;
			delta = *p++;
			goto advance_by;
		case DW_CFA_advance_loc2: {
			uint16_t d;

			if (end - p < 2)
				return 1;
			memcpy(&d, p, 2);
			p += 2;
			delta = d;
			goto advance_by;
		}
		case DW_CFA_advance_loc4: {
			uint32_t d;

			if (end - p < 4)
				return 1;
			memcpy(&d, p, 4);
			p += 4;
			delta = d;
			goto advance_by;
		}
		case DW_CFA_def_cfa:
			if (cfi_read_uleb(&p, end, &reg) ||
			    cfi_read_uleb(&p, end, &v))
				return 1;
			goto def_cfa;
		case DW_CFA_def_cfa_sf:
			if (cfi_read_uleb(&p, end, &reg) ||
			    cfi_read_sleb(&p, end, &sv))
				return 1;
			v = (uint64_t)sv * (uint64_t)c->daf;
			goto def_cfa;
		case DW_CFA_def_cfa_register:
			if (cfi_read_uleb(&p, end, &reg))
				return 1;
			if (r->fs.cfa != CK_REG)
				r->fs.cfa = CK_INVALID;
			r->fs.cfa_reg = reg;
			continue;
		case DW_CFA_def_cfa_offset:
			if (cfi_read_uleb(&p, end, &v))
				return 1;
			goto def_cfa_offset;
		case DW_CFA_def_cfa_offset_sf:
			if (cfi_read_sleb(&p, end, &sv))
				return 1;
			v = (uint64_t)sv * (uint64_t)c->daf;
			goto def_cfa_offset;
		case DW_CFA_def_cfa_expression:
			if (cfi_read_uleb(&p, end, &v) ||
			    v > (uint64_t)(end - p))
				return 1;
			r->fs.cfa = CK_EXPR;
			r->fs.x = p;
			r->fs.xlen = v;
			p += v;
			continue;
		case DW_CFA_undefined:
		case DW_CFA_same_value:
		case DW_CFA_restore_extended:
			if (cfi_read_uleb(&p, end, &reg))
				return 1;
			if (op == DW_CFA_restore_extended)
				goto restore;
			set_rule(r, reg,
				 op == DW_CFA_undefined ? RK_UNDEF : RK_SAME, 0,
				 NULL, 0);
			continue;
		case DW_CFA_offset_extended:
		case DW_CFA_val_offset:
		case DW_CFA_GNU_negative_offset_extended:
			if (cfi_read_uleb(&p, end, &reg) ||
			    cfi_read_uleb(&p, end, &v))
				return 1;
			if (op == DW_CFA_GNU_negative_offset_extended)
				v = 0 - v;
			set_rule(r, reg,
				 op == DW_CFA_val_offset ? RK_VAL_OFFSET
							 : RK_OFFSET,
				 v * (uint64_t)c->daf, NULL, 0);
			continue;
		case DW_CFA_offset_extended_sf:
		case DW_CFA_val_offset_sf:
			if (cfi_read_uleb(&p, end, &reg) ||
			    cfi_read_sleb(&p, end, &sv))
				return 1;
			set_rule(r, reg,
				 op == DW_CFA_val_offset_sf ? RK_VAL_OFFSET
							    : RK_OFFSET,
				 (uint64_t)sv * (uint64_t)c->daf, NULL, 0);
			continue;
		case DW_CFA_register:
			if (cfi_read_uleb(&p, end, &reg) ||
			    cfi_read_uleb(&p, end, &v))
				return 1;
			set_rule(r, reg, RK_REGISTER, v, NULL, 0);
			continue;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			if (cfi_read_uleb(&p, end, &reg) ||
			    cfi_read_uleb(&p, end, &v) ||
			    v > (uint64_t)(end - p))
				return 1;
			set_rule(r, reg,
				 op == DW_CFA_expression ? RK_EXPR
							 : RK_VAL_EXPR,
				 0, p, v);
			p += v;
			continue;
		case DW_CFA_remember_state:
			if (r->depth >= UNWIND_MAX_STATE_DEPTH)
				return 1;
			r->stack[r->depth++] = r->fs;
			continue;
		case DW_CFA_restore_state:
			if (!r->depth)
				return 1;
			r->fs = r->stack[--r->depth];
			continue;
		case DW_CFA_GNU_args_size:
			if (cfi_read_uleb(&p, end, &v))
				return 1;
			continue;
		case DW_CFA_AARCH64_negate_ra_state:
			if (!r->s->aarch64)
				return 1;
			continue;
		default:
			return 1; /* not CFI we know: operands unknown */
		}
	def_cfa:
		r->fs.cfa = CK_REG;
		r->fs.cfa_reg = reg;
		r->fs.cfa_off = v;
		continue;
	def_cfa_offset:
		if (r->fs.cfa != CK_REG)
			r->fs.cfa = CK_INVALID;
		r->fs.cfa_off = v;
		continue;
	restore:
		/* To the CIE's rule; not within the CIE itself. */
		if (!r->initial)
			return 1;
		if (reg == r->a->fp)
			r->fs.rbp = r->initial->rbp;
		else if (reg == r->a->ra)
			r->fs.rip = r->initial->rip;
		continue;
	advance_by:
		if (c->caf && delta > (UINT64_MAX - r->loc) / c->caf)
			return 1;
		res = advance(r, r->loc + delta * c->caf);
		if (res)
			return res;
	}
	return 0;
}

int unwind_cfi_interp_rows(const struct cfi_sec *s, const struct unwind_fde *f,
			   uint64_t lo, uint64_t hi, struct unwind_spans *out)
{
	struct cfi_fde fde;
	struct frame_state initial;
	struct run r;
	size_t n0 = out->n;
	uint64_t cost;
	int res;

	if (out->full)
		return 0;
	if (cfi_fde_at(s, f->off, &fde))
		return 1;
	cost = (uint64_t)(fde.prog_end - fde.prog) +
	       (uint64_t)(fde.cie.init_end - fde.cie.init) + RUN_COST;
	if (cost > out->work_max - out->work) {
		out->full = true;
		return 0;
	}
	out->work += cost;

	memset(&r, 0, sizeof(r));
	r.s = s;
	r.c = &fde.cie;
	r.a = s->aarch64 ? &regs_aarch64 : &regs_x86_64;
	r.out = out;
	/* The ABI's initial rules, as libdw has them: the frame pointer and
	 * the return address same_value (on aarch64: still in x30). */
	r.fs.cfa = CK_UNDEF;
	r.fs.rbp.kind = RK_SAME;
	r.fs.rip.kind = RK_SAME;
	res = execute(&r, fde.cie.init, fde.cie.init_end);
	if (res)
		goto bad;
	/* Remembered states do not outlive the program that saved them. */
	r.depth = 0;
	initial = r.fs;
	r.initial = &initial;
	r.loc = fde.lo;
	r.fde_hi = f->hi;
	r.lo = lo;
	r.hi = hi;
	res = execute(&r, fde.prog, fde.prog_end);
	if (res == 0 && r.loc < r.fde_hi)
		res = emit(&r, r.loc, r.fde_hi);
	if (res < 0)
		return res;
	if (res == 1)
		goto bad;
	return 0;
bad:
	/* As the libdw path: a broken program drops the whole FDE. */
	out->n = n0;
	return 1;
}
