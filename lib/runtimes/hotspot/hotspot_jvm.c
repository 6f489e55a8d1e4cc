// SPDX-License-Identifier: Apache-2.0
#include "runtimes/hotspot/hotspot_jvm.h"

#include <errno.h>
#include <string.h>

static int rd(struct hotspot_jvm *j, uint64_t addr, void *buf, size_t len)
{
	return j->read(j->ctx, addr, buf, len) ? -EIO : 0;
}

static int rd64(struct hotspot_jvm *j, uint64_t addr, uint64_t *v)
{
	*v = 0;
	return rd(j, addr, v, 8);
}

static int rd32(struct hotspot_jvm *j, uint64_t addr, uint32_t *v)
{
	*v = 0;
	return rd(j, addr, v, 4);
}

static int rd16(struct hotspot_jvm *j, uint64_t addr, uint16_t *v)
{
	*v = 0;
	return rd(j, addr, v, 2);
}

int hotspot_jvm_heaps(struct hotspot_jvm *j)
{
	const struct hotspot_layout *l = &j->l;
	uint64_t arr, data;
	uint32_t len;

	j->nheaps = 0;
	if (rd64(j, l->code_heaps, &arr) || !arr ||
	    rd32(j, arr + l->array_len, &len) ||
	    rd64(j, arr + l->array_data, &data))
		return -EIO;
	if (len > HS_MAX_HEAPS)
		len = HS_MAX_HEAPS;
	for (uint32_t i = 0; i < len; i++) {
		struct hotspot_heap *h = &j->heaps[j->nheaps];
		uint64_t heap, reserved;
		uint32_t log2;

		if (rd64(j, data + 8 * i, &heap) || !heap ||
		    rd64(j, heap + l->heap_memory + l->vspace_low, &h->low) ||
		    rd64(j, heap + l->heap_memory + l->vspace_high, &h->high) ||
		    rd64(j, heap + l->heap_segmap + l->vspace_low,
			 &h->segmap) ||
		    rd32(j, heap + l->heap_log2_segment, &log2))
			continue;
		/* segments of 16 B to 64 KiB; a heap below 2 GiB */
		if (log2 < 4 || log2 > 16 || h->high <= h->low ||
		    h->high - h->low > (2ull << 30) || !h->segmap)
			continue;
		h->log2_segment = log2;
		/* The reserved end, where the JVM says: a pc in code
		 * committed since is still found (its segment map is
		 * committed with it; past that a read fails). */
		h->limit = h->high;
		if (l->vspace_high_boundary != HS_NONE &&
		    !rd64(j, heap + l->heap_memory + l->vspace_high_boundary,
			  &reserved) &&
		    reserved > h->high && reserved - h->low <= (2ull << 30))
			h->limit = reserved;
		j->nheaps++;
	}
	return j->nheaps ? 0 : -EIO;
}

int hotspot_jvm_open(struct hotspot_jvm *j, const struct hotspot_syms *syms,
		     mem_read_fn read, void *ctx, const char **missing)
{
	uint64_t q, buf;
	uint32_t limit;
	int err;

	memset(j, 0, sizeof(*j));
	j->read = read;
	j->ctx = ctx;
	*missing = NULL;
	err = hotspot_vmstructs_read(syms, read, ctx, &j->l);
	if (err)
		return err;
	*missing = hotspot_layout_missing(&j->l);
	if (*missing || !j->l.code_heaps)
		return -ENOTSUP;
	/* the interpreter: one StubQueue, fixed after start-up */
	if (rd64(j, j->l.interp_code, &q) || !q ||
	    rd64(j, q + j->l.stubq_buffer, &buf) ||
	    rd32(j, q + j->l.stubq_limit, &limit) || !buf ||
	    limit > (64u << 20))
		return -EIO;
	j->interp_low = buf;
	j->interp_high = buf + limit;
	return hotspot_jvm_heaps(j);
}

