/* SPDX-License-Identifier: Apache-2.0 */
/*
 * V8's source position tables: what maps a bytecode offset (a
 * BytecodeArray's table) or a pc offset (an optimized Code's table) to
 * a position in the script's source. Each entry is two deltas from the
 * previous one, the first from code offset -1 (V8's function entry,
 * kFunctionEntryBytecodeOffset): the code offset (with whether the
 * position is a statement's) and the source position, a packed
 * SourcePosition (script offset and inlining id, each stored + 1; an
 * interpreter's table has no inlining). How the code offset's delta is
 * stored changed in V8 14. Pure decoding of bytes already read: no
 * process memory here.
 */
#ifndef OTELPROF_RUNTIMES_V8_POSITION_TABLE_H
#define OTELPROF_RUNTIMES_V8_POSITION_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define V8_POSITION_TABLE_MAX (256u << 10) /* bytes of a table read */

/* How a table's code offset deltas are stored (the source position's
 * is a zig-zag VLQ in every version). */
enum v8_spt_encoding {
	V8_SPT_UNKNOWN = 0, /* a version not known: no position taken */
	/* V8 8-13: a zig-zag VLQ, the delta for a statement, -delta - 1
	 * for an expression */
	V8_SPT_SIGNED,
	/* V8 14: an unsigned VLQ, delta << 2 | 2 | is_statement (bit 1
	 * set in every table seen; one without it is refused) */
	V8_SPT_FLAGGED,
};

/* The encoding of V8 major version major (the binary's
 * v8::internal::Version::major_), V8_SPT_UNKNOWN outside 8-14. */
enum v8_spt_encoding v8_spt_encoding_of(int major);

/*
 * The source position of the last entry at or before code offset off
 * (V8's own rule), into *pos; false if the table has none that early or
 * is malformed (a delta that overflows, a code offset going backwards,
 * an unknown encoding).
 */
bool v8_position_at(const uint8_t *t, size_t n, enum v8_spt_encoding enc,
		    uint32_t off, int64_t *pos);

#define V8_BYTECODES_MAX 256 /* bytecodes: V8 10-14 have 198-212 */

/*
 * The bytecode offset baseline (Sparkplug) code is at, pc offset off
 * taken as V8 takes a return address (in (start, end] of its bytecode's
 * code): its offset table t (pc deltas, an unsigned VLQ each: the
 * prologue's, then one per bytecode in order) walked with its bytecodes
 * b, each one's size sizes[scale][bytecode] (count bytecodes; scale 0,
 * 1, 2 for operands at 1, 2, 4 times their size, after the prefixes
 * Wide, ExtraWide and their DebugBreak forms, bytecodes 0-3). The walk
 * must end with both at once (every bytecode has its entry), or the
 * sizes are not this code's: -1, as for the prologue (the function's
 * entry) or an off past the code.
 */
int32_t v8_baseline_bytecode_offset(const uint8_t (*sizes)[V8_BYTECODES_MAX],
				    uint16_t count, const uint8_t *t, size_t nt,
				    const uint8_t *b, uint32_t nb,
				    uint32_t off);

/* A packed SourcePosition: its script offset (-1: none) and, into
 * *inlining_id, the function the code inlined it is in (an index into
 * the code's inlining positions; -1: the code's own function). */
int32_t v8_source_position_offset(int64_t raw, int32_t *inlining_id);

#endif
