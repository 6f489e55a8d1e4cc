/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HotSpot JVMs in processes: finds libjvm in a process's mappings, reads
 * the JVM's layout from its VMStructs (hotspot_vmstructs.h), tells the
 * BPF walker where its code cache is (jvm_procs), and names the Java
 * frames BPF reports: Method -> class, name, signature, source file,
 * line at the bci; cached per Method and checked again (methods are
 * freed with their classes, code blobs are freed and reused).
 */
#ifndef OTELPROF_INTERP_HOTSPOT_TRACKER_H
#define OTELPROF_INTERP_HOTSPOT_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process/process_memory.h"
#include "runtimes/hotspot/hotspot_jvm.h"
#include "runtimes/runtime.h"
#include "process/process_table.h"
#include "util/idxmap.h"
#include "util/mem_budget.h"

struct file_cache;

#define HS_CACHE_BUDGET (4u << 20) /* per process */
#define HS_RECHECK_NS	(1000ull * 1000 * 1000)
/* Tries to read a starting JVM's tables (they are filled during its
 * start-up) before it is reported as unknown. */
#define HS_OPEN_TRIES 20
#define HS_BCI_CACHE  1024
#define HS_LINE_CACHE 1024
/* A CodeBlob's fields are trusted this long: the frames of one stack and
 * of one drain pass share blobs (a recursion's, a hot loop's), and a blob
 * freed and reused at the same address within it is as likely as between
 * the sample and its first read. */
#define HS_BLOB_CACHE	 256
#define HS_STUB_CACHE	 16
#define HS_BLOB_TRUST_NS (200ull * 1000 * 1000)
/* Scopes kept per compiled pc: C2 inlines 15 deep at most by default
 * (MaxInlineLevel), the nmethod's own method is one more. */
#define HS_MAX_INLINE 16

struct hotspot_method_entry {
	uint64_t method, const_method;
	uint64_t checked_ns;
	char *name;   /* java.lang.String.hashCode */
	char *system; /* ... with the signature */
	char *file;   /* String.java, or NULL */
	uint64_t linetable, code_base;
	uint32_t bytes;
	bool ok;
};

struct hotspot_process {
	struct hotspot_jvm jvm;
	uint32_t pid; /* read context */
	bool ready, reported, in_kernel;
	uint32_t tries;
	struct mem_account account;
	struct idxmap index;
	struct hotspot_method_entry *v;
	uint32_t n, cap;
	size_t bytes;
	/* stubs' names by their name's address (a string of libjvm's that
	 * does not change), "[name]", checked again after HS_RECHECK_NS */
	struct {
		uint64_t name;
		uint64_t read_ns;
		char text[72];
	} stubs[HS_STUB_CACHE];
	/* scopes of a compiled frame's pc, by {blob, compilation, pc}:
	 * the methods it inlined, innermost first, then its own */
	struct {
		uint64_t blob, pc;
		uint32_t compile_id;
		int32_t n; /* -1: unknown */
		struct hotspot_scope sc[HS_MAX_INLINE];
	} bcis[HS_BCI_CACHE];
	struct {
		struct hotspot_blob b;
		uint64_t read_ns;
	} blobs[HS_BLOB_CACHE];
	/* the line of a bytecode index, by {ConstMethod, bci}: its line
	 * table is immutable while the ConstMethod lives, which the
	 * method cache checks (a read of up to 512 bytes per frame else) */
	struct {
		uint64_t const_method;
		int32_t bci;
		uint32_t line;
	} lines[HS_LINE_CACHE];
	uint64_t flushes; /* method cache emptied (its strings freed) */
};

/* What the JVM tracker counts (for otelprof_stats). */
struct hotspot_counters {
	uint64_t found;	       /* JVMs walked in the kernel */
	uint64_t unknown;      /* JVMs whose tables we could not use */
	uint64_t read_errors;  /* methods or blobs unreadable */
	uint64_t stale_frames; /* a compiled frame whose blob no longer
				  holds its pc: left out */
	uint64_t map_errors;
	uint64_t inline_errors; /* an inlined scope's Method unreadable:
				   the frame shows its callers only */
	uint64_t waited;	/* found while the walk program loaded */
};

struct hotspot_tracker {
	struct process_table *procs;
	struct file_cache *files; /* the mapped files' symbols */
	/* Loads the walk program; NULL: userspace only (tests). */
	struct runtime_programs *progs;
	mem_read_fn read_mem;
	struct hotspot_counters counters;
	/* The last named frame's inlined methods (runtime_ops.name_frame) */
	struct runtime_inline named_inl[HS_MAX_INLINE - 1];
};

/* The runtime protocol's entry (runtimes/runtime.h). */
extern const struct runtime_ops hotspot_runtime;

void hotspot_tracker_init(struct hotspot_tracker *t,
			  struct process_table *procs, struct file_cache *files,
			  struct runtime_programs *progs);
/* p is new, rescanned or has files read since: find its libjvm and tell
 * the kernel where the JVM keeps its code (once: it does not move). */
void hotspot_tracker_sync(struct hotspot_tracker *t, struct process *p,
			  const struct process_change *c);
/* p is about to be freed: drop its kernel entry and its state (p->jvm). */
void hotspot_tracker_forget(struct hotspot_tracker *t, struct process *p);
/* Also frees the state of the processes still in the table. */
void hotspot_tracker_free(struct hotspot_tracker *t);

struct hotspot_frame_info {
	const char *name, *system, *file;
	uint32_t line;
	/* a compiled frame's inlined methods, innermost first (the frame
	 * above is the outermost, its line at the call) */
	struct hotspot_inlined {
		const char *name, *system, *file;
		uint32_t line;
	} inl[HS_MAX_INLINE - 1];
	uint32_t ninlined;
};

/* The Java frame of pair {word0, word1} (OTELPROF_JVM_* encoding) of
 * process p; false if it cannot be named (left out). Strings live until
 * the next call for p. */
bool hotspot_frame(struct hotspot_tracker *t, struct process *p, uint64_t word0,
		   uint64_t word1, uint64_t now_ns,
		   struct hotspot_frame_info *out);

#endif
