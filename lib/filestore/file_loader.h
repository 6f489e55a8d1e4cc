/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads what we keep of a file (symbols, debug info, DWARF index, htlhash)
 * on a worker thread, so that the drain thread never waits for a big file
 * (librustc_driver's symbols: ~250 ms; libLLVM: ~100 ms) with the state
 * lock held. The queue is bounded; the drain thread never waits on the
 * worker: a file that does not fit is tried again later.
 */
#ifndef OTELPROF_FILESTORE_FILE_LOADER_H
#define OTELPROF_FILESTORE_FILE_LOADER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "elf/dwarf_lines.h"
#include "elf/elf_file.h"
#include "util/mem_budget.h"
#include "util/work_queue.h"

/* The file cache's entry (filestore/file_cache.h): only carried here. */
struct elf_file;

/* Files at least this big are read on the worker (smaller ones take well
 * under a millisecond: inline, known at once). */
#define FILE_LOADER_MIN_BYTES (256u << 10)
/* Loads queued or running at most (each holds two fds). */
#define FILE_LOADER_MAX_JOBS 64u

/* What a load yields (the same inline and on the worker). */
struct file_load_result {
	int load_err;	  /* 0, or why symbols are missing */
	int debug_source; /* enum debug_info_source */
	struct elf_symbols sym;
	struct dwarf_lines *dwarf;
	char htlhash[33];
};

/* Read the file open as fd (mapped at path; debug files looked up inside
 * root_fd first, -1: none), charging acct. cancel (may be NULL): stop
 * between steps. */
void file_load_run(struct file_load_result *r, int fd, const char *path,
		   int root_fd, struct mem_account *acct,
		   const atomic_bool *cancel);

struct file_load_job {
	struct elf_file *file; /* the owner's entry, held until finished */
	struct mem_account *acct;
	int fd, root_fd;
	char *path;
	uint64_t ns; /* worker time */
	struct file_load_result r;
	struct work_item item; /* in the queue, or a list handed out */
};

/* The job item links (NULL for NULL). */
#define file_load_job_of(it) work_queue_job(it, struct file_load_job, item)

struct file_loader {
	/* FILE_LOADER_MAX_JOBS queued, running or done, not yet taken; a
	 * load in progress ends at its next step once stopping. */
	struct work_queue queue;
	uint64_t submitted, queue_full;
};

void file_loader_init(struct file_loader *l);
/* Start the worker; notify_fd (not owned, may be -1) is written to when a
 * load finished. 0 or -errno. */
int file_loader_start(struct file_loader *l, int notify_fd);
/* Queue a load of fd (dup'ed; root_fd too) for file, charging acct.
 * 0, -EAGAIN if the queue is full (counted), -ENOMEM, -ENODEV if not
 * started. */
int file_loader_submit(struct file_loader *l, struct elf_file *file,
		       struct mem_account *acct, int fd, const char *path,
		       int root_fd);
/* The finished loads (a list of their items, file_load_job_of each; the
 * caller frees each with file_loader_job_free after taking r). */
struct work_item *file_loader_take_done(struct file_loader *l);
void file_loader_job_free(struct file_load_job *j);
/* Loads queued, running or finished but not taken. */
bool file_loader_busy(struct file_loader *l);
/* Stop the worker (a load in progress ends at its next step) and return
 * every job not taken (finished or not), for the owner to release. */
struct work_item *file_loader_stop(struct file_loader *l);

#endif