/* A CodeBlob's header, read in one call: naming a compiled frame reads
 * it on every sample (the blob's memory is reused when code is freed, so
 * it cannot be cached), and one read per field cost eight syscalls. */
struct blob_header {
	struct hotspot_jvm *j;
	uint64_t addr;
	uint32_t len; /* bytes in buf; 0: read field by field */
	uint8_t buf[HS_BLOB_HEADER_MAX];
};

static uint32_t span_of(uint32_t off, uint32_t size, uint32_t span)
{
	return off != HS_NONE && off + size > span ? off + size : span;
}

/* The bytes of the blob's header the fields below use. */
static uint32_t blob_span(const struct hotspot_layout *l)
{
	uint32_t s = 0;

	s = span_of(l->blob_size, 4, s);
	s = span_of(l->blob_frame_size, 4, s);
	s = span_of(l->blob_code_begin, 8, s);
	s = span_of(l->blob_code_end, 8, s);
	s = span_of(l->blob_code_offset, 4, s);
	s = span_of(l->blob_data_offset, 4, s);
	s = span_of(l->blob_name, 8, s);
	s = span_of(l->blob_kind, 1, s);
	s = span_of(l->nm_method, 8, s);
	s = span_of(l->nm_compile_id, 4, s);
	return s;
}

static int hdr(struct blob_header *h, uint32_t off, void *v, uint32_t size)
{
	memset(v, 0, size);
	if (h->len && off <= h->len && size <= h->len - off) {
		memcpy(v, h->buf + off, size);
		return 0;
	}
	return rd(h->j, h->addr + off, v, size);
}

static int blob_fields(struct hotspot_jvm *j, uint64_t addr,
		       struct hotspot_blob *b)
{
	const struct hotspot_layout *l = &j->l;
	struct blob_header h = {.j = j, .addr = addr};
	uint32_t size, fs, span = blob_span(l);

	memset(b, 0, sizeof(*b));
	b->addr = addr;
	/* a header past the buffer, or a read that fails across its end,
	 * is read field by field as before */
	if (span <= sizeof(h.buf) && !rd(j, addr, h.buf, span))
		h.len = span;
	if (hdr(&h, l->blob_size, &size, 4) ||
	    hdr(&h, l->blob_frame_size, &fs, 4))
		return -EIO;
	if (l->blob_code_begin != HS_NONE) { /* 17: pointers */
		if (hdr(&h, l->blob_code_begin, &b->code_begin, 8) ||
		    hdr(&h, l->blob_code_end, &b->code_end, 8))
			return -EIO;
	} else { /* 21+: offsets from the blob */
		uint32_t co, dof;

		if (hdr(&h, l->blob_code_offset, &co, 4) ||
		    hdr(&h, l->blob_data_offset, &dof, 4))
			return -EIO;
		b->code_begin = addr + co;
		b->code_end = addr + dof;
	}
	if (b->code_begin < addr || b->code_end < b->code_begin ||
	    b->code_end > addr + size || (int32_t)fs < 0 || fs > (1u << 16))
		return -EINVAL;
	b->frame_size = (int32_t)fs;
	if (l->blob_name != HS_NONE && hdr(&h, l->blob_name, &b->name, 8))
		return -EIO;
	if (l->blob_kind != HS_NONE && j->l.kind_nmethod >= 0) {
		uint8_t kind = 0;

		if (hdr(&h, l->blob_kind, &kind, 1))
			return -EIO;
		b->nmethod = kind == j->l.kind_nmethod;
	} else if (l->blob_name != HS_NONE) {
		/* 17: a compiled method's blob is named "nmethod", a
		 * native method's wrapper "native nmethod" */
		char name[16] = {0};

		if (rd(j, b->name, name, sizeof(name) - 1))
			return -EIO;
		b->nmethod = !strcmp(name, "nmethod") ||
			     !strcmp(name, "native nmethod");
	}
	if (b->nmethod && hdr(&h, l->nm_method, &b->method, 8))
		return -EIO;
	if (b->nmethod && l->nm_compile_id != HS_NONE &&
	    hdr(&h, l->nm_compile_id, &b->compile_id, 4))
		return -EIO;
	return 0;
}

