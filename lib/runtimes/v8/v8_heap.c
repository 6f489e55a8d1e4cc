// SPDX-License-Identifier: Apache-2.0
#include "runtimes/v8/v8_heap.h"
#include "process/user_va.h"
#include "runtimes/v8/v8_position_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* V8 keeps a ScopeInfo's local names inline up to this many, a hash
 * table beyond (ScopeInfo::kScopeInfoMaxInlinedLocalNamesSize). */
#define V8_INLINE_LOCALS 75

static int rd(struct v8_reader *r, uint64_t addr, void *buf, size_t len)
{
	if (len > r->budget)
		return -EDQUOT;
	r->budget -= len;
	return r->read(r->ctx, addr, buf, len);
}

static bool is_heap(const struct v8_layout *l, uint64_t v)
{
	return (v & l->heap_tag_mask) == l->heap_tag && v > 4096;
}

static bool is_smi(const struct v8_layout *l, uint64_t v)
{
	return (v & l->smi_tag_mask) == l->smi_tag;
}

static int64_t smi_value(const struct v8_layout *l, uint64_t v)
{
	if (l->tagged_size == 4)
		return (int32_t)(uint32_t)v >> l->smi_shift;
	return (int64_t)v >> l->smi_shift;
}

/* The tagged field at off of heap object obj (decompressed: a
 * compressed pointer is relative to its cage, the 4 GiB the object is
 * in). */
static bool field(struct v8_reader *r, uint64_t obj, uint32_t off,
		  uint64_t *out)
{
	const struct v8_layout *l = r->l;
	uint64_t a = (obj & ~l->heap_tag_mask) + off;

	if (l->tagged_size == 4) {
		uint32_t v;

		if (rd(r, a, &v, 4))
			return false;
		*out = (v & l->heap_tag_mask) == l->heap_tag
			       ? (obj & ~0xffffffffull) | v
			       : v;
		return true;
	}
	return !rd(r, a, out, 8);
}

static bool is_type(int32_t want, uint16_t t)
{
	return want >= 0 && t == (uint16_t)want;
}

static bool instance_type(struct v8_reader *r, uint64_t obj, uint16_t *t)
{
	uint64_t map;

	if (!is_heap(r->l, obj) || !field(r, obj, r->l->obj_map, &map) ||
	    !is_heap(r->l, map))
		return false;
	return !rd(r, (map & ~r->l->heap_tag_mask) + r->l->map_instance_type, t,
		   2);
}

/* ---- strings ---- */

struct units {
	uint16_t *v;
	uint32_t n, cap;
};

/* Append count UTF-16 units of string s from unit `from` (cut at the
 * buffer's capacity). */
static bool flatten(struct v8_reader *r, uint64_t s, uint32_t from,
		    uint32_t count, struct units *u, int depth)
{
	const struct v8_layout *l = r->l;
	uint64_t a, p, q;
	uint16_t t;
	int32_t len;

	if (depth > V8_STRING_DEPTH || !instance_type(r, s, &t) ||
	    t >= l->first_nonstring)
		return false;
	a = s & ~l->heap_tag_mask;
	if (rd(r, a + l->str_length, &len, 4) || len < 0 ||
	    from > (uint32_t)len)
		return false;
	if (count > (uint32_t)len - from)
		count = (uint32_t)len - from;
	if (count > u->cap - u->n)
		count = u->cap - u->n;
	if (!count)
		return true;
	if ((t & l->repr_mask) == l->seq_tag) {
		if ((t & l->enc_mask) == l->one_byte_tag) {
			uint8_t buf[512];

			for (uint32_t k = 0; k < count;) {
				uint32_t c = count - k < sizeof(buf)
						     ? count - k
						     : sizeof(buf);

				if (rd(r, a + l->seq1_chars + from + k, buf, c))
					return false;
				for (uint32_t j = 0; j < c; j++)
					u->v[u->n++] = buf[j];
				k += c;
			}
			return true;
		}
		if (rd(r, a + l->seq2_chars + 2ull * from, u->v + u->n,
		       2ull * count))
			return false;
		u->n += count;
		return true;
	}
	if ((t & l->repr_mask) == l->cons_tag) {
		int32_t flen;

		if (!field(r, s, l->cons_first, &p) ||
		    !field(r, s, l->cons_second, &q) ||
		    rd(r, (p & ~l->heap_tag_mask) + l->str_length, &flen, 4) ||
		    flen < 0 || flen > len)
			return false;
		if (from < (uint32_t)flen &&
		    !flatten(r, p, from, count, u, depth + 1))
			return false;
		if (from + count > (uint32_t)flen) {
			uint32_t f2 = from > (uint32_t)flen
					      ? from - (uint32_t)flen
					      : 0;

			return flatten(r, q, f2,
				       from + count - (uint32_t)flen - f2, u,
				       depth + 1);
		}
		return true;
	}
	if ((t & l->repr_mask) == l->thin_tag)
		return field(r, s, l->thin_actual, &p) &&
		       flatten(r, p, from, count, u, depth + 1);
	if ((t & l->repr_mask) == l->sliced_tag) {
		if (!field(r, s, l->sliced_parent, &p) ||
		    !field(r, s, l->sliced_offset, &q) || !is_smi(l, q) ||
		    smi_value(l, q) < 0 || smi_value(l, q) > INT32_MAX)
			return false;
		return flatten(r, p, from + (uint32_t)smi_value(l, q), count, u,
			       depth + 1);
	}
	if ((t & l->repr_mask) == l->ext_tag) {
		/* Outside the heap (node's own modules' sources): the
		 * resource's data, which V8 caches in the word after the
		 * resource pointer (no sandbox: raw pointers). */
		uint64_t data;

		if (rd(r, a + l->ext_resource + 8, &data, 8) || !data)
			return false;
		if ((t & l->enc_mask) == l->one_byte_tag) {
			uint8_t buf[512];

			for (uint32_t k = 0; k < count;) {
				uint32_t c = count - k < sizeof(buf)
						     ? count - k
						     : sizeof(buf);

				if (rd(r, data + from + k, buf, c))
					return false;
				for (uint32_t j = 0; j < c; j++)
					u->v[u->n++] = buf[j];
				k += c;
			}
			return true;
		}
		if (rd(r, data + 2ull * from, u->v + u->n, 2ull * count))
			return false;
		u->n += count;
		return true;
	}
	return false;
}

