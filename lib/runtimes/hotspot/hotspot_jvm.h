/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One JVM's code cache and methods, read from its memory with the layout
 * its VMStructs gave: which code blob a pc is in (the code heaps' segment
 * maps), whether it is a compiled method and of which Method, and a
 * Method's class, name, signature, source file and line at a bci. Every
 * read is bounded and may fail; nothing read is trusted further than it
 * checks out (a blob must contain the pc, a name must be a Symbol of
 * sane length).
 */
#ifndef OTELPROF_INTERP_HOTSPOT_JVM_H
#define OTELPROF_INTERP_HOTSPOT_JVM_H

#include <stdbool.h>
#include <stdint.h>

#include "runtimes/hotspot/hotspot_vmstructs.h"

#define HS_MAX_HEAPS	 8
#define HS_SYMBOL_MAX	 1024 /* longest class/method/signature kept */
#define HS_MAX_HOPS	 256  /* segment map steps back to a blob start */
#define HS_LINETABLE_MAX 65536

struct hotspot_heap {
	uint64_t low, high; /* code, committed when read */
	/* The reserved end: the heap commits more up to it as it fills,
	 * so code beyond high (as read) is the heap's too. */
	uint64_t limit;
	uint64_t segmap; /* one byte per segment */
	uint32_t log2_segment;
};

/* A CodeBlob's header (nmethod fields included) read at once: 17 to 25
 * need under 300 bytes; a layout beyond it is read field by field. */
#define HS_BLOB_HEADER_MAX 512u

struct hotspot_jvm {
	struct hotspot_layout l;
	mem_read_fn read;
	void *ctx;
	struct hotspot_heap heaps[HS_MAX_HEAPS];
	uint32_t nheaps;
	uint64_t interp_low, interp_high; /* the template interpreter */
};

/* Read the layout, code heaps and interpreter bounds. 0 or -errno;
 * -ENOTSUP if the JVM's tables lack what we need (*missing names it). */
int hotspot_jvm_open(struct hotspot_jvm *j, const struct hotspot_syms *syms,
		     mem_read_fn read, void *ctx, const char **missing);

/* Re-read the code heaps' bounds (they grow). */
int hotspot_jvm_heaps(struct hotspot_jvm *j);

struct hotspot_blob {
	uint64_t addr; /* the CodeBlob */
	uint64_t code_begin, code_end;
	int32_t frame_size; /* words */
	bool nmethod;
	uint64_t method;     /* nmethod: its Method* */
	uint64_t name;	     /* char *: "nmethod", "StubRoutines (2)", ... */
	uint32_t compile_id; /* nmethod: which compilation */
};

/* The blob containing pc; 0, -ENOENT (not in the code cache or a free
 * block), -EIO. */
int hotspot_blob_at(struct hotspot_jvm *j, uint64_t pc, struct hotspot_blob *b);
/* The blob at addr (a CodeBlob's address), checked to be one. */
int hotspot_blob_read(struct hotspot_jvm *j, uint64_t addr,
		      struct hotspot_blob *b);

struct hotspot_method {
	char klass[HS_SYMBOL_MAX]; /* java/lang/String */
	char name[HS_SYMBOL_MAX];
	char signature[HS_SYMBOL_MAX]; /* (I)J */
	char source[HS_SYMBOL_MAX];    /* String.java, or "" */
	uint64_t const_method;
	uint64_t linetable; /* 0: none */
	uint16_t code_size;
};

/* 0, or -EIO / -EINVAL (not a readable Method). */
int hotspot_method_read(struct hotspot_jvm *j, uint64_t method,
			struct hotspot_method *m);

/* The line of bci in m's line number table (0: unknown). */
uint32_t hotspot_method_line(struct hotspot_jvm *j,
			     const struct hotspot_method *m, uint32_t bci);

/* The same from the table's address. */
uint32_t hotspot_line_at(struct hotspot_jvm *j, uint64_t linetable,
			 uint32_t bci);

/* Decode a compressed line number table (bytes of the process) for bci:
 * the line of the last entry at or before it. Exposed for the fuzzer. */
uint32_t hotspot_linetable_line(const uint8_t *t, uint32_t len, bool unsigned5,
				uint32_t bci);

/* Scopes followed from the innermost to the outermost (inlining
 * depth). */
#define HS_MAX_SCOPES 32

/* One scope of a compiled pc: a method and its bci (the inlined one
 * running, or its sender's at the call). */
struct hotspot_scope {
	uint64_t method; /* Method*; 0: not known */
	int32_t bci;	 /* -1: not known */
};

/* The scopes of pc in nmethod b from its PcDescs, scopes and metadata,
 * innermost first; the last is b's own method (at most max, the
 * outermost kept). The number, or -1 if none is known. An inner scope
 * whose Method cannot be read (a layout without the metadata's place,
 * an index out of it, or the outermost not naming b's own method) has
 * method 0. Every Method given must still be checked by reading it. */
int hotspot_nmethod_scopes(struct hotspot_jvm *j, const struct hotspot_blob *b,
			   uint64_t pc, struct hotspot_scope *out,
			   uint32_t max);

/* The bci of pc in nmethod b's outermost scope (the method itself, not
 * what it inlined) from its PcDescs and scopes; -1 if unknown. */
int32_t hotspot_nmethod_bci(struct hotspot_jvm *j, const struct hotspot_blob *b,
			    uint64_t pc);

/* One unsigned number of a compressed stream (both formats); false at
 * its end. Exposed for the fuzzer. */
bool hotspot_stream_uint(const uint8_t *t, uint32_t len, uint32_t *pos,
			 bool unsigned5, uint32_t *out);

/* Every nmethod in the code heaps (tests). Stops after max blobs. */
typedef void (*hotspot_blob_fn)(void *arg, const struct hotspot_blob *b);
int hotspot_each_blob(struct hotspot_jvm *j, uint32_t max, hotspot_blob_fn fn,
		      void *arg);

#endif
