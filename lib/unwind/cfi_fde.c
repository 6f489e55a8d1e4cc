// SPDX-License-Identifier: Apache-2.0
/*
 * FDE enumeration: which address ranges a CFI section describes.
 *
 * libdw interprets CFA programs for us (cfi_rows.c) but has no public call
 * that lists FDE address ranges: dwarf_next_cfi() returns raw entries with
 * the initial_location still encoded per the CIE's 'R' augmentation. The
 * small decoder below does that, bounds-checked against the section.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "unwind/unwind_internal.h"

static int read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	unsigned int shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
		if (shift > 70) /* overlong: hostile */
			return -1;
	}
	return -1;
}

static int read_sleb(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	uint64_t r = 0;
	unsigned int shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				r |= ~0ULL << shift;
			*v = (int64_t)r;
			return 0;
		}
		if (shift > 70)
			return -1;
	}
	return -1;
}

/* Read a DW_EH_PE-encoded value; only absolute and pc-relative apply. */
static int read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc,
			uint64_t field_vaddr, uint64_t *out)
{
	const uint8_t *q = *p;
	uint64_t v;
	size_t avail = (size_t)(end - q);

	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect))
		return -1;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		if (avail < 8)
			return -1;
		memcpy(&v, q, 8);
		q += 8;
		break;
	case DW_EH_PE_udata4: {
		uint32_t u;

		if (avail < 4)
			return -1;
		memcpy(&u, q, 4);
		v = u;
		q += 4;
		break;
	}
	case DW_EH_PE_sdata4: {
		int32_t s;

		if (avail < 4)
			return -1;
		memcpy(&s, q, 4);
		v = (uint64_t)(int64_t)s;
		q += 4;
		break;
	}
	case DW_EH_PE_udata2: {
		uint16_t u;

		if (avail < 2)
			return -1;
		memcpy(&u, q, 2);
		v = u;
		q += 2;
		break;
	}
	case DW_EH_PE_sdata2: {
		int16_t s;

		if (avail < 2)
			return -1;
		memcpy(&s, q, 2);
		v = (uint64_t)(int64_t)s;
		q += 2;
		break;
	}
	case DW_EH_PE_uleb128:
		if (read_uleb(&q, end, &v))
			return -1;
		break;
	case DW_EH_PE_sleb128: {
		int64_t s;

		if (read_sleb(&q, end, &s))
			return -1;
		v = (uint64_t)s;
		break;
	}
	default:
		return -1;
	}
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		v += field_vaddr; /* wraps like the hardware would */
		break;
	default: /* textrel/datarel/funcrel: not used for FDEs on x86_64 */
		return -1;
	}
	*p = q;
	*out = v;
	return 0;
}

/* Pointer encoding of the CIE's FDEs ('R'), walking 'z' augmentation. */
static int cie_fde_encoding(const Dwarf_CIE *cie, uint8_t *enc)
{
	const char *a = cie->augmentation;
	const uint8_t *p, *end;

	*enc = DW_EH_PE_absptr; /* ELF64: 8-byte absolute addresses */
	if (!a || a[0] == '\0')
		return 0;
	if (a[0] != 'z' || !cie->augmentation_data)
		return -1; /* cannot know where the data ends */
	p = cie->augmentation_data;
	end = p + cie->augmentation_data_size;
	for (size_t i = 1; a[i]; i++) {
		switch (a[i]) {
		case 'R':
			if (p >= end)
				return -1;
			*enc = *p++;
			break;
		case 'L':
			if (p >= end)
				return -1;
			p++;
			break;
		case 'P': {
			uint8_t penc;
			uint64_t dummy;

			if (p >= end)
				return -1;
			penc = *p++;
			/* Only its size matters; strip what read_encoded
			 * refuses but that does not change the size
			 * (DW_EH_PE_aligned would). */
			if ((penc & 0x70) == DW_EH_PE_aligned ||
			    read_encoded(&p, end, penc & 0x0f, 0, &dummy))
				return -1;
			break;
		}
		case 'S': /* signal frame */
			break;
		default:
			/* Anything else ('B', 'G' are not x86_64) could be
			 * parsed differently by libdw: it would then read
			 * other bytes as the program than we vetted. */
			return -1;
		}
	}
	return 0;
}

