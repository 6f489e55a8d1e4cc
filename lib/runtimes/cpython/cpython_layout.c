// SPDX-License-Identifier: Apache-2.0
#include "runtimes/cpython/cpython_layout.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define NONE OTELPROF_OFF_NONE

/* offsetof() over each version's own headers (Include/cpython/pystate.h,
 * Include/internal/pycore_{runtime,interp,frame}.h, frameobject.h,
 * code.h, unicodeobject.h); Debian's 3.11.2 matches 3.11.7. */
static const struct cpython_layout layouts[] = {
	{
		.minor = 9,
		.walk = {.kind = OTELPROF_INTERP_CPYTHON,
			 .frames = OTELPROF_CPY_FRAME_OBJECTS,
			 .runtime_interp_head = 32,
			 .interp_threads_head = 8,
			 .tstate_next = 8,
			 .tstate_thread_id = 176,
			 .tstate_frame = 24,
			 .cframe_current_frame = NONE,
			 .frame_previous = 24,
			 .frame_code = 32,
			 .frame_instr = 104,
			 .frame_owner = NONE},
		.code_name = 112,
		.code_qualname = NONE,
		.code_filename = 104,
		.code_firstlineno = 40,
		.code_linetable = 120, /* co_lnotab */
		.code_code_adaptive = NONE,
		.unicode_ascii_size = 48,
		.unicode_compact_size = 72,
		.bytes_data = 32,
	},
	{
		.minor = 10,
		.walk = {.kind = OTELPROF_INTERP_CPYTHON,
			 .frames = OTELPROF_CPY_FRAME_OBJECTS,
			 .runtime_interp_head = 32,
			 .interp_threads_head = 8,
			 .tstate_next = 8,
			 .tstate_thread_id = 176,
			 .tstate_frame = 24,
			 .cframe_current_frame = NONE,
			 .frame_previous = 24,
			 .frame_code = 32,
			 .frame_instr = 96,
			 .frame_owner = NONE},
		.code_name = 112,
		.code_qualname = NONE,
		.code_filename = 104,
		.code_firstlineno = 40,
		.code_linetable = 120,
		.code_code_adaptive = NONE,
		.unicode_ascii_size = 48,
		.unicode_compact_size = 72,
		.bytes_data = 32,
	},
	{
		.minor = 11,
		.walk = {.kind = OTELPROF_INTERP_CPYTHON,
			 .frames = OTELPROF_CPY_IS_ENTRY,
			 .runtime_interp_head = 40,
			 .interp_threads_head = 16,
			 .tstate_next = 8,
			 .tstate_thread_id = 152,
			 .tstate_frame = 56, /* cframe */
			 .cframe_current_frame = 8,
			 .frame_previous = 48,
			 .frame_code = 32,
			 .frame_instr = 56, /* prev_instr */
			 .frame_owner = 68 /* is_entry */},
		.code_name = 120,
		.code_qualname = 128,
		.code_filename = 112,
		.code_firstlineno = 72,
		.code_linetable = 136,
		.code_code_adaptive = 184,
		.unicode_ascii_size = 48,
		.unicode_compact_size = 72,
		.bytes_data = 32,
	},
	{
		.minor = 12,
		.walk = {.kind = OTELPROF_INTERP_CPYTHON,
			 .frames = OTELPROF_CPY_OWNER,
			 .runtime_interp_head = 40,
			 .interp_threads_head = 72,
			 .tstate_next = 8,
			 .tstate_thread_id = 136,
			 .tstate_frame = 56, /* cframe */
			 .cframe_current_frame = 0,
			 .frame_previous = 8,
			 .frame_code = 0,
			 .frame_instr = 56, /* prev_instr */
			 .frame_owner = 70},
		.code_name = 120,
		.code_qualname = 128,
		.code_filename = 112,
		.code_firstlineno = 68,
		.code_linetable = 136,
		.code_code_adaptive = 192,
		.unicode_ascii_size = 40,
		.unicode_compact_size = 56,
		.bytes_data = 32,
	},
	{
		.minor = 13,
		.walk = {.kind = OTELPROF_INTERP_CPYTHON,
			 .frames = OTELPROF_CPY_OWNER,
			 .runtime_interp_head = 632,
			 .interp_threads_head = 7344,
			 .tstate_next = 8,
			 .tstate_thread_id = 152,
			 .tstate_frame = 72, /* current_frame */
			 .cframe_current_frame = NONE,
			 .frame_previous = 8,
			 .frame_code = 0,   /* f_executable */
			 .frame_instr = 56, /* instr_ptr */
			 .frame_owner = 70},
		.code_name = 120,
		.code_qualname = 128,
		.code_filename = 112,
		.code_firstlineno = 68,
		.code_linetable = 136,
		.code_code_adaptive = 200,
		.unicode_ascii_size = 40,
		.unicode_compact_size = 56,
		.bytes_data = 32,
	},
};

