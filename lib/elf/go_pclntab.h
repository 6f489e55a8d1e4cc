/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Go's function table (.gopclntab), which stripped Go binaries (-ldflags
 * "-s -w") keep because the runtime needs it: function entries and names,
 * and per pc the source file and line. Formats of Go 1.16-1.17 (magic
 * 0xfffffffa), 1.18-1.19 (0xfffffff0) and 1.20 onwards (0xfffffff1).
 * Hand-written: no C library reads it (Go's own debug/gosym is Go). The
 * table comes from a file a process mapped: every offset is checked.
 */
#ifndef OTELPROF_ELF_GO_PCLNTAB_H
#define OTELPROF_ELF_GO_PCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GO_PCLNTAB_MAX_BYTES (256u << 20)
#define GO_PCLNTAB_MAX_FUNCS 4000000u

struct section_pages;

struct go_pclntab {
	const uint8_t *data;	     /* the section, not owned; or: */
	struct section_pages *pages; /* read from the file on demand */
	size_t len;
	unsigned version;    /* 116, 118 or 120 */
	bool text_in_header; /* text_start came from the header */
	uint8_t quantum, ptrsize;
	uint64_t nfunc, text_start;
	/* offsets into data, each checked to lie inside it */
	uint64_t funcname, cutab, filetab, pctab, pcln;
};

/*
 * Check the header of a .gopclntab section. text_start is the .text
 * address, used where the header leaves it 0 (Go 1.16-1.17 have no field;
 * newer linkers may leave it to a relocation). 0 or -ENOEXEC.
 */
int go_pclntab_open(struct go_pclntab *t, const uint8_t *data, size_t len,
		    uint64_t text_start);
/* The same over a section read through pages (section_pages.h), for the
 * scans of a whole table (its functions' names and SP deltas): a big
 * daemon's table is not copied. Names from go_pclntab_func are then valid
 * until its next call; go_pclntab_line and go_pclntab_inlined, which
 * return pointers into the table, need the table in memory. */
int go_pclntab_open_pages(struct go_pclntab *t, struct section_pages *pages,
			  uint64_t text_start);

/* Function i (0 <= i < t->nfunc): entry address, end (the next entry)
 * and name (NUL-terminated inside the table, at most max_name bytes).
 * False if the entry is malformed. */
bool go_pclntab_func(const struct go_pclntab *t, uint64_t i, uint64_t *entry,
		     uint64_t *end, const char **name, size_t *name_len,
		     size_t max_name);

/* Go's FuncFlag bits (internal/abi): a function at the bottom of its
 * stack, where Go's traceback ends; one that writes sp itself (a stack
 * switch: its SP delta table does not hold past the write). */
#define GO_FUNC_FLAG_TOPFRAME 0x1
#define GO_FUNC_FLAG_SPWRITE  0x2
/* Function i's FuncFlag byte; false for the Go 1.16-1.17 table format,
 * whose _func has no fixed place for it. */
bool go_pclntab_flag(const struct go_pclntab *t, uint64_t i, uint8_t *flag);

/* The function containing pc (binary search of the function table). */
bool go_pclntab_find(const struct go_pclntab *t, uint64_t pc, uint64_t *i);
/* Source file and line of pc in function i (its pcfile and pcln tables,
 * the file through the compile unit's file table). */
bool go_pclntab_line(const struct go_pclntab *t, uint64_t i, uint64_t pc,
		     const char **file, uint32_t *line);

/*
 * Functions inlined at pc in function i, innermost first, from the inline
 * tree (FUNCDATA_InlTree, in go:func.* whose bytes from moduledata.gofunc
 * on are `gofunc`, gofunc_len long; Go 1.18 on). Fills up to max entries
 * (name, file, line of each inlined function's code) and the file and line
 * in function i itself (the outermost call site). Returns the number
 * filled, 0 without inlining (file and line still set), -1 on failure.
 */
struct go_inlined {
	const char *name, *file;
	uint32_t line;
};
int go_pclntab_inlined(const struct go_pclntab *t, uint64_t i, uint64_t pc,
		       const uint8_t *gofunc, size_t gofunc_len,
		       struct go_inlined *out, unsigned max, const char **file,
		       uint32_t *line);
/* moduledata's gofunc, found in .go.module (Go 1.26) or .noptrdata (the
 * word that holds the table's own address, followed by its function-name
 * table's). */
bool go_moduledata_gofunc(const struct go_pclntab *t, uint64_t tab_addr,
			  const uint8_t *noptrdata, size_t len,
			  uint64_t *gofunc);
/*
 * Where function offsets count from when the table's header leaves it 0
 * (Go 1.26 always does): moduledata.text, found as for gofunc. An
 * externally linked binary (cgo) has C code before the Go text, so
 * .text's start is not it. Sets t->text_start; false if not found or
 * not inside [lo, hi) (the file's executable window).
 */
bool go_moduledata_text(struct go_pclntab *t, uint64_t tab_addr,
			const uint8_t *noptrdata, size_t len, uint64_t lo,
			uint64_t hi);

/* Function i's SP-delta table (pcsp): offset into the table, 0 if none. */
bool go_pclntab_pcsp(const struct go_pclntab *t, uint64_t i, uint64_t *off);

/*
 * Walk of one pc-value table (Go's pcsp, pcfile, pcln encoding): pairs of
 * zig-zag value delta and pc delta (times the quantum), both varints,
 * ended by a zero value delta after the first pair. Bounded by the table
 * and by GO_PCVALUE_MAX_STEPS.
 */
#define GO_PCVALUE_MAX_STEPS (1u << 20)
struct go_pcvalue {
	const struct go_pclntab *t;
	uint64_t off, pc, end; /* position, current pc, function end */
	int64_t val;
	unsigned steps;
	bool first;
};
void go_pcvalue_start(struct go_pcvalue *it, const struct go_pclntab *t,
		      uint64_t off, uint64_t entry, uint64_t end);
/* The next range [lo, hi) with value v; false at the end or on garbage. */
bool go_pcvalue_next(struct go_pcvalue *it, uint64_t *lo, uint64_t *hi,
		     int64_t *v);

#endif
