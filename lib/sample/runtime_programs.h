/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The BPF programs of the runtimes walked in the kernel (ebpf/runtimes/),
 * loaded when the first process of a runtime is found, not at start: a
 * host with no JVM never verifies the HotSpot walk. The verifier takes
 * tens of milliseconds, so loads run on a thread of their own, never on
 * the drain thread; a finished load makes notify_fd readable and the
 * drain thread collects it (runtime_programs_take_ready) and writes the
 * processes that waited for it. A loaded program stays until stop.
 */
#ifndef OTELPROF_SAMPLE_RUNTIME_PROGRAMS_H
#define OTELPROF_SAMPLE_RUNTIME_PROGRAMS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "profiler_types.h"

struct bpf_sampler;
struct bpf_object;

enum runtime_program_state {
	RUNTIME_PROGRAM_ABSENT = 0, /* not asked for yet */
	RUNTIME_PROGRAM_LOADING,
	RUNTIME_PROGRAM_READY,	/* in walk_progs; its maps usable */
	RUNTIME_PROGRAM_FAILED, /* the kernel refused it: native stacks */
};

/* A runtime's program: where its BPF object is embedded. */
struct runtime_program_def {
	const char *name; /* for messages */
	const void *(*elf)(size_t *size);
};

struct runtime_programs {
	struct bpf_sampler *sampler; /* NULL: userspace only (tests) */
	bool inited;
	pthread_mutex_t lock;
	pthread_t thread;
	bool thread_running, thread_joinable, stopping;
	int notify_fd; /* eventfd, -1 if none */
	/* A load finished (or failed) since the drain thread last took
	 * them: it looks only then (no lock, no read of notify_fd per
	 * pass). */
	atomic_bool finished;
	struct {
		const struct runtime_program_def *def;
		enum runtime_program_state state;
		bool taken; /* the drain thread saw it ready */
		struct bpf_object *obj;
		char error[160];
	} rt[OTELPROF_RT_MAX];
	uint64_t failed; /* loads the kernel refused */
};

/* Programs loaded so far. */
uint64_t runtime_programs_loaded(struct runtime_programs *rp);

/* sampler NULL: nothing is ever loaded (want answers FAILED). */
int runtime_programs_init(struct runtime_programs *rp,
			  struct bpf_sampler *sampler);
/* Ask for runtime id's program: its state now. ABSENT becomes LOADING
 * (the load starts on the loader thread). */
enum runtime_program_state
runtime_programs_want(struct runtime_programs *rp, uint32_t id,
		      const struct runtime_program_def *def);
/* The fd of a ready runtime's own map (e.g. "jvm_procs"), or -1. */
int runtime_programs_map_fd(struct runtime_programs *rp, uint32_t id,
			    const char *map);
/* Readable when a load finished. */
int runtime_programs_notify_fd(const struct runtime_programs *rp);
/* Runtimes whose load finished (ready or failed) since the last call, as
 * a bitmask of ids; clears notify_fd. */
uint32_t runtime_programs_take_finished(struct runtime_programs *rp);
enum runtime_program_state runtime_programs_state(struct runtime_programs *rp,
						  uint32_t id);
/* Tell the kernel that process tgid's samples go through runtime id's
 * program (runtime_procs); 0 or a negative errno. */
int runtime_programs_attach(struct runtime_programs *rp, uint32_t tgid,
			    uint32_t id, uint8_t mode, uint8_t copy_kb);
void runtime_programs_detach(struct runtime_programs *rp, uint32_t tgid);
/* Waits for a load in progress and closes the objects: before the
 * sampler's close (a load uses it). Safe on a zeroed, never initialized
 * struct. */
void runtime_programs_free(struct runtime_programs *rp);

#endif
