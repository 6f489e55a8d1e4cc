/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Accumulates samples for one reporting window into deduplicated OTLP
 * dictionary tables (strings, attributes, functions, mappings, locations,
 * stacks, links) and per-process sample lists. Index 0 of every table is the
 * zero value, as OTLP requires. otlp_encoder.c turns it into bytes.
 */
#ifndef OTELPROF_ENCODE_PROFILE_BUILDER_H
#define OTELPROF_ENCODE_PROFILE_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frames/frame.h"
#include "util/idxmap.h"
#include "util/str_arena.h"

/* Lines per Location at most (inlining depth + 1). */
#define PB_MAX_LINES 32

/* An attribute given by the caller (resource extras). */
struct pb_attr_in {
	const char *key;
	const char *str; /* NULL: int value */
	int64_t i;
};

struct pb_resource_info {
	uint64_t key; /* caller's identity for the process (unique serial) */
	uint32_t pid;
	const char *exe_name;
	const char *exe_path;
	const char *container_id; /* NULL or "" if none */
	const char *host_name;
	/* published by the process (service.name, ...); may repeat and
	 * override none of the above */
	const struct pb_attr_in *extra;
	size_t nextra;
	uint64_t extra_gen; /* changes when extra does: the resource's
			       extras are replaced (a late publication) */
};

struct pb_kv { /* a Resource attribute, string or int */
	char *key;
	char *str; /* NULL for int */
	int64_t i;
};

struct pb_resource {
	uint64_t key;
	struct pb_kv *attrs;
	size_t nattrs, attrs_cap;
	size_t nbase;	    /* attrs before the published extras */
	uint64_t extra_gen; /* pb_resource_info.extra_gen they came from */
	uint32_t *samples;  /* indices into builder samples */
	size_t nsamples, cap;
};

/* Thread-context attributes a sample may carry beside its own three. */
#define PB_MAX_CTX_ATTRS 8
#define PB_SAMPLE_ATTRS	 (3 + PB_MAX_CTX_ATTRS)

struct pb_sample {
	uint32_t resource;
	int32_t stack;
	/* thread.id, thread.name, cpu.logical_number, then context
	 * attributes; 0 = absent */
	int32_t attrs[PB_SAMPLE_ATTRS];
	int32_t link;
	uint64_t period_ns; /* rate it was taken at; 0 = the window's */
	bool offcpu;	    /* an off-CPU event: its own Profile, with values */
	uint64_t *ts;
	int64_t *vals; /* off-CPU: nanoseconds off per timestamp */
	uint32_t nts, capts;
};

/* Records below are hashed and compared bytewise: no padding allowed. */
struct pb_attr {
	int32_t key;
	int32_t is_str;
	int64_t ival; /* int value, or string index when is_str */
};

struct pb_function {
	int32_t name, system_name, filename;
	int32_t start_line;
};

#define PB_MAPPING_ATTRS 3
struct pb_mapping {
	uint64_t start, limit, offset;
	int32_t filename;
	/* build_id.gnu, build_id.htlhash, build_id.go; 0 = absent */
	int32_t attrs[PB_MAPPING_ATTRS];
};

struct pb_location {
	uint64_t address;
	int32_t mapping;
	int32_t function; /* 0 = no line */
	int32_t frame_type_attr;
	int32_t unwind_attr; /* otelprof.unwind.method, 0 = CFI / none */
	int32_t line;	     /* of the function's source; 0 = unknown */
	int32_t more_lines;  /* lines after the first: index into line
				lists (function, line pairs), 0 = none */
};

struct pb_link {
	uint8_t trace_id[16];
	uint8_t span_id[8];
};

#define PB_VEC(T)                                                              \
	struct {                                                               \
		T *v;                                                          \
		uint32_t n;                                                    \
		uint32_t cap;                                                  \
	}

struct profile_builder {
	/* string table: NUL-terminated strings packed in an arena */
	struct str_arena arena;
	PB_VEC(uint32_t) str_off;
	struct idxmap str_index;

