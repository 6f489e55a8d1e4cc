/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading V8's heap of another process: tagged values (pointer
 * compression included), strings, and what names a JavaScript frame:
 * JSFunction -> SharedFunctionInfo -> its name (from its ScopeInfo: the
 * function's name, or the name V8 inferred for an anonymous one) and
 * start position, Script -> name and source (lines counted from the
 * source). Every read goes through read() with a byte budget per
 * reader; a value of the wrong type is an error, never a guess.
 */
#ifndef OTELPROF_RUNTIMES_V8_HEAP_H
#define OTELPROF_RUNTIMES_V8_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process/process_memory.h"
#include "runtimes/v8/v8_layout.h"

#define V8_NAME_MAX	256	     /* bytes of a name kept (UTF-8) */
#define V8_STRING_DEPTH 8	     /* cons/thin/sliced strings followed */
#define V8_SOURCE_MAX	(4u << 20)   /* characters of a source scanned */
#define V8_READ_BUDGET	(16u << 20)  /* bytes read per frame named */
#define V8_SCOPE_SLOTS	4096	     /* context locals believed */
#define V8_CODE_MAX	(64u << 10)  /* bytes of code searched, believed */
#define V8_BYTECODE_MAX (256u << 10) /* bytes of a BytecodeArray read */

/*
 * V8 13's (Node 24's) functions name their code by a handle into the
 * JSDispatchTable of their isolate group, not by a field. Where the
 * table is: found once per process from the group (IsolateGroup's
 * default_isolate_group_, a static in .symtab), the word of it that,
 * taken as the table, maps a function's handle to a Code whose
 * instructions are the entry's; nothing in v8dbg says which word.
 */
struct v8_dispatch {
	uint64_t group_sym; /* &default_isolate_group_, 0: none */
	uint64_t base;	    /* the table, 0: not found (yet) */
	uint32_t tries;	    /* searches that found none */
	/* and the map every InstructionStream has, once one was seen (a
	 * function's code may be a builtin's, outside the heap) */
	uint64_t is_map;
	uint32_t is_map_tries; /* searches of code for it (find_is_map) */
};

#define V8_DISPATCH_TRIES 8
/* bytes of the group searched: the table's word was at 89 KiB on x86_64's
 * Node 26 (V8 14.6), at 484 KiB on arm64's (26.12.1) */
#define V8_DISPATCH_GROUP  (1u << 20)
#define V8_DISPATCH_SHIFT  8  /* handle >> this: the entry */
#define V8_DISPATCH_ENTRY  16 /* entry: entrypoint, code << 16 | argc */
#define V8_DISPATCH_TABLES (1ull << 32) /* the table's reservation, most */

/*
 * Code objects a process's frames ran in lately, by the span of their
 * instructions, with their position table: a frame whose pc is in one
 * is placed without reading the function, the Code and the table again
 * (10-15 reads of its memory). Trusted V8_CODE_MEMO_NS, as the frames'
 * own positions are: a Code freed and another's instructions at the same
 * place within it is as likely as between a sample and its naming.
 */
#define V8_CODE_MEMO	   16
#define V8_CODE_MEMO_TABLE 2048 /* bytes of a table kept; larger: re-read */
#define V8_CODE_MEMO_NS	   (1000ull * 1000 * 1000)
struct v8_code_memo {
	struct {
		uint64_t code, start, checked_ns;
		uint32_t size, table_len; /* 0: table not kept */
		bool baseline;
		uint8_t table[V8_CODE_MEMO_TABLE];
	} e[V8_CODE_MEMO];
};

struct v8_reader {
	const struct v8_layout *l;
	mem_read_fn read;
	void *ctx;
	uint64_t budget;	      /* bytes still allowed */
	struct v8_dispatch *dispatch; /* NULL: none known */
	struct v8_code_memo *memo;    /* NULL: none kept */
	uint64_t now_ns;	      /* for memo */
};

/* The index of the memo entry whose instructions hold pc, read within
 * V8_CODE_MEMO_NS of now; -1 if none. */
int v8_code_memo_find(const struct v8_code_memo *m, uint64_t pc,
		      uint64_t now_ns);
/* Keep code's span (and its table, if it fits; len 0: none), read at
 * now, in place of the entry of the same code or else the one read
 * longest ago; its index. */
int v8_code_memo_put(struct v8_code_memo *m, uint64_t code, uint64_t start,
		     uint32_t size, bool baseline, const uint8_t *table,
		     uint64_t len, uint64_t now_ns);

/* What a SharedFunctionInfo says about its function. */
struct v8_function {
	char name[V8_NAME_MAX];
	uint64_t script; /* tagged Script, 0: none (builtins, natives) */
	int32_t start;	 /* source position of its start, -1: unknown */
	int32_t end;	 /* ... of its end, -1: unknown */
	uint64_t source; /* tagged source String of the script, 0: none */
	char file[V8_NAME_MAX];
};

/* The JSFunction's SharedFunctionInfo (tagged), 0 if fn is none. */
uint64_t v8_function_shared(struct v8_reader *r, uint64_t fn);
/* Name, script and start of sfi; false if sfi is no SharedFunctionInfo
 * or unreadable. */
bool v8_function_read(struct v8_reader *r, uint64_t sfi,
		      struct v8_function *out);
/* The string at tagged s as UTF-8 (NUL-terminated, cut at cap - 1
 * bytes); false if s is no string. */
bool v8_string_read(struct v8_reader *r, uint64_t s, char *out, size_t cap);

/*
 * Line starts of a script's source: positions (in UTF-16 units, V8's)
 * where each line after the first begins. Built once per script from
 * its source; *n lines - 1 of them. NULL if the source is unreadable.
 */
uint32_t *v8_line_starts(struct v8_reader *r, uint64_t source, uint32_t *n);
#define V8_INLINE_MAX 16 /* functions inlined into one another, followed */

/* Functions an optimized frame's code inlined at its pc, innermost
 * first: each one's SharedFunctionInfo (tagged) and its source position
 * there. */
struct v8_inlined {
	uint32_t n;
	uint64_t sfi[V8_INLINE_MAX];
	int32_t pos[V8_INLINE_MAX];
};

/*
 * The source position an optimized frame of JSFunction fn is at: pc in
 * fn's current Code (TurboFan, Maglev), its table's entry at or before
 * pc's offset (pc - 1 for a return address, the call's); where pc is
 * not in the function's code now (OSR code, code it left), the code
 * before pc that spans it (V8 11 on). Where the position is inside
 * functions the code inlined, they go to *inl (NULL: such a position is
 * unknown) and the position returned is fn's own, at the outermost
 * inlined call: from the code's deoptimization data, its inlining
 * positions and literal array. -1 if unknown: the binary does not say
 * where the Code is, no code found for pc, baseline code (Sparkplug:
 * its table maps to bytecode offsets), a table that is no ByteArray or
 * does not decode, an inlining chain that does not read as one (deeper
 * than V8_INLINE_MAX, an index out of its arrays, an element of the
 * wrong type).
 */
int32_t v8_code_position(struct v8_reader *r, uint64_t fn, uint64_t pc,
			 bool return_address, struct v8_inlined *inl);
/*
 * Follow packed source position raw of Code code out through the
 * functions the code inlined (innermost first, into *inl) to the code's
 * own function's position, returned (raw's offset if it is in no
 * inlined function); -1 if the chain does not read as one.
 */
int32_t v8_inlining_chain(struct v8_reader *r, uint64_t code, int64_t raw,
			  struct v8_inlined *inl);
/*
 * The source position an interpreted frame of SharedFunctionInfo sfi is
 * at, from its noted slot (OTELPROF_V8_F_BUILTIN_PC's word1: the
 * bytecode offset, a Smi, in the high half; the low half of the
 * frame's BytecodeArray in the low one). -1 if unknown: not the
 * function's BytecodeArray now (an optimized frame running a builtin,
 * whose slot is no offset; flushed or baseline-compiled bytecode), an
 * offset outside it, a table that does not decode, 32-bit Smis.
 */
int32_t v8_bytecode_position(struct v8_reader *r, uint64_t sfi, uint64_t slot);
/* 1-based line of position pos. */
uint32_t v8_line_of(const uint32_t *starts, uint32_t n, uint32_t pos);

#endif
