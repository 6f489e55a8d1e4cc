/* SPDX-License-Identifier: Apache-2.0 */
/* Bounded reads of another process's memory (process_vm_readv). */
#ifndef OTELPROF_PROCESS_PROCESS_MEMORY_H
#define OTELPROF_PROCESS_PROCESS_MEMORY_H

#include <stddef.h>
#include <stdint.h>

/* Largest single read we allow: every size we read comes from the other
 * process and is checked against this first. */
#define PROCESS_MEMORY_MAX_READ (1u << 20)

/* How readers get bytes of a process; tests and fuzzers pass their own. */
typedef int (*mem_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Read exactly len bytes at addr of process pid (ctx: a pointer to the
 * pid as uint32_t). 0, or -EFAULT/-ESRCH/-E2BIG/... */
int process_memory_read(void *pid_ctx, uint64_t addr, void *buf, size_t len);

#endif
