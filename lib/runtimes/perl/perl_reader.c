// SPDX-License-Identifier: Apache-2.0
#include "runtimes/perl/perl_reader.h"

#include <stdio.h>
#include <string.h>

#include "process/user_va.h"

/* A user-space address a pointer field may hold (this machine's). */
static bool plausible(uint64_t a)
{
	return a >= 4096 && a < USER_VA_END;
}

static bool rd(struct perl_reader *r, uint64_t addr, void *buf, size_t len)
{
	return plausible(addr) && addr + len < USER_VA_END &&
	       !r->read(r->read_ctx, addr, buf, len);
}

static uint64_t u64_at(const uint8_t *b, uint16_t off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

static uint32_t u32_at(const uint8_t *b, uint16_t off)
{
	uint32_t v;

	memcpy(&v, b + off, 4);
	return v;
}

/* A NUL-terminated string at addr, cut at max - 1 bytes; read up to the
 * page end first, so a short string at the end of a mapping reads. */
static bool read_cstr(struct perl_reader *r, uint64_t addr, char *out,
		      size_t max)
{
	size_t got = 0;

	while (got < max - 1) {
		uint64_t a = addr + got;
		size_t n = 4096 - (a & 4095);

		if (n > max - 1 - got)
			n = max - 1 - got;
		if (!rd(r, a, out + got, n))
			return false;
		if (memchr(out + got, '\0', n))
			return true;
		got += n;
	}
	out[max - 1] = '\0';
	return true;
}

/* An SV's body pointer and flags, if its type is `type`. */
static bool sv_head(struct perl_reader *r, uint64_t sv, uint16_t type,
		    uint64_t *any, uint32_t *flags)
{
	const struct perl_layout *l = r->l;
	uint8_t h[64];

	if (!rd(r, sv, h, l->sv_flags + 4u))
		return false;
	*any = u64_at(h, 0);
	*flags = u32_at(h, l->sv_flags);
	return (*flags & l->svt_mask) == type && plausible(*any);
}

/* A HEK's text appended at out (size left: cap). */
static bool hek_text(struct perl_reader *r, uint64_t hek, char *out, size_t cap)
{
	const struct perl_layout *l = r->l;
	uint8_t h[64];
	int32_t len;

	if (!cap || !rd(r, hek, h, l->hek_len + 4u))
		return false;
	memcpy(&len, h + l->hek_len, 4);
	/* negative: a key that is an SV (never a name) */
	if (len < 0 || len > PERL_NAME_MAX)
		return false;
	if ((size_t)len >= cap)
		len = (int32_t)cap - 1;
	if (len && !rd(r, hek + l->hek_key, out, (size_t)len))
		return false;
	out[len] = '\0';
	return !memchr(out, '\0', (size_t)len);
}

/* The name of stash (a package's symbol table) into out, or false. */
static bool stash_name(struct perl_reader *r, uint64_t stash, char *out,
		       size_t cap)
{
	const struct perl_layout *l = r->l;
	uint64_t body, name;
	uint32_t flags;
	uint8_t aux[256 + 8];
	int32_t count;

	if (!sv_head(r, stash, l->svt_pvhv, &body, &flags) ||
	    !(flags & l->svf_ook))
		return false;
	if (!rd(r, body + l->xhv_aux, aux, l->aux_name_count + 4u))
		return false;
	name = u64_at(aux, l->aux_name);
	memcpy(&count, aux + l->aux_name_count, 4);
	/* several names (a stash renamed or aliased): the first is its
	 * name, the rest its effective names */
	if (count && !rd(r, name, &name, 8))
		return false;
	return plausible(name) && hek_text(r, name, out, cap);
}

/* A GV's name (a HEK) and its stash. */
static bool gv_name_stash(struct perl_reader *r, uint64_t gv, uint64_t *namehek,
			  uint64_t *stash)
{
	const struct perl_layout *l = r->l;
	uint64_t gbody;
	uint32_t flags;
	uint8_t b[256 + 8];

	if (!sv_head(r, gv, l->svt_pvgv, &gbody, &flags) ||
	    !rd(r, gbody, b,
		(l->xgv_namehek > l->xgv_stash ? l->xgv_namehek
					       : l->xgv_stash) +
			8u))
		return false;
	*namehek = u64_at(b, l->xgv_namehek);
	*stash = u64_at(b, l->xgv_stash);
	return true;
}

/* "Pkg::sub" of cv into out; *gv_out: what it was read from, *file_out
 * its CvFILE. */
static bool cv_name(struct perl_reader *r, uint64_t cv, char *out,
		    uint64_t *gv_out, uint64_t *file_out)
{
	const struct perl_layout *l = r->l;
	uint64_t body, gv, namehek, stash;
	uint32_t flags, cvflags;
	uint8_t b[256 + 8];
	size_t n, need = l->xcv_gv + 8u;

	if (!sv_head(r, cv, l->svt_pvcv, &body, &flags))
		return false;
	if (l->xcv_flags + 4u > need)
		need = l->xcv_flags + 4u;
	if (l->xcv_file + 8u > need)
		need = l->xcv_file + 8u;
	if (!rd(r, body, b, need))
		return false;
	gv = u64_at(b, l->xcv_gv);
	cvflags = u32_at(b, l->xcv_flags);
	*gv_out = gv;
	*file_out = u64_at(b, l->xcv_file);
	if (!plausible(gv))
		return false;
	if (cvflags & l->cvf_named) /* a lexical sub: its name only */
		return hek_text(r, gv, out, PERL_NAME_MAX);
	if (!gv_name_stash(r, gv, &namehek, &stash))
		return false;
	out[0] = '\0';
	if (plausible(stash) && stash_name(r, stash, out, PERL_NAME_MAX - 3)) {
		n = strlen(out);
		memcpy(out + n, "::", 3);
	}
	n = strlen(out);
	return plausible(namehek) &&
	       hek_text(r, namehek, out + n, PERL_NAME_MAX - n);
}

static uint32_t slot_of(uint64_t a, uint32_t nslots)
{
	a ^= a >> 29;
	a *= 0xbf58476d1ce4e5b9ull;
	a ^= a >> 32;
	return (uint32_t)(a & (nslots - 1));
}

static const struct perl_name_slot *name_of(struct perl_reader *r, uint64_t cv,
					    uint64_t now)
{
	struct perl_name_slot *s = &r->names[slot_of(cv, PERL_NAME_SLOTS)];
	char name[PERL_NAME_MAX];
	uint64_t gv = 0, file = 0;
	bool ok;

	if (s->cv == cv && now - s->checked_ns < PERL_RECHECK_NS)
		return s->ok ? s : NULL;
	ok = cv_name(r, cv, name, &gv, &file);
	if (!ok)
		r->read_errors++;
	s->cv = cv;
	s->gv = gv;
	s->file = file;
	s->checked_ns = now;
	s->ok = ok;
	if (ok)
		memcpy(s->name, name, sizeof(name));
	return ok ? s : NULL;
}

/* A non-threaded build's COP names its file by a GV, "_<" and the path
 * (CopFILE: GvNAME(CopFILEGV(cop)) + 2). */
static bool file_of_gv(struct perl_reader *r, uint64_t gv, char *out,
		       size_t cap)
{
	uint64_t namehek, stash;
	char name[PERL_FILE_MAX + 2];

	if (!gv_name_stash(r, gv, &namehek, &stash) || !plausible(namehek) ||
	    !hek_text(r, namehek, name,
		      cap + 2 < sizeof(name) ? cap + 2 : sizeof(name)) ||
	    strncmp(name, "_<", 2))
		return false;
	memcpy(out, name + 2, strlen(name + 2) + 1);
	return true;
}

/* The file of a COP's file field (a char *, or a GV * where cop_file_gv),
 * or a CV's (always a char *). */
static const char *file_of(struct perl_reader *r, uint64_t ptr, bool gv,
			   uint64_t now)
{
	struct perl_file_slot *s = &r->files[slot_of(ptr, PERL_FILE_SLOTS)];

	if (s->ptr == ptr && s->gv == gv &&
	    now - s->checked_ns < PERL_RECHECK_NS)
		return s->ok ? s->file : NULL;
	s->ptr = ptr;
	s->gv = gv;
	s->checked_ns = now;
	s->ok = gv ? file_of_gv(r, ptr, s->file, sizeof(s->file))
		   : read_cstr(r, ptr, s->file, sizeof(s->file));
	if (!s->ok)
		r->read_errors++;
	return s->ok ? s->file : NULL;
}

void perl_reader_init(struct perl_reader *r, const struct perl_layout *l,
		      bool cop_file_gv, mem_read_fn read, void *read_ctx)
{
	memset(r, 0, sizeof(*r));
	r->l = l;
	r->cop_file_gv = cop_file_gv;
	r->read = read;
	r->read_ctx = read_ctx;
}

bool perl_reader_frame(struct perl_reader *r, uint64_t cv, uint64_t cop,
		       uint64_t now_ns, struct perl_frame_info *out)
{
	const struct perl_layout *l = r->l;
	const struct perl_name_slot *sub = NULL;
	uint8_t c[256 + 8];
	uint16_t need =
		(l->cop_file > l->cop_line ? l->cop_file : l->cop_line) + 8;

	memset(out, 0, sizeof(*out));
	if (cv == OTELPROF_PERL_MAIN) {
		out->name = "main";
	} else {
		sub = name_of(r, cv, now_ns);
		if (!sub)
			return false;
		out->name = sub->name;
	}
	if (!cop) {
		/* a sub entering or leaving (perl.bpf.c): its line is
		 * unknown, its file is the one it was compiled from */
		if (sub && plausible(sub->file))
			out->file = file_of(r, sub->file, false, now_ns);
		return true;
	}
	if (rd(r, cop, c, need)) {
		out->line = u32_at(c, l->cop_line);
		out->file = file_of(r, u64_at(c, l->cop_file), r->cop_file_gv,
				    now_ns);
	} else {
		r->read_errors++;
	}
	return true;
}