bool v8_string_read(struct v8_reader *r, uint64_t s, char *out, size_t cap)
{
	uint16_t units[V8_NAME_MAX];
	struct units u = {units, 0, V8_NAME_MAX};
	size_t o = 0;

	if (!cap)
		return false;
	out[0] = 0;
	if (!flatten(r, s, 0, UINT32_MAX, &u, 0))
		return false;
	for (uint32_t k = 0; k < u.n; k++) {
		uint16_t c = units[k];
		size_t need = c < 0x80 ? 1 : c < 0x800 ? 2 : 3;

		if (o + need >= cap)
			break;
		if (c >= 0xd800 && c < 0xe000)
			c = '?'; /* a surrogate half: not one character */
		if (c < 0x80) {
			out[o++] = (char)(c < 0x20 ? '?' : c);
		} else if (c < 0x800) {
			out[o++] = (char)(0xc0 | (c >> 6));
			out[o++] = (char)(0x80 | (c & 0x3f));
		} else {
			out[o++] = (char)(0xe0 | (c >> 12));
			out[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
			out[o++] = (char)(0x80 | (c & 0x3f));
		}
	}
	out[o] = 0;
	return true;
}

uint32_t *v8_line_starts(struct v8_reader *r, uint64_t source, uint32_t *n)
{
	struct units u = {NULL, 0, V8_SOURCE_MAX};
	uint32_t *starts = NULL, ns = 0, cap = 0;

	*n = 0;
	u.v = malloc(sizeof(uint16_t) * V8_SOURCE_MAX);
	if (!u.v)
		return NULL;
	if (!flatten(r, source, 0, UINT32_MAX, &u, 0)) {
		free(u.v);
		return NULL;
	}
	for (uint32_t k = 0; k < u.n; k++) {
		if (u.v[k] != '\n')
			continue;
		if (ns == cap) {
			uint32_t nc = cap ? 2 * cap : 64;
			uint32_t *ns_v = realloc(starts, nc * sizeof(*starts));

			if (!ns_v) {
				free(starts);
				free(u.v);
				return NULL;
			}
			starts = ns_v;
			cap = nc;
		}
		starts[ns++] = k + 1;
	}
	free(u.v);
	if (!starts)
		starts = malloc(sizeof(*starts)); /* one line: none */
	*n = ns;
	return starts;
}

uint32_t v8_line_of(const uint32_t *starts, uint32_t n, uint32_t pos)
{
	uint32_t lo = 0, hi = n;

	/* lines before pos: starts <= pos */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (starts[mid] <= pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo + 1;
}

/* ---- functions ---- */

uint64_t v8_function_shared(struct v8_reader *r, uint64_t fn)
{
	uint64_t sfi;

	if (!is_heap(r->l, fn) || !field(r, fn, r->l->fn_shared, &sfi) ||
	    !is_heap(r->l, sfi))
		return 0;
	return sfi;
}

/* Slot k of a ScopeInfo (tagged words after its map). */
static bool slot(struct v8_reader *r, uint64_t si, uint32_t k, uint64_t *v)
{
	return field(r, si, r->l->tagged_size * (1 + k), v);
}

static bool is_string(struct v8_reader *r, uint64_t v)
{
	uint16_t t;

	return instance_type(r, v, &t) && t < r->l->first_nonstring;
}

/*
 * The function's name and start from its ScopeInfo. After the context
 * locals (names, then infos) come optional parts whose presence only
 * the ScopeInfo's flags say, and those flags' bits differ between
 * versions with nothing in v8dbg to describe them: they are told apart
 * by their types instead. The function variable is its name (a String,
 * or Smi zero) and a Smi slot index; the inferred name (for an
 * anonymous function) a String or undefined; the position (start, end)
 * two Smis, start <= end. V8 13 (Node 24) moved the position into the
 * header, the two slots between the context local count and the
 * variable part (v8dbg's indices show the gap).
 */
static bool scope_info(struct v8_reader *r, uint64_t si,
		       struct v8_function *out)
{
	const struct v8_layout *l = r->l;
	uint64_t v[8], ncl;
	uint32_t base, k, p = 0;

	if (!slot(r, si, l->si_ncontextlocals, &ncl) || !is_smi(l, ncl) ||
	    smi_value(l, ncl) < 0 || smi_value(l, ncl) > V8_SCOPE_SLOTS)
		return false;
	base = l->si_first_vars + (smi_value(l, ncl) < V8_INLINE_LOCALS
					   ? 2 * (uint32_t)smi_value(l, ncl)
					   : (uint32_t)smi_value(l, ncl) + 1);
	for (k = 0; k < 8; k++)
		if (!slot(r, si, base + k, &v[k]))
			break;
	if (k < 8)
		return false;
	/* the function variable: its name, then its slot index */
	if (is_string(r, v[p]) &&
	    v8_string_read(r, v[p], out->name, sizeof(out->name))) {
		p++;
		if (is_smi(l, v[p]))
			p++;
	} else if (is_smi(l, v[p]) && !smi_value(l, v[p]) &&
		   is_smi(l, v[p + 1])) {
		p += 2; /* none: Smi zero, and an index */
	}
	/* the inferred name: a String, or undefined */
	if (!is_smi(l, v[p])) {
		if (!out->name[0] && is_string(r, v[p]))
			v8_string_read(r, v[p], out->name, sizeof(out->name));
		p++;
	}
	/* the position: start, end; from V8 13 on (node 24) in the header,
	 * the two slots between the context local count and the
	 * variable part */
	if (l->si_first_vars == l->si_ncontextlocals + 3) {
		if (!slot(r, si, l->si_ncontextlocals + 1, &v[0]) ||
		    !slot(r, si, l->si_ncontextlocals + 2, &v[1]))
			return false;
		p = 0;
	}
	if (is_smi(l, v[p]) && is_smi(l, v[p + 1]) && smi_value(l, v[p]) >= 0 &&
	    smi_value(l, v[p]) <= smi_value(l, v[p + 1]) &&
	    smi_value(l, v[p + 1]) <= INT32_MAX) {
		out->start = (int32_t)smi_value(l, v[p]);
		out->end = (int32_t)smi_value(l, v[p + 1]);
	}
	return true;
}

bool v8_function_read(struct v8_reader *r, uint64_t sfi,
		      struct v8_function *out)
{
	const struct v8_layout *l = r->l;
	uint64_t nsi, script, v;
	uint16_t t;

	memset(out, 0, sizeof(*out));
	out->start = -1;
	out->end = -1;
	if (!instance_type(r, sfi, &t) || t != l->type_sfi ||
	    !field(r, sfi, l->sfi_name_or_scope_info, &nsi))
		return false;
	/* A name (or ScopeInfo, or script name) there but unreadable makes
	 * the function unknown: never shown as anonymous or fileless. A
	 * Smi is no name; any other object is not what V8 keeps there. */
	if (!is_smi(l, nsi)) {
		if (!instance_type(r, nsi, &t))
			return false;
		if (t < l->first_nonstring) {
			if (!v8_string_read(r, nsi, out->name,
					    sizeof(out->name)))
				return false;
		} else if (t != l->type_scope_info ||
			   !scope_info(r, nsi, out)) {
			return false;
		}
	}
	if (field(r, sfi, l->sfi_script, &script) &&
	    instance_type(r, script, &t) && t == l->type_script) {
		out->script = script;
		if (field(r, script, l->script_name, &v) && is_string(r, v) &&
		    !v8_string_read(r, v, out->file, sizeof(out->file)))
			return false;
		if (field(r, script, l->script_source, &v) && is_string(r, v))
			out->source = v;
	}
	return true;
}

/* ---- positions ---- */

static bool is_byte_array(struct v8_reader *r, uint64_t v)
{
	const struct v8_layout *l = r->l;
	uint16_t t;

	return instance_type(r, v, &t) &&
	       ((l->type_byte_array >= 0 && t == l->type_byte_array) ||
		(l->type_trusted_byte_array >= 0 &&
		 t == l->type_trusted_byte_array));
}

/* The bytes of ByteArray (or TrustedByteArray) a into buf, at most max;
 * how many, 0 if a is none, empty, longer or unreadable. */
static uint64_t byte_array_read(struct v8_reader *r, uint64_t a, uint8_t *buf,
				uint64_t max)
{
	const struct v8_layout *l = r->l;
	uint64_t len;

	if (!is_byte_array(r, a) ||
	    !field(r, a, (uint32_t)l->array_length, &len) || !is_smi(l, len) ||
	    smi_value(l, len) <= 0 || (uint64_t)smi_value(l, len) > max)
		return 0;
	len = (uint64_t)smi_value(l, len);
	if (rd(r,
	       (a & ~l->heap_tag_mask) + (uint32_t)l->array_length +
		       l->tagged_size,
	       buf, len))
		return 0;
	return len;
}

/* The Code dispatch entry handle of table base names; 0 if it is no
 * Code, or, while the table is being searched for (found: false), if
 * neither its instructions are where the entry says nor its parameter
 * count is the function's (params, 0: unknown). (The entry point may be
 * another's: V8 14 points it at a tiering builtin while the Code stays
 * the function's, as it does for a top level running its code optimized
 * on stack replacement.) */
static uint64_t dispatch_code(struct v8_reader *r, uint64_t base,
			      uint32_t handle, bool found, uint16_t params)
{
	const struct v8_layout *l = r->l;
	uint64_t e[2], code, start;
	uint16_t t;

	if (rd(r,
	       base + (uint64_t)(handle >> V8_DISPATCH_SHIFT) *
			       V8_DISPATCH_ENTRY,
	       e, sizeof(e)))
		return 0;
	code = (e[1] >> 16) | l->heap_tag;
	if (!instance_type(r, code, &t) || t != (uint16_t)l->type_code ||
	    l->code_start_field < 0 ||
	    rd(r, (code & ~l->heap_tag_mask) + (uint32_t)l->code_start_field,
	       &start, 8) ||
	    (!found && start != e[0] && (!params || (e[1] & 0xffff) != params)))
		return 0;
	return code;
}

/* V8 13 on: the function's code through the dispatch table, the table
 * found from the isolate group the first time (see struct v8_dispatch). */
static uint64_t dispatched_code(struct v8_reader *r, uint64_t fn)
{
	const struct v8_layout *l = r->l;
	struct v8_dispatch *d = r->dispatch;
	uint64_t group, words[512], code, sfi;
	uint32_t handle;
	uint16_t params;

	/* the handle: the field before the SharedFunctionInfo, where the
	 * Code was before */
	if (!d || !d->group_sym || l->fn_shared < l->tagged_size ||
	    rd(r, (fn & ~l->heap_tag_mask) + l->fn_shared - l->tagged_size,
	       &handle, 4) ||
	    !handle)
		return 0;
	if (d->base)
		return dispatch_code(r, d->base, handle, true, 0);
	if (d->tries >= V8_DISPATCH_TRIES)
		return 0;
	d->tries++;
	/* the function's parameter count, receiver included, as the
	 * table's entry keeps it */
	if (l->sfi_params < 0 || !field(r, fn, l->fn_shared, &sfi) ||
	    rd(r, (sfi & ~l->heap_tag_mask) + (uint32_t)l->sfi_params, &params,
	       2))
		params = 0;
	if (rd(r, d->group_sym, &group, 8) || !group)
		return 0;
	/* the group holds the table (V8 13.6, at 2.4 KiB) or a member
	 * that does (V8 14.6, at 89 KiB on x86_64, 484 KiB on arm64) */
	for (uint64_t at = 0; at < V8_DISPATCH_GROUP; at += sizeof(words)) {
		if (rd(r, group + at, words, sizeof(words)))
			return 0;
		for (unsigned k = 0; k < 512; k++) {
			/* a reservation's start: page-aligned, user space
			 * (aarch64's reaches 1 << 48: its mmap area is
			 * just below, where V8 13+ on arm64 reserves it) */
			if (!words[k] || (words[k] & 0xfff) ||
			    words[k] >= USER_VA_END)
				continue;
			code = dispatch_code(r, words[k], handle, false,
					     params);
			if (code) {
				d->base = words[k];
				return code;
			}
		}
	}
	return 0;
}

/*
 * The Code a JSFunction runs now, 0 if none found. Where the binary does
 * not name the field (V8 11), the one of the function's first fields
 * that holds a Code (no other of its fields does).
 */
static uint64_t function_code(struct v8_reader *r, uint64_t fn)
{
	const struct v8_layout *l = r->l;
	uint64_t code;
	uint16_t t;

	if (!is_heap(l, fn))
		return 0;
	if (l->fn_code >= 0)
		return field(r, fn, (uint32_t)l->fn_code, &code) &&
				       instance_type(r, code, &t) &&
				       t == (uint16_t)l->type_code
			       ? code
			       : 0;
	for (uint32_t k = 1; k <= 8; k++)
		if (field(r, fn, k * l->tagged_size, &code) &&
		    instance_type(r, code, &t) && t == (uint16_t)l->type_code)
			return code;
	return dispatched_code(r, fn);
}

/* Where code's instructions are and how long, and whether it is
 * baseline code (Sparkplug: its table maps pcs to bytecode offsets, not
 * to source positions). */
static bool code_span(struct v8_reader *r, uint64_t code, uint64_t *start,
		      uint32_t *size, bool *baseline)
{
	const struct v8_layout *l = r->l;
	uint64_t a = code & ~l->heap_tag_mask;
	uint32_t flags;
	uint16_t t;

	if (!instance_type(r, code, &t) || t != (uint16_t)l->type_code)
		return false;
	if (l->code_start_field >= 0) {
		if (rd(r, a + (uint32_t)l->code_start_field, start, 8))
			return false;
		if (l->code_is >= 0) {
			uint64_t is;

			/* a derived field: its address must be the
			 * InstructionStream's instructions */
			if (!field(r, code, (uint32_t)l->code_is, &is) ||
			    !instance_type(r, is, &t) ||
			    t != (uint16_t)l->type_instruction_stream ||
			    (is & ~l->heap_tag_mask) + (uint32_t)l->is_start !=
				    *start)
				return false;
		}
	} else {
		*start = a + (uint32_t)l->code_start_inline;
	}
	if (rd(r, a + (uint32_t)l->code_size, size, 4) || !*size ||
	    *size > V8_CODE_MAX)
		return false;
	if (l->code_flags < 0 || l->code_kind_mask < 0 ||
	    l->code_kind_shift < 0 || l->code_kind_shift >= 32 ||
	    l->code_kind_baseline < 0 ||
	    rd(r, a + (uint32_t)l->code_flags, &flags, 4))
		return false;
	*baseline =
		((flags >> l->code_kind_shift) & (uint32_t)l->code_kind_mask) ==
		(uint32_t)l->code_kind_baseline;
	return true;
}

/* Before V8 11 the instructions are inside the Code: the Code before
 * pc with the map of the function's current one, taken only if its
 * instructions span pc. */
static uint64_t inline_code_at_pc(struct v8_reader *r, uint64_t current,
				  uint64_t pc)
{
	const struct v8_layout *l = r->l;
	uint64_t map = 0, words[512], code, start, at;
	uint32_t size;
	bool baseline;

	if (rd(r, current & ~l->heap_tag_mask, &map, 8) || !is_heap(l, map))
		return 0;
	at = (pc & ~7ull) + 8;
	for (uint32_t done = 0; done < V8_CODE_MAX && at >= sizeof(words);
	     done += sizeof(words)) {
		at -= sizeof(words);
		if (rd(r, at, words, sizeof(words)))
			return 0;
		for (int k = 511; k >= 0; k--) {
			code = at + 8 * (uint64_t)k + l->heap_tag;
			if (words[k] == map &&
			    code_span(r, code, &start, &size, &baseline) &&
			    pc >= start && pc - start < size)
				return code;
		}
	}
	return 0;
}

/* The map of the InstructionStream whose instructions start at start,
 * kept for the process (every InstructionStream has it); 0 if start is
 * not an InstructionStream's (a builtin's code, outside the heap). */
static uint64_t learn_is_map(struct v8_reader *r, uint64_t start)
{
	const struct v8_layout *l = r->l;
	uint64_t is, map;
	uint16_t t;

	if (l->is_start < 0 || l->type_instruction_stream < 0 ||
	    start < (uint64_t)l->is_start)
		return 0;
	is = start - (uint32_t)l->is_start + l->heap_tag;
	if (!instance_type(r, is, &t) ||
	    t != (uint16_t)l->type_instruction_stream ||
	    rd(r, is & ~l->heap_tag_mask, &map, 8))
		return 0;
	if (r->dispatch)
		r->dispatch->is_map = map;
	return map;
}

/*
 * The map of InstructionStreams, learned from the code around pc when
 * no function's current code has shown it (a function whose code now is
 * a builtin's, as an optimized-on-stack-replacement top level's is
 * while it runs): the first word before pc that, taken as a map, has
 * the InstructionStream's type and is followed by a Code that points
 * back at that stream and spans pc. At most V8_IS_MAP_PROBES maps are
 * read, and a process searches at most V8_DISPATCH_TRIES times.
 */
#define V8_IS_MAP_PROBES 256
static uint64_t find_is_map(struct v8_reader *r, uint64_t pc)
{
	const struct v8_layout *l = r->l;
	uint64_t words[512], at, is, code, start, rejected[4] = {0};
	uint32_t probes = 0;
	uint16_t t;

	if (!r->dispatch || r->dispatch->is_map_tries >= V8_DISPATCH_TRIES ||
	    l->code_start_field < 0)
		return 0;
	r->dispatch->is_map_tries++;
	at = (pc & ~7ull) + 8;
	for (uint32_t done = 0; done < V8_CODE_MAX && at >= sizeof(words);
	     done += sizeof(words)) {
		at -= sizeof(words);
		if (rd(r, at, words, sizeof(words)))
			return 0;
		for (int k = 510; k >= 0; k--) {
			uint64_t m = words[k];

			if (!is_heap(l, m) || !is_heap(l, words[k + 1]) ||
			    m == rejected[0] || m == rejected[1] ||
			    m == rejected[2] || m == rejected[3])
				continue;
			if (probes++ >= V8_IS_MAP_PROBES)
				return 0;
			if (rd(r,
			       (m & ~l->heap_tag_mask) + l->map_instance_type,
			       &t, 2) ||
			    t != (uint16_t)l->type_instruction_stream) {
				rejected[probes % 4] = m;
				continue;
			}
			/* its Code (of any kind: baseline code's stream has
			 * the same map) points back at it */
			is = at + 8 * (uint64_t)k;
			code = words[k + 1];
			if (instance_type(r, code, &t) &&
			    is_type(l->type_code, t) &&
			    !rd(r,
				(code & ~l->heap_tag_mask) +
					(uint32_t)l->code_start_field,
				&start, 8) &&
			    start == is + (uint32_t)l->is_start) {
				r->dispatch->is_map = m;
				return m;
			}
		}
	}
	return 0;
}

/*
 * The Code whose instructions hold pc, when it is not the function's
 * code now (its OSR code, or code it left for newer): the
 * InstructionStream before pc, found by its map (every one has the
 * map of the function's current code's) and taken only if its Code
 * (the field after the map) points back at it and spans pc. 0 if none
 * within V8_CODE_MAX bytes before pc.
 */
static uint64_t code_at_pc(struct v8_reader *r, uint64_t current,
			   uint64_t current_start, uint64_t pc)
{
	const struct v8_layout *l = r->l;
	uint64_t map = r->dispatch ? r->dispatch->is_map : 0;
	uint64_t words[512], code, start, at, is;
	uint32_t size;
	bool baseline;

	if (l->code_start_inline >= 0)
		return inline_code_at_pc(r, current, pc);
	if (l->code_start_field < 0 || l->is_start < 0 ||
	    l->type_instruction_stream < 0)
		return 0;
	if (!map)
		map = learn_is_map(r, current_start);
	if (!map)
		map = find_is_map(r, pc);
	if (!map)
		return 0;
	at = (pc & ~7ull) + 8;
	for (uint32_t done = 0; done < V8_CODE_MAX && at >= sizeof(words);
	     done += sizeof(words)) {
		at -= sizeof(words);
		if (rd(r, at, words, sizeof(words)))
			return 0;
		for (int k = 511; k >= 0; k--) {
			is = at + 8 * (uint64_t)k;
			if (words[k] != map)
				continue;
			if (!rd(r, is + 8, &code, 8) && is_heap(l, code) &&
			    code_span(r, code, &start, &size, &baseline) &&
			    start == is + (uint32_t)l->is_start &&
			    pc >= start && pc - start < size)
				return code;
		}
	}
	return 0;
}

/* Element k of tagged array a (a FixedArray or one of its trusted or
 * weak kin, *len its length), a weak reference taken as the object. */
static bool element(struct v8_reader *r, uint64_t a, uint32_t k, uint64_t len,
		    uint64_t *out)
{
	const struct v8_layout *l = r->l;
	uint64_t v;

	if (k >= len ||
	    !field(r, a, (uint32_t)l->array_length + (k + 1) * l->tagged_size,
		   &v))
		return false;
	/* a weak reference: tag 3 (the heap tag and the weak bit) */
	if ((v & 3) == 3) {
		v &= ~2ull;
		if (l->tagged_size == 4)
			v = (a & ~0xffffffffull) | (uint32_t)v;
	}
	*out = v;
	return true;
}

/* The length of array a if it has one of the array types given. */
static bool array_of(struct v8_reader *r, uint64_t a, const int32_t *types,
		     unsigned ntypes, uint64_t *len)
{
	const struct v8_layout *l = r->l;
	uint64_t v;
	uint16_t t;
	unsigned k;

	if (!instance_type(r, a, &t))
		return false;
	for (k = 0; k < ntypes && !is_type(types[k], t); k++)
		;
	if (k == ntypes || !field(r, a, (uint32_t)l->array_length, &v) ||
	    !is_smi(l, v) || smi_value(l, v) < 0 || smi_value(l, v) > (1 << 24))
		return false;
	*len = (uint64_t)smi_value(l, v);
	return true;
}

/* Bytes of an InliningPosition: a SourcePosition (8), the index of the
 * inlined function in the literal array (4), padding. */
#define V8_INLINING_POSITION 16

int32_t v8_inlining_chain(struct v8_reader *r, uint64_t code, int64_t raw,
			  struct v8_inlined *inl)
{
	const struct v8_layout *l = r->l;
	const int32_t data_types[] = {l->type_fixed_array,
				      l->type_trusted_fixed_array,
				      l->type_protected_fixed_array};
	const int32_t literal_types[] = {
		l->type_weak_fixed_array, l->type_trusted_weak_fixed_array,
		l->type_fixed_array, l->type_trusted_fixed_array};
	uint64_t data, ndata, lits, nlits, positions, npositions, count;
	int32_t pos, id;
	uint16_t t;

	inl->n = 0;
	pos = v8_source_position_offset(raw, &id);
	if (id < 0)
		return pos;
	if (l->code_deopt < 0 || l->deopt_count_idx < 0 ||
	    l->deopt_literals_idx < 0 || l->deopt_positions_idx < 0 ||
	    !field(r, code, (uint32_t)l->code_deopt, &data) ||
	    !array_of(r, data, data_types, 3, &ndata) ||
	    !element(r, data, (uint32_t)l->deopt_count_idx, ndata, &count) ||
	    !is_smi(l, count) ||
	    !element(r, data, (uint32_t)l->deopt_literals_idx, ndata, &lits) ||
	    !array_of(r, lits, literal_types, 4, &nlits) ||
	    !element(r, data, (uint32_t)l->deopt_positions_idx, ndata,
		     &positions) ||
	    !is_byte_array(r, positions) ||
	    !field(r, positions, (uint32_t)l->array_length, &npositions) ||
	    !is_smi(l, npositions) || smi_value(l, npositions) < 0 ||
	    smi_value(l, npositions) % V8_INLINING_POSITION)
		return -1;
	count = (uint64_t)smi_value(l, count);
	npositions = (uint64_t)smi_value(l, npositions) / V8_INLINING_POSITION;
	/* the inlined functions are the literal array's first count */
	if (count > nlits)
		return -1;
	while (id >= 0) {
		struct {
			int64_t position;
			int32_t function;
			int32_t pad;
		} ip;
		uint64_t sfi;

		if ((uint64_t)id >= npositions || inl->n == V8_INLINE_MAX ||
		    rd(r,
		       (positions & ~l->heap_tag_mask) +
			       (uint32_t)l->array_length + l->tagged_size +
			       (uint64_t)id * V8_INLINING_POSITION,
		       &ip, sizeof(ip)) ||
		    ip.function < 0 || (uint64_t)ip.function >= count ||
		    !element(r, lits, (uint32_t)ip.function, nlits, &sfi) ||
		    !instance_type(r, sfi, &t) || !is_type(l->type_sfi, t))
			return -1;
		inl->sfi[inl->n] = sfi;
		inl->pos[inl->n++] = pos;
		pos = v8_source_position_offset(ip.position, &id);
	}
	return pos;
}

/* The source position at offset off of the table in ByteArray spt. */
static int32_t table_position(struct v8_reader *r, uint64_t spt, uint32_t off)
{
	const struct v8_layout *l = r->l;
	static uint8_t table[V8_POSITION_TABLE_MAX]; /* not on the stack */
	uint64_t len = byte_array_read(r, spt, table, sizeof(table));
	int64_t raw;
	int32_t pos, inlined;

	if (!len || !v8_position_at(table, len, l->spt_encoding, off, &raw))
		return -1;
	pos = v8_source_position_offset(raw, &inlined);
	return inlined >= 0 ? -1 : pos;
}

/* The source position baseline code is at: pc offset off (as
 * baseline_bytecode_offset takes it) to a bytecode offset, then through
 * its BytecodeArray's table. */
static int32_t baseline_position(struct v8_reader *r, uint64_t code,
				 uint32_t off)
{
	const struct v8_layout *l = r->l;
	static uint8_t table[V8_POSITION_TABLE_MAX], bytes[V8_BYTECODE_MAX];
	uint64_t bca, tbl, len, blen, spt;
	int32_t bc;
	uint16_t t;

	if (!l->nbytecodes || l->code_deopt < 0 || l->type_bytecode_array < 0 ||
	    l->bca_data < 0 || l->bca_spt < 0 ||
	    /* the BytecodeArray: the field the deoptimization data is in
	     * for optimized code */
	    !field(r, code, (uint32_t)l->code_deopt, &bca) ||
	    !instance_type(r, bca, &t) || !is_type(l->type_bytecode_array, t) ||
	    !field(r, bca, (uint32_t)l->array_length, &blen) ||
	    !is_smi(l, blen) || smi_value(l, blen) <= 0 ||
	    smi_value(l, blen) > V8_BYTECODE_MAX ||
	    /* its offset table: where optimized code's positions are */
	    !field(r, code, (uint32_t)l->code_spt, &tbl) ||
	    !(len = byte_array_read(r, tbl, table, sizeof(table))))
		return -1;
	blen = (uint64_t)smi_value(l, blen);
	if (rd(r, (bca & ~l->heap_tag_mask) + (uint32_t)l->bca_data, bytes,
	       blen))
		return -1;
	bc = v8_baseline_bytecode_offset(l->bytecode_size, l->nbytecodes, table,
					 len, bytes, (uint32_t)blen, off);
	if (bc < 0 || !field(r, bca, (uint32_t)l->bca_spt, &spt))
		return -1;
	return table_position(r, spt, (uint32_t)bc);
}

int v8_code_memo_find(const struct v8_code_memo *m, uint64_t pc,
		      uint64_t now_ns)
{
	for (int k = 0; k < V8_CODE_MEMO; k++)
		if (m->e[k].size && pc >= m->e[k].start &&
		    pc - m->e[k].start < m->e[k].size &&
		    now_ns - m->e[k].checked_ns < V8_CODE_MEMO_NS)
			return k;
	return -1;
}

int v8_code_memo_put(struct v8_code_memo *m, uint64_t code, uint64_t start,
		     uint32_t size, bool baseline, const uint8_t *table,
		     uint64_t len, uint64_t now_ns)
{
	int k = 0;

	for (int i = 0; i < V8_CODE_MEMO; i++) {
		if (m->e[i].code == code) {
			k = i;
			break;
		}
		if (m->e[i].checked_ns < m->e[k].checked_ns)
			k = i;
	}
	m->e[k].code = code;
	m->e[k].start = start;
	m->e[k].size = size;
	m->e[k].baseline = baseline;
	m->e[k].checked_ns = now_ns;
	m->e[k].table_len =
		table && len <= V8_CODE_MEMO_TABLE ? (uint32_t)len : 0;
	if (m->e[k].table_len)
		memcpy(m->e[k].table, table, len);
	return k;
}

/* The Code whose instructions hold pc, its span and kind: fn's code now,
 * or the code before pc that spans it; 0 if none. */
static uint64_t frame_code(struct v8_reader *r, uint64_t fn, uint64_t pc,
			   uint64_t *start, uint32_t *size, bool *baseline)
{
	const struct v8_layout *l = r->l;
	uint64_t code = function_code(r, fn);

	if (!code)
		return 0;
	/* the pc must be in the code: the function's code now may be
	 * another than the one the frame runs (a builtin's, the
	 * interpreter's, while its first call runs OSR code) */
	if (!code_span(r, code, start, size, baseline)) {
		*start = 0;
		*size = 0;
	} else if (r->dispatch && !r->dispatch->is_map &&
		   l->code_start_field >= 0) {
		learn_is_map(r, *start);
	}
	if (pc < *start || pc - *start >= *size) {
		code = code_at_pc(r, code, *start, pc);
		if (!code || !code_span(r, code, start, size, baseline))
			return 0;
	}
	return code;
}

int32_t v8_code_position(struct v8_reader *r, uint64_t fn, uint64_t pc,
			 bool return_address, struct v8_inlined *inl)
{
	const struct v8_layout *l = r->l;
	static uint8_t table[V8_POSITION_TABLE_MAX]; /* not on the stack */
	const uint8_t *t = table;
	uint64_t code, start, spt, len = 0;
	uint32_t size, off;
	int64_t raw;
	int32_t pos, inlined;
	bool baseline;
	int k = r->memo ? v8_code_memo_find(r->memo, pc, r->now_ns) : -1;

	if (l->code_size < 0 || l->code_spt < 0 || l->array_length < 0 ||
	    l->type_code < 0 ||
	    (l->code_start_inline < 0 && l->code_start_field < 0))
		return -1;
	if (k >= 0) {
		code = r->memo->e[k].code;
		start = r->memo->e[k].start;
		size = r->memo->e[k].size;
		baseline = r->memo->e[k].baseline;
		t = r->memo->e[k].table;
		len = r->memo->e[k].table_len;
	} else {
		code = frame_code(r, fn, pc, &start, &size, &baseline);
		if (!code)
			return -1;
	}
	if (return_address && pc == start)
		return -1;
	/* baseline code: V8's own rule takes a return address as the end
	 * of its bytecode's code, the innermost pc (an instruction being
	 * run) as its first byte */
	if (baseline) {
		if (k < 0 && r->memo)
			v8_code_memo_put(r->memo, code, start, size, true, NULL,
					 0, r->now_ns);
		return baseline_position(r, code,
					 (uint32_t)(pc - start) +
						 (return_address ? 0 : 1));
	}
	off = (uint32_t)(pc - start) - (return_address ? 1 : 0);
	if (!len) {
		t = table;
		if (!field(r, code, (uint32_t)l->code_spt, &spt) ||
		    !(len = byte_array_read(r, spt, table, sizeof(table))))
			return -1;
		/* (a memo entry's time is its last read of the code, not
		 * its last use: it expires while hot) */
		if (k < 0 && r->memo)
			v8_code_memo_put(r->memo, code, start, size, false,
					 table, len, r->now_ns);
	}
	if (!v8_position_at(t, len, l->spt_encoding, off, &raw))
		return -1;
	if (inl)
		return v8_inlining_chain(r, code, raw, inl);
	pos = v8_source_position_offset(raw, &inlined);
	return inlined >= 0 ? -1 : pos;
}

int32_t v8_bytecode_position(struct v8_reader *r, uint64_t sfi, uint64_t slot)
{
	const struct v8_layout *l = r->l;
	uint64_t bca, len, spt;
	int64_t off;
	uint16_t t;

	if (l->tagged_size != 8 || l->type_bytecode_array < 0 ||
	    l->bca_data < 0 || l->bca_spt < 0 || l->array_length < 0 ||
	    l->sfi_function_data < 0 || l->smi_shift != 32)
		return -1;
	if (!field(r, sfi, (uint32_t)l->sfi_function_data, &bca) ||
	    !instance_type(r, bca, &t) ||
	    t != (uint16_t)l->type_bytecode_array ||
	    (uint32_t)bca != (uint32_t)slot)
		return -1;
	/* the offset is from the tagged array, its header included */
	off = (int64_t)(int32_t)(slot >> 32) -
	      (l->bca_data - (int64_t)l->heap_tag);
	if (!field(r, bca, (uint32_t)l->array_length, &len) ||
	    !is_smi(l, len) || off < 0 || off >= smi_value(l, len))
		return -1;
	if (!field(r, bca, (uint32_t)l->bca_spt, &spt))
		return -1;
	return table_position(r, spt, (uint32_t)off);
}