int hotspot_blob_read(struct hotspot_jvm *j, uint64_t addr,
		      struct hotspot_blob *b)
{
	return blob_fields(j, addr, b);
}

int hotspot_blob_at(struct hotspot_jvm *j, uint64_t pc, struct hotspot_blob *b)
{
	for (uint32_t i = 0; i < j->nheaps; i++) {
		const struct hotspot_heap *h = &j->heaps[i];
		uint64_t seg;
		uint8_t v;
		int err;

		if (pc < h->low || pc >= h->limit)
			continue;
		seg = (pc - h->low) >> h->log2_segment;
		/* 0xff: free; else steps back to the block's first
		 * segment (0) */
		for (uint32_t k = 0;; k++) {
			if (k == HS_MAX_HOPS || rd(j, h->segmap + seg, &v, 1))
				return -EIO;
			if (v == 0xff)
				return -ENOENT;
			if (!v)
				break;
			if (v > seg)
				return -EIO;
			seg -= v;
		}
		err = blob_fields(j,
				  h->low + (seg << h->log2_segment) +
					  j->l.heap_block_size,
				  b);
		if (err)
			return err;
		return pc >= b->addr && pc < b->code_end + 64 ? 0 : -ENOENT;
	}
	return -ENOENT;
}

/* A Symbol's text: 0 or -errno. */
static int read_symbol(struct hotspot_jvm *j, uint64_t sym, char *out)
{
	uint16_t len;

	out[0] = '\0';
	if (!sym || rd16(j, sym + j->l.symbol_length, &len))
		return -EIO;
	if (len >= HS_SYMBOL_MAX)
		return -EINVAL;
	if (rd(j, sym + j->l.symbol_body, out, len))
		return -EIO;
	out[len] = '\0';
	if (memchr(out, '\0', len))
		return -EINVAL;
	return 0;
}

/* The Symbol at constant pool index idx. */
static int cp_symbol(struct hotspot_jvm *j, uint64_t cp, uint32_t cplen,
		     uint16_t idx, char *out)
{
	uint64_t sym;

	out[0] = '\0';
	if (!idx || idx >= cplen ||
	    rd64(j, cp + j->l.cpool_size + 8ull * idx, &sym))
		return -EINVAL;
	return read_symbol(j, sym, out);
}

int hotspot_method_read(struct hotspot_jvm *j, uint64_t method,
			struct hotspot_method *m)
{
	const struct hotspot_layout *l = &j->l;
	uint64_t cm, cp, klass, kname;
	uint16_t ni, si, sf = 0, cs = 0;
	uint32_t cplen = 0, flags = 0;

	memset(m, 0, sizeof(*m));
	if (!method || rd64(j, method + l->method_const, &cm) || !cm ||
	    rd64(j, cm + l->cmethod_constants, &cp) || !cp ||
	    rd16(j, cm + l->cmethod_name_index, &ni) ||
	    rd16(j, cm + l->cmethod_sig_index, &si) ||
	    rd64(j, cp + l->cpool_holder, &klass) || !klass ||
	    rd64(j, klass + l->klass_name, &kname))
		return -EIO;
	if (l->cpool_length != HS_NONE && rd32(j, cp + l->cpool_length, &cplen))
		return -EIO;
	if (cplen > 65536)
		return -EINVAL;
	if (read_symbol(j, kname, m->klass) ||
	    cp_symbol(j, cp, cplen, ni, m->name) ||
	    cp_symbol(j, cp, cplen, si, m->signature))
		return -EINVAL;
	if (l->cpool_source_file != HS_NONE &&
	    !rd16(j, cp + l->cpool_source_file, &sf) && sf)
		cp_symbol(j, cp, cplen, sf, m->source);
	m->const_method = cm;
	if (l->cmethod_code_size != HS_NONE &&
	    !rd16(j, cm + l->cmethod_code_size, &cs))
		m->code_size = cs;
	if (l->cmethod_flags != HS_NONE && l->has_linenumber_table > 0 &&
	    !rd32(j, cm + l->cmethod_flags, &flags) &&
	    (flags & (uint32_t)l->has_linenumber_table))
		m->linetable = cm + l->cmethod_size + cs;
	return 0;
}

