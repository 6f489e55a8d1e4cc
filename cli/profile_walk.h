/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Walks every sample of decoded profiles with its stack, weight and labels,
 * range-checking every index (the file may be anybody's), and names frames
 * for people: function names demangled, else "file+0xaddress".
 */
#ifndef OTELPROF_CLI_PROFILE_WALK_H
#define OTELPROF_CLI_PROFILE_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "otlp_input.h"

#define FRAME_NAME_MAX 8192

struct walk_sample {
	const Otelprof__Otlp__ProfilesData *pd;
	const Otelprof__Otlp__ProfilesDictionary *d;
	size_t doc; /* index in otlp_docs */
	const Otelprof__Otlp__ResourceProfiles *rp;
	const Otelprof__Otlp__Profile *prof;
	const Otelprof__Otlp__Sample *smp;  /* the raw sample (timestamps) */
	const Otelprof__Otlp__Stack *stack; /* leaf first; indices unchecked */
	uint64_t weight; /* samples: values[0], else #timestamps, else 1 */
	int64_t pid;	 /* -1: unknown */
	int64_t tid;	 /* -1: unknown */
	const char *thread_name;	  /* "" if none */
	const char *exe;		  /* process.executable.name or "" */
	const Otelprof__Otlp__Link *link; /* NULL if none */
};

typedef int (*walk_fn)(const struct walk_sample *s, void *ctx);

/* Calls fn for every CPU sample (of resources with process.pid == pid when
 * pid > 0; off-CPU profiles are skipped: walk_is_offcpu); stops at fn's
 * first non-zero return and returns it. */
int profile_walk(const struct otlp_docs *docs, int pid, walk_fn fn, void *ctx);

/* Key of attribute a of d's attribute table ("" when out of range), its
 * value (NULL), and an AnyValue's string (plain or strindex; "" if none). */
const char *walk_attr_key(const Otelprof__Otlp__ProfilesDictionary *d,
			  int32_t a);
const Otelprof__Otlp__AnyValue *
walk_attr_value(const Otelprof__Otlp__ProfilesDictionary *d, int32_t a);
const char *walk_any_str(const Otelprof__Otlp__ProfilesDictionary *d,
			 const Otelprof__Otlp__AnyValue *v);

/* True for an off-CPU profile (sample type events/nanoseconds). */
int walk_is_offcpu(const Otelprof__Otlp__ProfilesDictionary *d,
		   const Otelprof__Otlp__Profile *prof);

/* True when loc indexes a real location of d. */
int walk_location_ok(const Otelprof__Otlp__ProfilesDictionary *d, int32_t loc);

/* Display name of line k of location loc (k = n_lines - 1 is the outermost
 * function; with no lines, "file+0xaddr"). Returns buf or a string of d. */
const char *frame_name(const Otelprof__Otlp__ProfilesDictionary *d, int32_t loc,
		       size_t k, char *buf, size_t buflen);

#endif
