/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names of code a process generated at run time (JIT), as the process
 * itself publishes them: perf map text (/tmp/perf-PID.map, "START SIZE
 * name" per line) and jitdump records (jit-PID.dump, JIT_CODE_LOAD and
 * JIT_CODE_MOVE). Both parsers are incremental (a file that grows is fed
 * from where the last call stopped), bounded (line and name lengths, a
 * byte budget for everything kept) and never trust a field: bad lines and
 * records are skipped and counted. No library parses either format.
 */
#ifndef OTELPROF_SYMBOLIZE_JIT_SYMBOLS_H
#define OTELPROF_SYMBOLIZE_JIT_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/str_arena.h"

#include "util/mem_budget.h"

/* Longest perf map line and jitdump name kept; longer ones are skipped. */
#define JIT_NAME_MAX 4096u
/* The perf map tool's own convention: jitdump magic "JiTD". */
#define JITDUMP_MAGIC 0x4A695444u

struct jit_sym {
	uint64_t start, end; /* [start, end) */
	uint32_t name;	     /* offset in names */
	uint32_t seq;	     /* order of appearance: later wins */
};

struct jit_symbols {
	struct jit_sym *v;
	uint32_t n, cap;
	struct str_arena names;
	bool sorted;
	uint32_t next_seq;
	size_t budget;		     /* bytes allowed for v + names */
	struct mem_account *account; /* charged with what is held (the
					global budget); NULL: none */
	uint64_t bad;		     /* lines/records skipped as malformed */
	uint64_t over_budget;	     /* entries dropped for the budget */
	/* incremental parser state */
	bool skip_line;	  /* perf map: inside an over-long line */
	bool header_seen; /* jitdump */
	bool broken;	  /* jitdump: unusable from here on */
	uint64_t skip;	  /* jitdump: bytes of the current record left */
};

void jit_symbols_init(struct jit_symbols *s, size_t budget);
void jit_symbols_free(struct jit_symbols *s);
/* Forget every entry and parser state (the file was replaced). */
void jit_symbols_clear(struct jit_symbols *s);
/* Bytes held. */
size_t jit_symbols_memory(const struct jit_symbols *s);

/* Feed perf map text. Only whole lines are consumed unless `at_end`
 * (the file ends here). Returns the bytes consumed; the caller passes the
 * rest again with more data. Never fails: bad lines count in s->bad. */
size_t perf_map_feed(struct jit_symbols *s, const char *text, size_t len,
		     bool at_end);
/* Feed jitdump bytes; returns the bytes consumed (a record that is not
 * complete yet is left for the next call, unless only its code is
 * missing, which is never kept). A bad header or record size marks the
 * stream broken: nothing more is consumed. */
size_t jitdump_feed(struct jit_symbols *s, const uint8_t *data, size_t len);

/* The newest entry holding pc, or NULL. */
const struct jit_sym *jit_symbols_lookup(struct jit_symbols *s, uint64_t pc);
static inline const char *jit_symbols_name(const struct jit_symbols *s,
					   const struct jit_sym *e)
{
	return s->names.buf + e->name;
}

/* A runtime's symbol split into what a Function carries. V8 names
 * ("JS:*name file:line:col", "LazyCompile:~name file:line") give the
 * function, its file and line and the v8js frame type; other names are
 * kept whole. out buffers hold at least JIT_NAME_MAX + 1 bytes. */
struct jit_frame_name {
	bool v8js;
	const char *function;
	const char *file; /* NULL if none */
	uint32_t line;
};
void jit_name_split(const char *name, char *buf, struct jit_frame_name *out);

#endif