/* 17's Pack200-style CompressedStream or 21+'s UNSIGNED5 (byte 0
 * excluded), both with 6-bit continuation digits. */
bool hotspot_stream_uint(const uint8_t *t, uint32_t len, uint32_t *pos,
			 bool unsigned5, uint32_t *out)
{
	const uint32_t x = unsigned5 ? 1 : 0, lo = unsigned5 ? 191 : 192;
	uint32_t sum = 0, b;

	for (uint32_t i = 0; i < 5; i++) {
		if (*pos >= len)
			return false;
		b = t[(*pos)++];
		if (b < x)
			return false;
		sum += (b - x) << (6 * i);
		if (b - x < lo || i == 4)
			break;
	}
	*out = sum;
	return true;
}

/* PcDescs read at most per nmethod (16 bytes each). */
#define HS_MAX_PCDESCS 4096
/* Metadata words an nmethod may have (its Methods and Klasses). */
#define HS_MAX_METADATA 65536

/* Where nmethod b's metadata lies (the Methods its scopes name by
 * index): 17 at an offset from the blob up to the scopes (scopes17),
 * 25 after the relocations in the blob's mutable data. false if the
 * JVM does not say or it does not add up. */
static bool metadata_range(struct hotspot_jvm *j, const struct hotspot_blob *b,
			   uint64_t scopes17, uint64_t *begin, uint64_t *end)
{
	const struct hotspot_layout *l = &j->l;
	uint32_t off, size, reloc;
	uint64_t mut;

	if (l->nm_metadata != HS_NONE && scopes17) {
		if (rd32(j, b->addr + l->nm_metadata, &off))
			return false;
		*begin = b->addr + off;
		*end = scopes17;
	} else if (l->blob_mutable_data != HS_NONE &&
		   l->blob_mutable_size != HS_NONE &&
		   l->blob_relocation_size != HS_NONE) {
		if (rd64(j, b->addr + l->blob_mutable_data, &mut) || !mut ||
		    rd32(j, b->addr + l->blob_mutable_size, &size) ||
		    rd32(j, b->addr + l->blob_relocation_size, &reloc) ||
		    reloc > size)
			return false;
		*begin = mut + reloc;
		*end = mut + size;
	} else {
		return false;
	}
	return *begin <= *end && *end - *begin <= HS_MAX_METADATA * 8ull &&
	       !((*end - *begin) % 8);
}

