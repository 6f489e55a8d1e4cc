// SPDX-License-Identifier: Apache-2.0
/*
 * CIE and FDE decoding for the direct CFI interpreter (cfi_interp.c):
 * entry framing of .eh_frame and .debug_frame (32- and 64-bit DWARF),
 * CIE augmentations z, R, P, L, S, and the FDE list of a section. Reads the
 * section in place; every read is bounded by the entry it belongs to.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/cfi_read.h"
#include "unwind/unwind_internal.h"

struct entry {
	uint64_t next;	  /* offset of the next entry */
	uint64_t cie_off; /* FDE: its CIE's entry offset */
	const uint8_t *body, *end;
	bool cie;
};

/*
 * Frame the entry at `off`. Returns 0, 1 at the end of the section (the
 * last 4 bytes are the terminator linkers write), -1 for a broken entry
 * whose length is sound (e->next valid) or -2 when the walk cannot go on.
 */
static int entry_at(const struct cfi_sec *s, uint64_t off, struct entry *e)
{
	const uint8_t *p, *lim = s->buf + s->size;
	uint64_t len, id, pos;
	uint32_t w;
	size_t osz = 4;

	if (off >= s->size || s->size - off <= 4)
		return 1;
	p = s->buf + off;
	memcpy(&w, p, 4);
	p += 4;
	len = w;
	if (w == 0xffffffffu) {
		osz = 8;
		if (lim - p < 8)
			return -2;
		memcpy(&len, p, 8);
		p += 8;
	}
	if ((uint64_t)(lim - p) < len || len < osz + 1)
		return -2;
	e->next = (uint64_t)(p - s->buf) + len;
	e->end = p + len;
	pos = (uint64_t)(p - s->buf);
	if (osz == 8) {
		memcpy(&id, p, 8);
	} else {
		memcpy(&w, p, 4);
		id = w;
		if (!s->eh && w == 0xffffffffu)
			id = UINT64_MAX;
	}
	e->body = p + osz;
	if (s->eh) {
		/* A CIE pointer counts back from its own field. */
		e->cie = id == 0;
		if (!e->cie) {
			if (id > pos || pos <= osz)
				return -1;
			e->cie_off = pos - id;
		}
	} else {
		e->cie = id == UINT64_MAX;
		e->cie_off = id;
	}
	return 0;
}

/* The CIE's augmentation data: only what x86_64 and aarch64 toolchains
 * write. */
static int cie_augmentation(const char *a, const uint8_t *p, const uint8_t *end,
			    bool aarch64, struct cfi_cie *c)
{
	for (size_t i = 1; a[i]; i++) {
		switch (a[i]) {
		case 'R':
			if (p >= end)
				return -1;
			c->enc = *p++;
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
			/* Only its size matters (aligned would depend on
			 * the position: not emitted for x86_64). */
			if ((penc & 0x70) == DW_EH_PE_aligned ||
			    cfi_read_encoded(&p, end, penc & 0x0f, 0, &dummy))
				return -1;
			break;
		}
		case 'S':
			c->signal = true;
			break;
		case 'B': /* aarch64: return addresses signed with key B */
		case 'G': /* aarch64: MTE-tagged stack frames */
			/* No data; neither changes where anything is saved
			 * (the walk strips signatures whatever the key). */
			if (!aarch64)
				return -1;
			break;
		default:
			return -1;
		}
	}
	return 0;
}

static int cie_at(const struct cfi_sec *s, uint64_t off, struct cfi_cie *c)
{
	struct entry e;
	const uint8_t *p, *end, *nul;
	const char *aug;
	uint8_t version;

	if (entry_at(s, off, &e) != 0 || !e.cie)
		return -1;
	memset(c, 0, sizeof(*c));
	c->enc = DW_EH_PE_absptr; /* ELF64: 8-byte absolute addresses */
	p = e.body;
	end = e.end;
	if (p >= end)
		return -1;
	version = *p++;
	if (version != 1 && version != 3 && version != 4)
		return -1;
	nul = memchr(p, '\0', (size_t)(end - p));
	if (!nul)
		return -1;
	aug = (const char *)p;
	p = nul + 1;
	if (version >= 4) {
		if (end - p < 2 || p[0] != 8 || p[1] != 0)
			return -1; /* address size 8, no segments */
		p += 2;
	}
	if (cfi_read_uleb(&p, end, &c->caf) || cfi_read_sleb(&p, end, &c->daf))
		return -1;
	if (version == 1) {
		if (p >= end)
			return -1;
		c->ra = *p++;
	} else if (cfi_read_uleb(&p, end, &c->ra)) {
		return -1;
	}
	if (aug[0] == 'z') {
		uint64_t alen;

		if (cfi_read_uleb(&p, end, &alen) ||
		    alen > (uint64_t)(end - p) ||
		    cie_augmentation(aug, p, p + alen, s->aarch64, c))
			return -1;
		p += alen;
		c->z = true;
	} else if (aug[0] != '\0') {
		/* Without 'z' the data's length is unknown ("eh" of old
		 * g++ and the like): where the program starts is a guess. */
		return -1;
	}
	if ((size_t)(end - p) > UNWIND_MAX_FDE_INSNS)
		return -1;
	c->init = p;
	c->init_end = end;
	return 0;
}

