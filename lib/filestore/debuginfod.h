/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Debug files fetched by build id from debuginfod servers (GET
 * URL/buildid/HEX/debuginfo), for files whose symbols no local lookup
 * found (debug_info.c). Off unless servers are configured.
 *
 * Lookups run on their own threads, never the drain thread: a server can
 * take seconds to answer, or never. Everything is bounded: jobs queued,
 * threads, bytes per file (and the file's memory budget, charged as the
 * download grows: it is held in memory, not on disk), time per lookup;
 * a build id that failed waits (doubling) before it is asked again. Stop
 * wakes the transfers at once instead of waiting for their timeouts.
 *
 * libcurl is used directly rather than libdebuginfod: that client takes
 * its servers only from the process environment (a library must not
 * setenv with threads running), polls its cancel callback once a second
 * (stop would wait for it), and writes to a disk cache under $HOME.
 */
#ifndef OTELPROF_FILESTORE_DEBUGINFOD_H
#define OTELPROF_FILESTORE_DEBUGINFOD_H

#include <stdbool.h>
#include <stdint.h>

#include "elf/dwarf_lines.h"
#include "elf/elf_file.h"
#include "util/mem_budget.h"
#include "util/work_queue.h"

/* The file cache's entry (filestore/file_cache.h): only carried here. */
struct elf_file;

#define DEBUGINFOD_MAX_URLS	8
#define DEBUGINFOD_MAX_URL_LEN	1024
#define DEBUGINFOD_THREADS	2   /* lookups in flight at most */
#define DEBUGINFOD_MAX_JOBS	32u /* queued, running or not yet taken */
#define DEBUGINFOD_MAX_BYTES	(256ull << 20) /* one debug file */
#define DEBUGINFOD_CONNECT_MS	2000ull	       /* per server */
#define DEBUGINFOD_LOOKUP_MS	15000ull       /* one build id, all servers */
#define DEBUGINFOD_NEG_FIRST_NS (60ull * 1000000000ull)
#define DEBUGINFOD_NEG_MAX_NS	(3600ull * 1000000000ull)
#define DEBUGINFOD_NEG_ENTRIES	1024u /* build ids remembered as failed */

/* A lookup's outcome. */
enum debuginfod_result {
	DEBUGINFOD_HIT = 0,
	DEBUGINFOD_NOT_FOUND, /* every server: 404 or an error */
	DEBUGINFOD_TIMEOUT,
	DEBUGINFOD_REFUSED,  /* too big, or over the file's budget */
	DEBUGINFOD_BAD_FILE, /* not an ELF for this build id */
	DEBUGINFOD_CANCELED,
};

struct debuginfod_job {
	struct elf_file *file; /* the owner's entry, referenced until taken */
	struct mem_account *acct;
	char build_id[2 * ELF_FILE_MAX_BUILD_ID + 1];
	int result;		   /* enum debuginfod_result */
	uint64_t bytes;		   /* downloaded */
	struct elf_symbols sym;	   /* from the debug file (result HIT) */
	struct dwarf_lines *dwarf; /* its source lines, NULL if none */
	struct work_item item;	   /* in the queue, or a list handed out */
};

/* The job item links (NULL for NULL). */
#define debuginfod_job_of(it) work_queue_job(it, struct debuginfod_job, item)

struct debuginfod_neg {
	uint64_t hash;
	uint64_t retry_ns; /* CLOCK_MONOTONIC */
	uint32_t failures;
};

struct debuginfod;
struct debuginfod_thread {
	struct debuginfod *d;
	void *multi; /* CURLM: its transfers, woken at stop */
};

struct debuginfod {
	char *urls[DEBUGINFOD_MAX_URLS];
	unsigned nurls;
	uint64_t lookup_ms; /* time for one build id */
	/* DEBUGINFOD_MAX_JOBS lookups, one per worker at a time; at stop
	 * the transfers end at once (stopping, then each worker's multi
	 * woken). */
	struct work_queue queue;
	struct debuginfod_thread threads[DEBUGINFOD_THREADS]; /* by worker */
	/* Drain thread only. */
	struct debuginfod_neg *neg; /* DEBUGINFOD_NEG_ENTRIES, when on */
	struct debuginfod_counters {
		uint64_t lookups, hits, failures, refused;
	} counters;
};

void debuginfod_init(struct debuginfod *d);
/* Servers as in $DEBUGINFOD_URLS: URL prefixes separated by spaces
 * (http:// or https:// only). NULL or "": off. Loads libcurl when on.
 * 0, or -EINVAL (-ELIBACC: no libcurl) with a reason in why. Before
 * start. */
int debuginfod_set_urls(struct debuginfod *d, const char *urls,
			const char **why);
static inline bool debuginfod_enabled(const struct debuginfod *d)
{
	return d->nurls > 0;
}
/* Start the threads (nothing if off). 0 or -errno. */
int debuginfod_start(struct debuginfod *d, int notify_fd);
/*
 * Ask for the debug file of build_id (hex) for file, whose account acct
 * is charged for the download and what is read from it. 0 queued (the
 * caller holds a reference for the job); -EBUSY: this build id failed
 * lately, *retry_ns says when it may be asked again; -EAGAIN: the queue
 * is full (counted as refused); -ENODEV: off.
 */
int debuginfod_submit(struct debuginfod *d, struct elf_file *file,
		      struct mem_account *acct, const char *build_id,
		      uint64_t *retry_ns);
/* Finished lookups (counted and, failed ones, remembered), a list of
 * their items (debuginfod_job_of each): free each with
 * debuginfod_job_free after taking what it holds. */
struct work_item *debuginfod_take_done(struct debuginfod *d);
void debuginfod_job_free(struct debuginfod_job *j);
bool debuginfod_busy(struct debuginfod *d);
/* Stop the threads (transfers end at once) and return every job not
 * taken, for the owner to release. */
struct work_item *debuginfod_stop(struct debuginfod *d);
void debuginfod_free(struct debuginfod *d);

#endif