int hotspot_nmethod_scopes(struct hotspot_jvm *j, const struct hotspot_blob *b,
			   uint64_t pc, struct hotspot_scope *out, uint32_t max)
{
	const struct hotspot_layout *l = &j->l;
	uint64_t pcs, pcs_end, data, imm, meta = 0, meta_end = 0, scopes17 = 0;
	uint32_t rel, n, best = UINT32_MAX, scope = 0, s32, below = 0,
			 below_scope = 0, depth = 0, mis[HS_MAX_SCOPES];
	int32_t bcis[HS_MAX_SCOPES];
	bool have_meta;
	static uint8_t buf[HS_MAX_PCDESCS * 16]; /* one caller: the drain */

	if (!max || l->nm_scopes_pcs == HS_NONE || pc < b->code_begin)
		return -1;
	rel = (uint32_t)(pc - b->code_begin);
	if (rd32(j, b->addr + l->nm_scopes_pcs, &s32))
		return -1;
	if (l->nm_immutable_data != HS_NONE && l->nm_scopes_data != HS_NONE) {
		uint32_t sd;

		/* 21+: PcDescs then scopes in the immutable data */
		if (rd64(j, b->addr + l->nm_immutable_data, &imm) || !imm ||
		    rd32(j, b->addr + l->nm_scopes_data, &sd))
			return -1;
		pcs = imm + s32;
		pcs_end = imm + sd;
		data = imm + sd;
	} else if (l->nm_dependencies != HS_NONE &&
		   l->nm_scopes_data_begin != HS_NONE) {
		uint32_t dep;

		/* 17: PcDescs in the blob, scopes where a pointer says */
		if (rd32(j, b->addr + l->nm_dependencies, &dep) ||
		    rd64(j, b->addr + l->nm_scopes_data_begin, &data))
			return -1;
		pcs = b->addr + s32;
		pcs_end = b->addr + dep;
		scopes17 = data;
	} else {
		return -1;
	}
	if (pcs_end <= pcs || (pcs_end - pcs) % 16)
		return -1;
	n = (uint32_t)((pcs_end - pcs) / 16);
	if (n > HS_MAX_PCDESCS || rd(j, pcs, buf, (size_t)n * 16))
		return -1;
	/* the first PcDesc at or after pc: a return address's own; for a
	 * leaf past the last one, the last one before it */
	for (uint32_t i = 0; i < n; i++) {
		int32_t po, so;

		memcpy(&po, buf + 16 * i, 4);
		memcpy(&so, buf + 16 * i + 4, 4);
		if (po >= 0 && (uint32_t)po >= rel && (uint32_t)po < best &&
		    so > 0) {
			best = (uint32_t)po;
			scope = (uint32_t)so;
		} else if (po >= 0 && (uint32_t)po < rel &&
			   (uint32_t)po >= below && so > 0) {
			below = (uint32_t)po;
			below_scope = (uint32_t)so;
		}
	}
	if (best == UINT32_MAX)
		scope = below_scope;
	if (!scope)
		return -1;
	/* scope: sender offset, method index, bci + 1; innermost (what
	 * was inlined deepest) first, the outermost (sender 0) is the
	 * nmethod's own method */
	for (;;) {
		uint8_t s[16];
		uint32_t pos = 0, sender, mi, bci;

		if (depth == HS_MAX_SCOPES ||
		    rd(j, data + scope, s, sizeof(s)) ||
		    !hotspot_stream_uint(s, sizeof(s), &pos, l->unsigned5,
					 &sender) ||
		    !hotspot_stream_uint(s, sizeof(s), &pos, l->unsigned5,
					 &mi) ||
		    !hotspot_stream_uint(s, sizeof(s), &pos, l->unsigned5,
					 &bci))
			return -1;
		mis[depth] = mi;
		bcis[depth] = bci > 65536 ? -1 : (int32_t)bci - 1;
		depth++;
		if (!sender)
			break;
		if (sender == scope)
			return -1;
		scope = sender;
	}
	if (bcis[depth - 1] < 0)
		return -1;
	/* the Methods: metadata_at(i) is the i-th word from 1 (0: none);
	 * the outermost must name the nmethod's own Method, else the
	 * layout is not what we think and no inner one is believed */
	have_meta =
		depth > 1 && metadata_range(j, b, scopes17, &meta, &meta_end);
	if (have_meta) {
		uint64_t own = 0;
		uint32_t mi = mis[depth - 1];

		have_meta = mi && mi <= (meta_end - meta) / 8 &&
			    !rd64(j, meta + 8ull * (mi - 1), &own) &&
			    own == b->method;
	}
	/* a chain deeper than max keeps its outermost scopes */
	for (uint32_t k = depth > max ? depth - max : 0, o = 0; k < depth;
	     k++, o++) {
		uint64_t m = 0;
		uint32_t mi = mis[k];

		/* 0: not known (the caller's chain ends there) */
		if (k == depth - 1)
			m = b->method;
		else if (!have_meta || bcis[k] < 0 || !mi ||
			 mi > (meta_end - meta) / 8 ||
			 rd64(j, meta + 8ull * (mi - 1), &m))
			m = 0;
		out[o].method = m;
		out[o].bci = bcis[k];
	}
	return (int)(depth > max ? max : depth);
}