/*
 * Walk a CFA program the way libdw will, without interpreting it: reject
 * what libdw would turn into huge allocations (a rule array sized by the
 * largest register number, one state copy per remember_state) and opcodes
 * outside what x86_64 toolchains emit, whose operand sizes we cannot vouch
 * for. `enc` is the CIE's FDE pointer encoding (DW_CFA_set_loc operand).
 *
 * Cost, in "plain opcode bytes": dwarf_cfi_addrframe() runs the program
 * from its start up to the advance that ends the row asked for, once per
 * row. `*run` is one full run; `*rows` the sum over all rows (quadratic in
 * the worst case); `*calls` the number of rows. remember_state copies the
 * whole register state (a remember/restore pair measured 6x to 13x a
 * one-byte opcode with 8 to 121 registers), priced REMEMBER_COST.
 */
#define REMEMBER_COST 128

static int vet_program(const uint8_t *p, const uint8_t *end, uint8_t enc,
		       uint64_t *run, uint64_t *rows, uint64_t *calls)
{
	unsigned int depth = 0;

	*run = 0;
	*rows = 0;
	*calls = 1;
	while (p < end) {
		const uint8_t *start = p;
		uint8_t op = *p++;
		uint64_t reg = 0, v;
		int64_t sv;
		bool row_end = false;

		switch (op >> 6) {
		case 1: /* DW_CFA_advance_loc */
			row_end = true;
			goto next;
		case 3: /* DW_CFA_restore: register < 64 */
			goto next;
		case 2: /* DW_CFA_offset: register < 64 */
			if (read_uleb(&p, end, &v))
				return -1;
			goto next;
		}
		switch (op) {
		case DW_CFA_nop:
			break;
		case DW_CFA_set_loc:
			if (read_encoded(&p, end, enc, 0, &v))
				return -1;
			row_end = true;
			break;
		case DW_CFA_advance_loc1:
		case DW_CFA_advance_loc2:
		case DW_CFA_advance_loc4: {
			size_t n = op == DW_CFA_advance_loc1   ? 1
				   : op == DW_CFA_advance_loc2 ? 2
							       : 4;

			if ((size_t)(end - p) < n)
				return -1;
			p += n;
			row_end = true;
			break;
		}
		case DW_CFA_remember_state:
			if (++depth > UNWIND_MAX_STATE_DEPTH)
				return -1;
			*run += REMEMBER_COST;
			break;
		case DW_CFA_restore_state:
			if (depth)
				depth--;
			break;
		case DW_CFA_offset_extended:
		case DW_CFA_register:
		case DW_CFA_def_cfa:
		case DW_CFA_val_offset:
		case DW_CFA_GNU_negative_offset_extended:
			if (read_uleb(&p, end, &reg) || read_uleb(&p, end, &v))
				return -1;
			if (op == DW_CFA_register && v > UNWIND_MAX_REGNO)
				return -1;
			break;
		case DW_CFA_restore_extended:
		case DW_CFA_undefined:
		case DW_CFA_same_value:
		case DW_CFA_def_cfa_register:
			if (read_uleb(&p, end, &reg))
				return -1;
			break;
		case DW_CFA_def_cfa_offset:
		case DW_CFA_GNU_args_size:
			if (read_uleb(&p, end, &v))
				return -1;
			break;
		case DW_CFA_def_cfa_offset_sf:
			if (read_sleb(&p, end, &sv))
				return -1;
			break;
		case DW_CFA_offset_extended_sf:
		case DW_CFA_def_cfa_sf:
		case DW_CFA_val_offset_sf:
			if (read_uleb(&p, end, &reg) || read_sleb(&p, end, &sv))
				return -1;
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			if (read_uleb(&p, end, &reg))
				return -1;
			/* fall through */
		case DW_CFA_def_cfa_expression:
			if (read_uleb(&p, end, &v) || v > (uint64_t)(end - p))
				return -1;
			p += v;
			break;
		default:
			return -1;
		}
		if (reg > UNWIND_MAX_REGNO)
			return -1;
	next:
		*run += (uint64_t)(p - start);
		if (row_end) {
			*rows += *run;
			(*calls)++;
		}
	}
	*rows += *run; /* the last row runs it all */
	return 0;
}

