/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPython's internal layouts per minor version (3.9-3.13), and its line
 * tables. CPython publishes none of this for 3.9-3.12 outside its
 * internal headers, so the offsets are tables taken from each version's
 * headers (offsetof over Include/internal, x86_64); they hold for every
 * patch release of a minor version. The line-table decoders are bounded
 * by the table they are given (bytes read from the process: hostile).
 */
#ifndef OTELPROF_INTERP_CPYTHON_LAYOUT_H
#define OTELPROF_INTERP_CPYTHON_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "profiler_types.h"

struct cpython_layout {
	uint8_t minor;
	struct otelprof_interp_proc walk; /* for BPF (runtime filled later) */
	/* PyCodeObject and string objects, read by userspace */
	uint16_t code_name, code_qualname, code_filename, code_firstlineno,
		code_linetable, code_code_adaptive;
	uint16_t unicode_ascii_size, unicode_compact_size, bytes_data;
};

/* _Py_DebugOffsets (3.13+), at the start of _PyRuntime: its first
 * 44 u64 words (cookie .. code_object.co_code_adaptive). */
#define CPY_DEBUG_OFFSETS_BYTES (44 * 8)

/* Take the walk's and code objects' offsets from the _Py_DebugOffsets
 * the interpreter publishes (buf: CPY_DEBUG_OFFSETS_BYTES read from
 * _PyRuntime) into *l, which holds the version's table. 0, or -EINVAL if
 * the cookie, version (3.minor of *l) or an offset does not hold up, or
 * the build is free-threaded (another layout): *l is then unchanged. */
int cpython_debug_offsets(const uint8_t *buf, size_t len,
			  struct cpython_layout *l);

/* The layout of CPython 3.minor, or NULL if unknown. */
const struct cpython_layout *cpython_layout_find(unsigned minor);

/*
 * The source line of the instruction at `index` of a code object whose
 * first line is `first_line`, from its line table as that version stores
 * it: co_lnotab (3.9, index in bytes), co_linetable (3.10, index in
 * bytes), the location table (3.11+, index in code units). 0 if the
 * table has none for that instruction.
 */
uint32_t cpython_line(unsigned minor, const uint8_t *table, size_t len,
		      int64_t first_line, uint64_t index);

/*
 * A Python str object's text as UTF-8 (compact objects: ASCII, latin-1,
 * UCS-2, UCS-4). `obj` holds the object's first bytes (len of them);
 * returns the bytes written to out (at most out_len - 1, NUL-terminated),
 * or -1 if the object is not a compact str that fits.
 */
int cpython_str(const struct cpython_layout *l, const uint8_t *obj, size_t len,
		char *out, size_t out_len);

#endif