const struct cpython_layout *cpython_layout_find(unsigned minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

/* Word indices in _Py_DebugOffsets (3.13's Include/internal/
 * pycore_runtime.h): every field is a u64. */
enum {
	DO_VERSION = 1,
	DO_FREE_THREADED = 2,
	DO_INTERPRETERS_HEAD = 5,
	DO_THREADS_HEAD = 9,
	DO_TSTATE_NEXT = 21,
	DO_TSTATE_CURRENT_FRAME = 23,
	DO_TSTATE_THREAD_ID = 24,
	DO_FRAME_PREVIOUS = 29,
	DO_FRAME_EXECUTABLE = 30,
	DO_FRAME_INSTR_PTR = 31,
	DO_FRAME_OWNER = 33,
	DO_CODE_FILENAME = 35,
	DO_CODE_NAME = 36,
	DO_CODE_QUALNAME = 37,
	DO_CODE_LINETABLE = 38,
	DO_CODE_FIRSTLINENO = 39,
	DO_CODE_ADAPTIVE = 43,
};

int cpython_debug_offsets(const uint8_t *buf, size_t len,
			  struct cpython_layout *l)
{
	uint64_t w[44];
	struct cpython_layout n = *l;
	/* (word, field, bound): frame fields must lie in what BPF reads
	 * of a frame (128 bytes), code fields in the 256 read of a code */
	struct {
		int word;
		uint16_t *field;
		uint64_t max;
	} f[] = {
		{DO_INTERPRETERS_HEAD, &n.walk.runtime_interp_head, 0xfff0},
		{DO_THREADS_HEAD, &n.walk.interp_threads_head, 0xfff0},
		{DO_TSTATE_NEXT, &n.walk.tstate_next, 0xfff0},
		{DO_TSTATE_CURRENT_FRAME, &n.walk.tstate_frame, 0xfff0},
		{DO_TSTATE_THREAD_ID, &n.walk.tstate_thread_id, 0xfff0},
		{DO_FRAME_PREVIOUS, &n.walk.frame_previous, 120},
		{DO_FRAME_EXECUTABLE, &n.walk.frame_code, 120},
		{DO_FRAME_INSTR_PTR, &n.walk.frame_instr, 120},
		{DO_FRAME_OWNER, &n.walk.frame_owner, 127},
		{DO_CODE_FILENAME, &n.code_filename, 248},
		{DO_CODE_NAME, &n.code_name, 248},
		{DO_CODE_QUALNAME, &n.code_qualname, 248},
		{DO_CODE_LINETABLE, &n.code_linetable, 248},
		{DO_CODE_FIRSTLINENO, &n.code_firstlineno, 252},
		{DO_CODE_ADAPTIVE, &n.code_code_adaptive, 0xfff0},
	};

	if (len < sizeof(w) || memcmp(buf, "xdebugpy", 8))
		return -EINVAL;
	memcpy(w, buf, sizeof(w));
	if ((w[DO_VERSION] >> 24) != 3 ||
	    ((w[DO_VERSION] >> 16) & 0xff) != l->minor || w[DO_FREE_THREADED])
		return -EINVAL;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (w[f[i].word] > f[i].max)
			return -EINVAL;
		*f[i].field = (uint16_t)w[f[i].word];
	}
	*l = n;
	return 0;
}

/* 3.9 co_lnotab: (address increment, signed line increment) pairs. */
static uint32_t line_lnotab(const uint8_t *t, size_t len, int64_t line,
			    uint64_t index)
{
	uint64_t addr = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > index)
			break;
		line += (int8_t)t[i + 1];
	}
	return line > 0 && line <= INT32_MAX ? (uint32_t)line : 0;
}

/* 3.10 co_linetable: (bytes covered, signed line delta; -128: none). */
static uint32_t line_310(const uint8_t *t, size_t len, int64_t line,
			 uint64_t index)
{
	uint64_t start = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		uint64_t end = start + t[i];
		int8_t d = (int8_t)t[i + 1];
		bool none = d == -128;

		if (!none)
			line += d;
		if (index >= start && index < end)
			return !none && line > 0 && line <= INT32_MAX
				       ? (uint32_t)line
				       : 0;
		start = end;
	}
	return 0;
}

