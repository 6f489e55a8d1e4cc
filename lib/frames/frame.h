/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What symbolization makes of one frame: the stage's output, read by the
 * encoder (lib/encode/) and by nothing before it. Every string is owned by
 * the stack it belongs to (struct symbolized_stack), never by a file or a
 * process that may go while the stack is being encoded.
 */
#ifndef OTELPROF_FRAMES_FRAME_H
#define OTELPROF_FRAMES_FRAME_H

#include <stdbool.h>
#include <stdint.h>

enum frame_kind {
	FRAME_NATIVE = 0,
	FRAME_KERNEL = 1,
	FRAME_V8JS = 2,	   /* JavaScript compiled by V8 (Node) */
	FRAME_CPYTHON = 3, /* a Python function run by CPython */
	FRAME_GO = 4,	   /* Go code (named from .gopclntab) */
	FRAME_JVM = 5,	   /* Java run by HotSpot */
	FRAME_RUBY = 6,	   /* Ruby run by CRuby (MRI) */
	FRAME_PHP = 7,	   /* PHP run by the Zend engine */
	FRAME_PERL = 8,	   /* Perl run by perl's interpreter */
	FRAME_DOTNET = 9,  /* .NET (CoreCLR) */
	FRAME_BEAM = 10,   /* Erlang/Elixir run by BEAM */
	FRAME_KINDS
};

struct frame {
	uint8_t kind;	      /* enum frame_kind */
	uint64_t address;     /* ELF vaddr for native frames in a known file;
				 else the runtime address */
	const char *function; /* NULL: unknown; Function.name (demangled) */
	const char *function_system; /* Function.system_name; NULL: as name */
	const char *function_file;   /* Function.filename (kernel module,
					source file) */
	uint32_t start_line;	     /* Function.start_line; 0 = unknown */
	uint32_t line;		     /* Line.line; 0 = unknown */
	const char *mapping_file;    /* NULL: no mapping */
	uint64_t map_start, map_limit, map_offset;
	const char *build_id;	 /* hex, NULL or "" if none */
	const char *htlhash;	 /* hex, NULL or "" if none */
	const char *build_id_go; /* Go build id, NULL or "" if none */
	bool fp_unwound;	 /* found by the frame-pointer step, not CFI */
	/* Functions inlined at this pc, innermost first (DWARF); the
	 * frame's own function above is the outermost: Location.lines is
	 * inlined[0..n-1] then the own line. */
	const struct frame_inline *inlined;
	uint32_t ninlined;
	/* Set from the frame memo (frames/frame_memo.h): what the caller
	 * encoded this frame as before in the window (its Location's
	 * index), used in place of every field above but kind; 0: none. */
	int32_t memo_value;
	/* A memo entry waiting for this frame's encoding (frame_memo_set),
	 * 0: none. */
	uint32_t memo_id;
};

struct frame_inline {
	const char *function, *function_system, *function_file;
	uint32_t line;
	uint32_t start_line; /* 0: unknown */
};

#endif