struct cie_slot {
	Dwarf_Off off;
	uint32_t cost;
	uint8_t enc;
	bool z;
	int8_t state; /* 0 empty, 1 usable, -1 unusable, -2 hostile */
};

#define CIE_CACHE 64

/*
 * Returns 0 (usable), -1 (libdw cannot parse it either: its FDEs are dead)
 * or -2 (libdw would run it but we cannot vouch for it).
 */
static int cie_lookup(const unsigned char *e_ident, Elf_Data *d, bool eh,
		      Dwarf_Off off, struct cie_slot *cache,
		      struct cie_slot **res)
{
	struct cie_slot *s = &cache[(off >> 2) % CIE_CACHE];
	Dwarf_CFI_Entry ce;
	Dwarf_Off next = (Dwarf_Off)-1;
	uint64_t run, rows, calls;
	size_t len;

	*res = s;
	if (s->state != 0 && s->off == off)
		return s->state > 0 ? 0 : s->state;
	s->off = off;
	s->state = -1;
	if (off >= d->d_size ||
	    dwarf_next_cfi(e_ident, d, eh, off, &next, &ce) != 0 ||
	    !dwarf_cfi_cie_p(&ce))
		return -1;
	s->state = -2;
	if (cie_fde_encoding(&ce.cie, &s->enc))
		return -2;
	s->z = ce.cie.augmentation && ce.cie.augmentation[0] == 'z';
	if (!ce.cie.initial_instructions ||
	    ce.cie.initial_instructions_end < ce.cie.initial_instructions)
		return -2;
	len = (size_t)(ce.cie.initial_instructions_end -
		       ce.cie.initial_instructions);
	if (len > UNWIND_MAX_FDE_INSNS ||
	    vet_program(ce.cie.initial_instructions,
			ce.cie.initial_instructions_end, s->enc, &run, &rows,
			&calls))
		return -2;
	s->cost = (uint32_t)run; /* <= 64 Ki * (1 + REMEMBER_COST) */
	s->state = 1;
	return 0;
}

static bool has_off(const uint64_t *v, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] == off)
			return true;
		if (v[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * libdw trusts the .eh_frame_hdr binary search table and runs whatever FDE
 * an entry points at. Accept the table only if it is in the one encoding
 * linkers emit and every entry names an FDE we walked (and so vetted).
 * `fde_offs` is sorted (the walk is in offset order).
 */
static int vet_hdr(Elf_Data *hdr, uint64_t hdr_addr, uint64_t eh_addr,
		   const uint64_t *fde_offs, size_t n)
{
	const uint8_t *p, *end;
	uint8_t ptr_enc, cnt_enc, tab_enc;
	uint64_t eh_ptr, count;

	if (!hdr || !hdr->d_buf || hdr->d_size < 4)
		return 0; /* libdw ignores it too */
	p = hdr->d_buf;
	end = p + hdr->d_size;
	if (p[0] != 1)
		return 0;
	ptr_enc = p[1];
	cnt_enc = p[2];
	tab_enc = p[3];
	p += 4;
	if (ptr_enc == DW_EH_PE_omit)
		return 0;
	/* datarel is relative to the header start, pcrel to the field */
	if ((ptr_enc & 0x70) == DW_EH_PE_datarel) {
		if (read_encoded(&p, end, ptr_enc & 0x0f, 0, &eh_ptr))
			return -1;
		eh_ptr += hdr_addr;
	} else if (read_encoded(
			   &p, end, ptr_enc,
			   hdr_addr +
				   (uint64_t)(p - (const uint8_t *)hdr->d_buf),
			   &eh_ptr)) {
		return -1;
	}
	if (cnt_enc == DW_EH_PE_omit || tab_enc == DW_EH_PE_omit)
		return 0;
	if (eh_ptr != eh_addr)
		return 0; /* libdw's own sanity check drops the table */
	if (read_encoded(&p, end, cnt_enc & 0x0f, 0, &count))
		return -1;
	if (!count)
		return 0;
	if (tab_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4) ||
	    count > (uint64_t)(end - p) / 8)
		return -1;
	for (uint64_t i = 0; i < count; i++, p += 8) {
		int32_t rel;
		uint64_t fde;

		memcpy(&rel, p + 4, 4);
		fde = hdr_addr + (uint64_t)(int64_t)rel;
		if (fde < eh_addr || !has_off(fde_offs, n, fde - eh_addr))
			return -1;
	}
	return 0;
}

static int fde_cmp(const void *a, const void *b)
{
	const struct unwind_fde *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1; /* longest first */
	return 0;
}

/* Per dwarf_cfi_addrframe() call beyond the programs: lookup, malloc. */
#define CALL_COST 64

static int range_cmp(const void *a, const void *b)
{
	const struct unwind_window *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return 0;
}

/* Do any two of these address ranges overlap? Sorts them. */
static bool overlapping(struct unwind_window *r, size_t n)
{
	uint64_t hi = 0;

	if (n < 2)
		return false;
	qsort(r, n, sizeof(*r), range_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i && r[i].lo < hi)
			return true;
		if (r[i].hi > hi)
			hi = r[i].hi;
	}
	return false;
}

