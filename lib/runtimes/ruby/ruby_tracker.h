/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CRuby in processes, on the runtime protocol (runtimes/runtime.h): finds
 * libruby (or a ruby executable) a process maps, has ruby_reader.c read
 * its version, thread state and loop, tells the BPF walk (ruby_procs),
 * and names the {iseq, pc} pairs it reports. Per-process state is kept
 * here, by pid.
 */
#ifndef OTELPROF_RUNTIMES_RUBY_TRACKER_H
#define OTELPROF_RUNTIMES_RUBY_TRACKER_H

#include <stdint.h>

#include "process/process_table.h"
#include "runtimes/ruby/ruby_reader.h"
#include "runtimes/runtime.h"
#include "util/idxmap.h"

struct file_cache;

struct ruby_tracker {
	struct process_table *procs;
	struct file_cache *files;
	struct runtime_programs *progs; /* NULL: userspace only (tests) */
	struct ruby_reader rd;
	/* per-process state, by pid */
	struct idxmap by_pid;
	struct ruby_process **rp;
	uint32_t nrp, caprp;
};

/* The runtime protocol's entry (runtimes/runtime.h). */
extern const struct runtime_ops ruby_runtime;

void ruby_tracker_init(struct ruby_tracker *t, struct process_table *procs,
		       struct file_cache *files,
		       struct runtime_programs *progs);
void ruby_tracker_free(struct ruby_tracker *t);

#endif
