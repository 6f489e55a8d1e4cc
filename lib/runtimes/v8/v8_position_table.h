/* SPDX-License-Identifier: Apache-2.0 */
/*
 * V8's source position tables: what maps a bytecode offset (a
 * BytecodeArray's table) or a pc offset (an optimized Code's table) to
 * a position in the script's source. Each entry is two zig-zag VLQ
 * deltas from the previous one: the code offset (its sign says whether
 * the position is a statement's) and the source position. Bytecode
 * tables hold plain script offsets; optimized code's hold V8's packed
 * SourcePosition (script offset and inlining id, each stored + 1).
 * Pure decoding of bytes already read: no process memory here.
 */
#ifndef OTELPROF_RUNTIMES_V8_POSITION_TABLE_H
#define OTELPROF_RUNTIMES_V8_POSITION_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define V8_POSITION_TABLE_MAX (256u << 10) /* bytes of a table read */

/*
 * The source position of the last entry at or before code offset off
 * (V8's own rule), into *pos; false if the table has none that early or
 * is malformed (a delta that overflows, a code offset going backwards).
 */
bool v8_position_at(const uint8_t *t, size_t n, uint32_t off, int64_t *pos);

/* A packed SourcePosition of optimized code: its script offset (-1:
 * none) and whether it is in a function the code inlined. */
int32_t v8_source_position_offset(int64_t raw, bool *inlined);

#endif