	PB_VEC(struct pb_attr) attrs;
	struct idxmap attr_index;
	PB_VEC(struct pb_function) functions;
	struct idxmap function_index;
	PB_VEC(struct pb_mapping) mappings;
	struct idxmap mapping_index;
	PB_VEC(struct pb_location) locations;
	struct idxmap location_index;
	PB_VEC(uint32_t) lines_off; /* line list i: (function, line) pairs */
	PB_VEC(uint32_t) lines_len; /* in int32 values */
	PB_VEC(int32_t) lines_vals;
	struct idxmap lines_index;
	PB_VEC(uint32_t) stack_off; /* start of stack i in stack_locs */
	PB_VEC(uint32_t) stack_len;
	PB_VEC(int32_t) stack_locs;
	struct idxmap stack_index;
	PB_VEC(struct pb_link) links;
	struct idxmap link_index;
	PB_VEC(struct pb_resource) resources;
	struct idxmap resource_index;
	PB_VEC(struct pb_sample) samples;
	struct idxmap sample_index;

	/* well-known strings and attributes, interned at reset */
	int32_t s_thread_id, s_thread_name, s_cpu, s_frame_type, s_build_id,
		s_htlhash, s_build_id_go, s_kernel_mapping;
	int32_t a_frame[FRAME_KINDS]; /* profile.frame.type by kind */
	int32_t a_unwind_fp;

	uint64_t total_samples;
	uint64_t offcpu_samples; /* of them, off-CPU events */
	uint64_t min_ts, max_ts;
	/* Period of the samples added next (0 = the window's): samples of
	 * two rates never merge, and the encoder gives each rate its own
	 * Profile. Kept across resets. */
	uint64_t period_ns;

	/* Sample attributes repeat per thread and CPU: remember their
	 * indices instead of interning them again for every sample. */
	struct pb_thread_cache {
		uint32_t tid;
		int32_t id_attr, name_attr;
		char name[16];
	} thread_cache[256];
	int32_t cpu_attr[256];
};

int pb_init(struct profile_builder *b);
void pb_free(struct profile_builder *b);
/* Forget the window's contents, keep allocations. 0 or -ENOMEM. */
int pb_reset(struct profile_builder *b);

int32_t pb_string(struct profile_builder *b, const char *s);
/* The Location of frame f; f->memo_value, if set, is one already
 * interned in this window (checked against the table's size only). */
int32_t pb_location(struct profile_builder *b, const struct frame *f);
/* Stack of location indices, leaf first. */
int32_t pb_stack(struct profile_builder *b, const int32_t *locs, size_t n);
/* Frames per stack at most for pb_frames_stack. */
#define PB_MAX_FRAMES 1024
/* The stack of n frames, leaf first (each interned as a Location, or
 * the Location a frame's memo_value names); locs, if not NULL, gets each
 * frame's Location index. */
int32_t pb_frames_stack(struct profile_builder *b, const struct frame *frames,
			size_t n, int32_t *locs);
int32_t pb_link(struct profile_builder *b, const uint8_t trace_id[16],
		const uint8_t span_id[8]);
/* Resource index for a process (created from info on first use). */
int pb_resource(struct profile_builder *b, const struct pb_resource_info *r,
		uint32_t *out);
/* A string attribute's index (key and value interned). */
int32_t pb_attr_string(struct profile_builder *b, const char *key,
		       const char *value);
/* extra: up to PB_MAX_CTX_ATTRS attribute indices (thread context),
 * in a stable order so equal sets merge. */
int pb_add_sample(struct profile_builder *b, uint32_t resource, int32_t stack,
		  uint32_t tid, const char *thread_name, uint32_t cpu,
		  int32_t link, const int32_t *extra, uint32_t nextra,
		  uint64_t ts_unix_ns);
/* An off-CPU event: the thread was switched out at ts (unix ns) for
 * off_ns; it never merges with on-CPU samples. */
int pb_add_offcpu_sample(struct profile_builder *b, uint32_t resource,
			 int32_t stack, uint32_t tid, const char *thread_name,
			 uint32_t cpu, int32_t link, const int32_t *extra,
			 uint32_t nextra, uint64_t ts, int64_t off_ns);
size_t pb_memory(const struct profile_builder *b);

#endif