int32_t hotspot_nmethod_bci(struct hotspot_jvm *j, const struct hotspot_blob *b,
			    uint64_t pc)
{
	struct hotspot_scope sc[HS_MAX_SCOPES];
	int n = hotspot_nmethod_scopes(j, b, pc, sc, HS_MAX_SCOPES);

	return n > 0 ? sc[n - 1].bci : -1;
}

/* One signed number of a compressed stream: the unsigned number
 * hotspot_stream_uint reads, zigzag-decoded as HotSpot's decode_sign does
 * ((v >> 1) ^ -(v & 1)). false at the end of t. */
static bool read_signed(const uint8_t *t, uint32_t len, uint32_t *pos,
			bool unsigned5, int32_t *out)
{
	uint32_t v;

	if (!hotspot_stream_uint(t, len, pos, unsigned5, &v))
		return false;
	*out = (int32_t)((v >> 1) ^ -(v & 1));
	return true;
}

uint32_t hotspot_linetable_line(const uint8_t *t, uint32_t len, bool unsigned5,
				uint32_t bci)
{
	uint32_t pos = 0, line = 0, best = 0;
	int64_t cur_bci = 0, cur_line = 0;

	while (pos < len) {
		uint8_t b = t[pos++];
		int32_t db, dl;

		if (!b)
			break; /* end of the table */
		if (b != 0xff) {
			db = b >> 3;
			dl = b & 7;
		} else if (!read_signed(t, len, &pos, unsigned5, &db) ||
			   !read_signed(t, len, &pos, unsigned5, &dl)) {
			break;
		}
		cur_bci += db;
		cur_line += dl;
		if (cur_bci < 0 || cur_bci > 65535 || cur_line < 0 ||
		    cur_line > (1 << 24))
			break;
		if ((uint64_t)cur_bci <= bci) {
			line = (uint32_t)cur_line;
			best = 1;
		} else if (best) {
			break; /* entries are in bci order */
		}
	}
	return line;
}

uint32_t hotspot_method_line(struct hotspot_jvm *j,
			     const struct hotspot_method *m, uint32_t bci)
{
	return hotspot_line_at(j, m->linetable, bci);
}

uint32_t hotspot_line_at(struct hotspot_jvm *j, uint64_t linetable,
			 uint32_t bci)
{
	uint8_t t[512];

	/* a line table of a method is a few bytes per line: 512 cover
	 * methods of ~100 lines; longer tables stay unread past it */
	if (!linetable)
		return 0;
	for (uint32_t n = sizeof(t); n >= 16; n /= 2)
		if (!rd(j, linetable, t, n))
			return hotspot_linetable_line(t, n, j->l.unsigned5,
						      bci);
	return 0;
}

int hotspot_each_blob(struct hotspot_jvm *j, uint32_t max, hotspot_blob_fn fn,
		      void *arg)
{
	uint32_t seen = 0;

	for (uint32_t i = 0; i < j->nheaps; i++) {
		const struct hotspot_heap *h = &j->heaps[i];
		uint64_t seg = 0, nseg = (h->high - h->low) >> h->log2_segment;

		while (seg < nseg && seen < max) {
			uint64_t blk = h->low + (seg << h->log2_segment),
				 len = 0;
			struct hotspot_blob b;
			uint8_t used = 1; /* unknown: blob_fields checks it */

			if (rd(j, blk, &len, j->l.heap_block_size < 16 ? 4 : 8))
				return -EIO;
			if (j->l.heap_block_size < 16)
				len &= 0xffffffff;
			if (j->l.heap_block_used != HS_NONE)
				rd(j, blk + j->l.heap_block_used, &used, 1);
			if (!len)
				return -EIO;
			if (used &&
			    !blob_fields(j, blk + j->l.heap_block_size, &b) &&
			    fn)
				fn(arg, &b);
			seen++;
			seg += len;
		}
	}
	return 0;
}
