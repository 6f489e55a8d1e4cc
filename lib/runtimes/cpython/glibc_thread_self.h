/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where glibc's pthread_self() lies relative to the thread pointer, which
 * is what the BPF walk has to compare PyThreadState.thread_id with.
 * x86_64 (TLS variant II): struct pthread starts at the thread pointer,
 * pthread_self() == tp. aarch64 (variant I): it ends there (THREAD_SELF is
 * (struct pthread *)tp - 1), so pthread_self() == tp - sizeof(struct
 * pthread), a size that changes between glibc releases and that glibc
 * exports for libthread_db as the data symbol _thread_db_sizeof_pthread.
 */
#ifndef OTELPROF_RUNTIMES_CPYTHON_GLIBC_THREAD_SELF_H
#define OTELPROF_RUNTIMES_CPYTHON_GLIBC_THREAD_SELF_H

#include <stdint.h>

#include "process/process_table.h"

/* A sizeof(struct pthread) outside this range is not believed. */
#define GLIBC_PTHREAD_SIZE_MIN 256u
#define GLIBC_PTHREAD_SIZE_MAX 16384u

enum glibc_thread_self {
	GLIBC_THREAD_SELF_KNOWN,   /* *below_tp set */
	GLIBC_THREAD_SELF_LATER,   /* libc not mapped (yet) or not opened */
	GLIBC_THREAD_SELF_UNKNOWN, /* no glibc, or no believable size */
};

/*
 * *below_tp = tp - pthread_self() for process p's threads: 0 on x86_64
 * (nothing read); on aarch64 glibc's _thread_db_sizeof_pthread, read from
 * the file of the libc p maps (its .dynsym, then the symbol's 4 bytes in
 * the file: a constant), checked against the range above.
 */
enum glibc_thread_self glibc_thread_self_below_tp(const struct process *p,
						  uint32_t *below_tp);

#endif