static int fde_decode(const struct cfi_sec *s, const struct entry *e,
		      const struct cfi_cie *c, struct cfi_fde *f)
{
	const uint8_t *p = e->body;

	f->cie = *c;
	if (cfi_read_encoded(&p, e->end, c->enc,
			     s->addr + (uint64_t)(p - s->buf), &f->lo) ||
	    cfi_read_encoded(&p, e->end, c->enc & 0x0f, 0, &f->range))
		return -1;
	if (c->z) {
		uint64_t alen;

		if (cfi_read_uleb(&p, e->end, &alen) ||
		    alen > (uint64_t)(e->end - p))
			return -1;
		p += alen;
	}
	f->prog = p;
	f->prog_end = e->end;
	return 0;
}

int cfi_fde_at(const struct cfi_sec *s, uint64_t off, struct cfi_fde *f)
{
	struct entry e;
	struct cfi_cie c;

	if (entry_at(s, off, &e) != 0 || e.cie || cie_at(s, e.cie_off, &c) ||
	    fde_decode(s, &e, &c, f))
		return -1;
	return 0;
}

/* Recently used CIEs: FDEs mostly share one or two. */
struct cie_slot {
	uint64_t off;
	struct cfi_cie c;
	int8_t state; /* 0 empty, 1 usable, -1 unusable */
};

#define CIE_CACHE 64

static const struct cfi_cie *cie_cached(const struct cfi_sec *s, uint64_t off,
					struct cie_slot *cache)
{
	struct cie_slot *sl = &cache[(off >> 2) % CIE_CACHE];

	if (sl->state == 0 || sl->off != off) {
		sl->off = off;
		sl->state = cie_at(s, off, &sl->c) ? -1 : 1;
	}
	return sl->state > 0 ? &sl->c : NULL;
}

static int fde_cmp(const void *a, const void *b)
{
	const struct unwind_fde *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1; /* longest first */
	return x->off < y->off ? -1 : x->off > y->off;
}

int unwind_cfi_collect(const struct cfi_sec *s, const struct unwind_window *win,
		       struct unwind_fde **out, size_t *nout,
		       struct unwind_table_stats *st, struct unwind_mem *mem)
{
	struct cie_slot *cache;
	struct unwind_fde *v = NULL;
	size_t n = 0, cap = 0, seen = 0;
	uint64_t off = 0, held = 0;
	int err = 0;

	*out = NULL;
	*nout = 0;
	if (!unwind_mem_charge(mem, CIE_CACHE * sizeof(*cache)))
		return -EDQUOT;
	cache = calloc(CIE_CACHE, sizeof(*cache));
	if (!cache) {
		unwind_mem_uncharge(mem, CIE_CACHE * sizeof(*cache));
		return -ENOMEM;
	}
	while (off < s->size) {
		struct entry e;
		struct cfi_fde f;
		const struct cfi_cie *c;
		uint64_t here = off, flen;
		int r = entry_at(s, off, &e);

		if (r == 1)
			break;
		if (r < 0) {
			st->fdes_total++;
			st->fdes_skipped++;
			if (r == -2) {
				/* No length to resynchronise on. */
				st->flags |= UNWIND_ST_CFI_CORRUPT;
				break;
			}
			off = e.next;
			continue;
		}
		off = e.next;
		if (e.cie)
			continue;
		st->fdes_total++;
		/* Same cap as the libdw path, so both list the same FDEs. */
		if (++seen > UNWIND_MAX_FDES) {
			err = -E2BIG;
			goto out;
		}
		c = cie_cached(s, e.cie_off, cache);
		if (!c || fde_decode(s, &e, c, &f)) {
			st->fdes_skipped++;
			st->flags |= UNWIND_ST_CFI_CORRUPT;
			continue;
		}
		flen = (uint64_t)(f.prog_end - f.prog);
		if (flen > st->max_fde_insns)
			st->max_fde_insns =
				(uint32_t)(flen > UINT32_MAX ? UINT32_MAX
							     : flen);
		if (f.range == 0)
			continue; /* legitimate (discarded code); no rows */
		if (flen > UNWIND_MAX_FDE_INSNS ||
		    f.range > UNWIND_MAX_FDE_RANGE || f.lo < win->lo ||
		    f.lo > win->hi || f.range > win->hi - f.lo) {
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
		v[n].lo = f.lo;
		v[n].hi = f.lo + f.range;
		v[n].off = here;
		n++;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), fde_cmp);
out:
	free(cache);
	unwind_mem_uncharge(mem, CIE_CACHE * sizeof(*cache));
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