int unwind_fde_collect(const unsigned char *e_ident, Elf_Data *d,
		       uint64_t sec_addr, bool eh, Elf_Data *hdr,
		       uint64_t hdr_addr, const struct unwind_window *win,
		       struct unwind_fde **out, size_t *nout,
		       uint64_t *max_call, struct unwind_table_stats *st,
		       struct unwind_mem *mem)
{
	struct unwind_window *all = NULL;
	size_t nall = 0, capall = 0;
	uint64_t call_max = 0;
	struct cie_slot cache[CIE_CACHE];
	struct unwind_fde *v = NULL;
	uint64_t *offs = NULL;
	size_t n = 0, cap = 0, noffs = 0, capoffs = 0;
	uint64_t ncie = 0, held = 0; /* CIEs seen; bytes charged for lists */
	Dwarf_Off off = 0;
	const uint8_t *base = d->d_buf;
	int err = 0;

	memset(cache, 0, sizeof(cache));
	*out = NULL;
	*nout = 0;
	while (off < d->d_size) {
		Dwarf_CFI_Entry e;
		Dwarf_Off next = (Dwarf_Off)-1, here = off;
		struct cie_slot *cie;
		const uint8_t *p;
		uint64_t lo, range, flen, run, rows, calls, call;
		int r;

		r = dwarf_next_cfi(e_ident, d, eh, off, &next, &e);
		if (r == 1)
			break;
		if (r != 0) {
			st->fdes_total++;
			st->fdes_skipped++;
			if (next == (Dwarf_Off)-1 || next <= off) {
				/* No way to resynchronise: stop here. */
				st->flags |= UNWIND_ST_CFI_CORRUPT;
				break;
			}
			off = next;
			continue;
		}
		if (next <= off) {
			st->flags |= UNWIND_ST_CFI_CORRUPT;
			break;
		}
		off = next;
		if (dwarf_cfi_cie_p(&e)) {
			ncie++;
			continue;
		}
		st->fdes_total++;
		if (noffs >= UNWIND_MAX_FDES) {
			/* The rest would go unvetted but not unused by libdw:
			 * give up on the section. */
			err = -E2BIG;
			goto out;
		}
		if (noffs == capoffs) {
			size_t nc = capoffs ? capoffs * 2 : 256;
			uint64_t *no;

			if (!unwind_mem_charge(mem,
					       (nc - capoffs) * sizeof(*no))) {
				err = -EDQUOT;
				goto out;
			}
			held += (nc - capoffs) * sizeof(*no);
			no = realloc(offs, nc * sizeof(*no));
			if (!no) {
				err = -ENOMEM;
				goto out;
			}
			offs = no;
			capoffs = nc;
		}
		offs[noffs++] = here;
		r = cie_lookup(e_ident, d, eh, e.fde.CIE_pointer, cache, &cie);
		if (r == -2) {
			err = -EBADMSG;
			goto out;
		}
		if (r || e.fde.start < base || e.fde.end < e.fde.start ||
		    e.fde.end > base + d->d_size) {
			st->fdes_skipped++;
			continue;
		}
		/*
		 * Where this decoder and libdw's could disagree (an encoding
		 * we refuse, a short entry) we cannot know which bytes libdw
		 * would execute as the program: refuse the section rather
		 * than skip the FDE.
		 */
		p = e.fde.start;
		if (read_encoded(&p, e.fde.end, cie->enc,
				 sec_addr + (uint64_t)(p - base), &lo) ||
		    read_encoded(&p, e.fde.end, cie->enc & 0x0f, 0, &range)) {
			err = -EBADMSG;
			goto out;
		}
		if (cie->z) {
			uint64_t alen;

			if (read_uleb(&p, e.fde.end, &alen) ||
			    alen > (uint64_t)(e.fde.end - p)) {
				err = -EBADMSG;
				goto out;
			}
			p += alen;
		}
		/* Vetted even when skipped below: libdw may still pick it
		 * for an address it covers. */
		flen = (uint64_t)(e.fde.end - p);
		if (flen > st->max_fde_insns)
			st->max_fde_insns =
				(uint32_t)(flen > UINT32_MAX ? UINT32_MAX
							     : flen);
		/* Too big to price or to run: libdw might still pick it,
		 * so the section goes (real programs stay under 21 KB). */
		if (flen > UNWIND_MAX_FDE_INSNS ||
		    vet_program(p, e.fde.end, cie->enc, &run, &rows, &calls)) {
			err = -EBADMSG;
			goto out;
		}
		if (range == 0)
			continue; /* legitimate (discarded code); no rows */
		call = run + cie->cost + CALL_COST;
		if (call > call_max)
			call_max = call;
		/* Every range libdw could pick, skipped below or not, for
		 * the overlap test that decides how to charge the work. */
		if (nall == capall) {
			size_t nc = capall ? capall * 2 : 256;
			struct unwind_window *na;

			if (!unwind_mem_charge(mem,
					       (nc - capall) * sizeof(*na))) {
				err = -EDQUOT;
				goto out;
			}
			held += (nc - capall) * sizeof(*na);
			na = realloc(all, nc * sizeof(*na));
			if (!na) {
				err = -ENOMEM;
				goto out;
			}
			all = na;
			capall = nc;
		}
		all[nall].lo = lo;
		all[nall].hi = lo + range < lo ? UINT64_MAX : lo + range;
		nall++;
		if (range > UNWIND_MAX_FDE_RANGE || lo < win->lo ||
		    lo > win->hi || range > win->hi - lo) {
			st->fdes_skipped++;
			continue;
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct unwind_fde *nv;

			if (!unwind_mem_charge(mem, (nc - cap) * sizeof(*v))) {
				err = -EDQUOT;
				goto out;
			}
			held += (nc - cap) * sizeof(*v);
			nv = realloc(v, nc * sizeof(*v));
			if (!nv) {
				err = -ENOMEM;
				goto out;
			}
			v = nv;
			cap = nc;
		}
		v[n].lo = lo;
		v[n].hi = lo + range;
		v[n].cost = rows + calls * (cie->cost + CALL_COST);
		n++;
	}
	if (eh && vet_hdr(hdr, hdr_addr, sec_addr, offs, noffs)) {
		err = -EBADMSG;
		goto out;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), fde_cmp);
	/*
	 * Without overlaps the FDE libdw runs for an address is the one we
	 * priced, so each FDE is charged its exact total up front.
	 * Otherwise (hostile) any call may run any covering FDE: charge
	 * every call the most expensive full run.
	 */
	*max_call = overlapping(all, nall) ? call_max : 0;
	/* What libdw will cache when it runs these programs. */
	{
		uint64_t cache = noffs * (uint64_t)UNWIND_LIBDW_FDE_BYTES +
				 ncie * (uint64_t)UNWIND_LIBDW_CIE_BYTES;

		if (unwind_mem_charge(mem, cache)) {
			if (mem)
				mem->libdw += cache;
		} else {
			err = -EDQUOT;
		}
	}
out:
	free(all);
	free(offs);
	if (err) {
		free(v);
		unwind_mem_uncharge(mem, held);
		return err;
	}
	/* v, trimmed to n, stays charged while the caller holds it. */
	if (n && n < cap) {
		struct unwind_fde *nv = realloc(v, n * sizeof(*v));

		if (nv)
			v = nv;
	}
	unwind_mem_uncharge(mem, held - n * sizeof(*v));
	*out = v;
	*nout = n;
	return 0;
}
