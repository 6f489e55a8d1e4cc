// SPDX-License-Identifier: Apache-2.0
#include "runtimes/v8/v8_position_table.h"

/* One VLQ integer (7 bits a byte, the high bit: more), at most 10
 * bytes; false past the end or beyond 64 bits. */
static bool vlq(const uint8_t *t, size_t n, size_t *i, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*i >= n || shift > 63)
			return false;
		b = t[(*i)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*out = v;
	return true;
}

static bool zigzag(const uint8_t *t, size_t n, size_t *i, int64_t *out)
{
	uint64_t v;

	if (!vlq(t, n, i, &v))
		return false;
	*out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
	return true;
}

enum v8_spt_encoding v8_spt_encoding_of(int major)
{
	if (major >= 8 && major <= 13)
		return V8_SPT_SIGNED;
	if (major == 14)
		return V8_SPT_FLAGGED;
	return V8_SPT_UNKNOWN;
}

/* The next entry's code offset delta (>= 0), false if malformed. */
static bool code_delta(const uint8_t *t, size_t n, size_t *i,
		       enum v8_spt_encoding enc, int64_t *dc)
{
	uint64_t u;

	if (enc == V8_SPT_FLAGGED) {
		if (!vlq(t, n, i, &u) || !(u & 2))
			return false;
		*dc = (int64_t)(u >> 2);
		return true;
	}
	if (enc != V8_SPT_SIGNED || !zigzag(t, n, i, dc))
		return false;
	/* a negative delta marks a non-statement: -(delta) - 1 */
	if (*dc < 0)
		*dc = -(*dc + 1);
	return true;
}

bool v8_position_at(const uint8_t *t, size_t n, enum v8_spt_encoding enc,
		    uint32_t off, int64_t *pos)
{
	int64_t code = -1, src = 0, dc, ds;
	size_t i = 0;
	bool found = false;

	while (i < n) {
		if (!code_delta(t, n, &i, enc, &dc) || !zigzag(t, n, &i, &ds))
			return false;
		if (dc > INT32_MAX || ds > INT64_MAX / 4 || ds < INT64_MIN / 4)
			return false;
		code += dc;
		src += ds;
		if (code > UINT32_MAX || src > INT64_MAX / 2 ||
		    src < INT64_MIN / 2)
			return false;
		if (code > (int64_t)off)
			break;
		*pos = src;
		found = true;
	}
	return found;
}

int32_t v8_source_position_offset(int64_t raw, int32_t *inlining_id)
{
	/* bit 0: external (a line in a file, wasm's): none here; bits 1-30:
	 * script offset + 1; bits 31-46: inlining id + 1 */
	uint64_t v = (uint64_t)raw;

	*inlining_id = (int32_t)((v >> 31) & 0xffff) - 1;
	if (raw < 0 || (v & 1))
		return -1;
	return (int32_t)((v >> 1) & 0x3fffffff) - 1;
}

/* An unsigned VLQ of at most 32 bits (a baseline offset table's). */
static bool vlq32(const uint8_t *t, size_t n, size_t *i, uint32_t *v)
{
	uint64_t x;

	if (!vlq(t, n, i, &x) || x > UINT32_MAX)
		return false;
	*v = (uint32_t)x;
	return true;
}

/* The size of the bytecode at b[at] (its operand scaling prefix
 * included), 0 if it is not one of the binary's. */
static uint32_t bytecode_size(const uint8_t (*sizes)[V8_BYTECODES_MAX],
			      uint16_t count, const uint8_t *b, uint32_t n,
			      uint32_t at)
{
	unsigned scale = 0, prefix = 0;
	uint8_t op = b[at];

	/* Wide, ExtraWide and their DebugBreak forms: the next bytecode's
	 * operands at twice or four times their size */
	if (op < 4) {
		scale = op % 2 ? 2 : 1;
		prefix = 1;
		if (at + 1 >= n)
			return 0;
		op = b[at + 1];
		if (op < 4)
			return 0;
	}
	if (op >= count)
		return 0;
	return prefix + sizes[scale][op];
}

int32_t v8_baseline_bytecode_offset(const uint8_t (*sizes)[V8_BYTECODES_MAX],
				    uint16_t count, const uint8_t *t, size_t nt,
				    const uint8_t *b, uint32_t nb, uint32_t off)
{
	uint32_t end, delta, cursor = 0, size;
	int32_t found = -1, at = -1;
	size_t i = 0;

	if (!vlq32(t, nt, &i, &end))
		return -1;
	if (off <= end)
		found = -2; /* the prologue */
	while (i < nt) {
		if (!vlq32(t, nt, &i, &delta) || cursor >= nb ||
		    (size = bytecode_size(sizes, count, b, nb, cursor)) == 0 ||
		    size > nb - cursor || delta > UINT32_MAX - end)
			return -1;
		at = (int32_t)cursor;
		cursor += size;
		if (found == -1 && off > end && off <= end + delta)
			found = at;
		end += delta;
	}
	return cursor == nb && found >= 0 ? found : -1;
}