/* 3.11+ location table varints: 6-bit chunks, 0x40 = more follow. */
static bool varint(const uint8_t *t, size_t len, size_t *i, uint64_t *out)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 6) {
		uint8_t b;

		if (*i >= len)
			return false;
		b = t[(*i)++];
		v |= (uint64_t)(b & 0x3f) << shift;
		if (!(b & 0x40)) {
			*out = v;
			return true;
		}
	}
	return false;
}

static bool svarint(const uint8_t *t, size_t len, size_t *i, int64_t *out)
{
	uint64_t v;

	if (!varint(t, len, i, &v))
		return false;
	*out = (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
	return true;
}

/* 3.11+: entries {1 code:4 len-1:3} then code-specific bytes. */
static uint32_t line_locations(const uint8_t *t, size_t len, int64_t line,
			       uint64_t index)
{
	uint64_t addr = 0;
	size_t i = 0;

	while (i < len) {
		uint8_t b = t[i++];
		unsigned code = (b >> 3) & 15, n = (b & 7) + 1;
		int64_t d = 0;
		bool none = false;
		uint64_t skip;

		if (!(b & 0x80))
			return 0; /* not at an entry start: malformed */
		switch (code) {
		case 15: /* no location */
			none = true;
			break;
		case 14: /* long form */
			if (!svarint(t, len, &i, &d) ||
			    !varint(t, len, &i, &skip) ||
			    !varint(t, len, &i, &skip) ||
			    !varint(t, len, &i, &skip))
				return 0;
			break;
		case 13: /* no column */
			if (!svarint(t, len, &i, &d))
				return 0;
			break;
		case 10:
		case 11:
		case 12: /* one line: delta code - 10, two column bytes */
			d = code - 10;
			i += 2;
			break;
		default: /* short form: same line, one column byte */
			i += 1;
			break;
		}
		if (d > INT32_MAX || d < -(int64_t)INT32_MAX)
			return 0; /* no source has such lines */
		line += d;
		if (index >= addr && index < addr + n)
			return !none && line > 0 && line <= INT32_MAX
				       ? (uint32_t)line
				       : 0;
		addr += n;
	}
	return 0;
}

uint32_t cpython_line(unsigned minor, const uint8_t *table, size_t len,
		      int64_t first_line, uint64_t index)
{
	if (!table)
		return 0;
	if (minor <= 9)
		return line_lnotab(table, len, first_line, index);
	if (minor == 10)
		return line_310(table, len, first_line, index);
	return line_locations(table, len, first_line, index);
}

/* Append code point c as UTF-8; false if it does not fit. */
static bool put_utf8(char *out, size_t cap, size_t *n, uint32_t c)
{
	uint8_t b[4];
	size_t k;

	if (c < 0x80) {
		b[0] = (uint8_t)c;
		k = 1;
	} else if (c < 0x800) {
		b[0] = (uint8_t)(0xc0 | c >> 6);
		b[1] = (uint8_t)(0x80 | (c & 0x3f));
		k = 2;
	} else if (c < 0x10000) {
		b[0] = (uint8_t)(0xe0 | c >> 12);
		b[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
		b[2] = (uint8_t)(0x80 | (c & 0x3f));
		k = 3;
	} else {
		if (c > 0x10ffff)
			c = 0xfffd;
		b[0] = (uint8_t)(0xf0 | c >> 18);
		b[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3f));
		b[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
		b[3] = (uint8_t)(0x80 | (c & 0x3f));
		k = 4;
	}
	if (*n + k >= cap)
		return false;
	memcpy(out + *n, b, k);
	*n += k;
	return true;
}

int cpython_str(const struct cpython_layout *l, const uint8_t *obj, size_t len,
		char *out, size_t out_len)
{
	uint64_t length;
	uint32_t state, kind;
	size_t data, n = 0;

	if (!out_len || len < 40)
		return -1;
	memcpy(&length, obj + 16, 8);
	memcpy(&state, obj + 32, 4);
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1)) /* not compact */
		return -1;
	if ((state >> 6) & 1) { /* ascii: data after PyASCIIObject */
		data = l->unicode_ascii_size;
		kind = 1;
	} else {
		data = l->unicode_compact_size;
	}
	if (kind != 1 && kind != 2 && kind != 4)
		return -1;
	if (data > len || length > (len - data) / kind)
		return -1;
	for (uint64_t i = 0; i < length; i++) {
		const uint8_t *p = obj + data + i * kind;
		uint32_t c =
			kind == 1   ? p[0]
			: kind == 2 ? (uint32_t)(p[0] | p[1] << 8)
				    : (uint32_t)(p[0] | p[1] << 8 | p[2] << 16 |
						 (uint32_t)p[3] << 24);

		if (!put_utf8(out, out_len, &n, c))
			return -1;
	}
	out[n] = 0;
	return (int)n;
}
