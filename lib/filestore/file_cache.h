/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the symbolizer keeps of each file (symbols, demangled names, source
 * lines, what they cost, eviction and reload, debuginfod), in its own
 * table by the file's slot (files/file_table.h owns the file itself). The
 * agent adds and drops entries as the file table reports files
 * (lib/agent/file_sync.c).
 */
#ifndef OTELPROF_FILESTORE_FILE_CACHE_H
#define OTELPROF_FILESTORE_FILE_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "elf/dwarf_lines.h"
#include "elf/elf_file.h"
#include "files/file_table.h"
#include "filestore/debuginfod.h"
#include "filestore/file_loader.h"
#include "process/proc_maps.h"
#include "symbolize/symbol_names.h"
#include "util/mem_budget.h"

struct elf_file {
	struct file *file; /* the file (path, identity, last use) */
	int load_err;	   /* 0, or why symbols are missing */
	int debug_source;  /* enum debug_info_source: where more came from */
	struct elf_symbols sym;
	struct symbol_names names; /* demangled, filled as frames need them */
	struct dwarf_lines *dwarf; /* source lines, NULL if no DWARF or
				      not needed yet */
	bool dwarf_tried; /* its DWARF opened once (file_cache_load_lines) */
	struct mem_account acct;  /* what this file's data costs */
	bool evicted;		  /* symbols dropped for the global budget */
	uint64_t reload_after_ns; /* evicted: not read again before this
				     (CLOCK_MONOTONIC) */
	uint32_t reloads;	  /* times read again after an eviction */
	char htlhash[33];	  /* "" if unknown */
	bool loading; /* read on the loader thread: no symbols yet */
	/* Its debug file asked of debuginfod servers (debuginfod.h). */
	uint8_t dbgd_state;	/* enum file_dbgd_state */
	uint64_t dbgd_retry_ns; /* idle: not asked before (CLOCK_MONOTONIC) */
};

enum file_dbgd_state {
	FILE_DBGD_IDLE = 0,
	FILE_DBGD_PENDING, /* a lookup runs: its names may still come */
	FILE_DBGD_DONE,	   /* its symbols came from a server */
};

/* What the file cache counts (for otelprof_stats). */
struct file_cache_counters {
	uint64_t loaded, malformed;
	uint64_t memory;	    /* bytes of symbols held */
	uint64_t evictions;	    /* files whose symbols were dropped (or idle
				       files freed) to make room */
	uint64_t over_budget;	    /* files whose own data exceeded the
				       per-file budget: symbols dropped */
	uint64_t reloads;	    /* evicted files read again for a sample */
	uint64_t lines_image_reads; /* DWARF images read again after a
				       trim, for a unit not read yet */
	uint64_t loads_retried;	    /* its queue was full: tried again later */
};

struct file_cache {
	struct file_table *table; /* the files (not owned) */
	struct elf_file **v;	  /* by file slot; NULL: none */
	uint32_t nv;
	struct mem_budget budget; /* symbols, strings, unwind scratch */
	/* Big files are read off the drain thread (file_loader.h): loads
	 * finished and not yet taken, and the one taken last (its fd is
	 * the caller's until the next file_cache_take_load). */
	struct file_loader loader;
	struct work_item *done;
	struct file_load_job *taken;
	/* Debug files from debuginfod servers (off unless configured). */
	struct debuginfod dbgd;
	struct file_cache_counters counters;
};

void file_cache_init(struct file_cache *c, struct file_table *table);
/* Budget for data derived from files (0: default). Before any load. */
void file_cache_set_budget(struct file_cache *c, uint64_t total,
			   uint64_t per_file);
/* The symbols of f (NULL: none kept). */
static inline struct elf_file *file_cache_of(const struct file_cache *c,
					     const struct file *f)
{
	return f && f->slot < c->nv ? c->v[f->slot] : NULL;
}
/* A sample used f now: it is evicted after files used less recently. */
static inline void file_cache_touch(struct file *f, uint64_t now_ns)
{
	f->last_used_ns = now_ns;
}
void file_cache_free(struct file_cache *c);
/* Bytes charged to the budget now. */
static inline uint64_t file_cache_budget_used(struct file_cache *c)
{
	return mem_budget_used(&c->budget);
}
/*
 * The budget is full: the next load evicts files, least recently used
 * first (an idle one whole: its entry goes and the file table drops it;
 * a mapped one loses its symbols). Before a load, the agent stamps the
 * files its recently active processes map as used: a hot stack is
 * symbolized once per window, from the stack cache after that, so
 * per-lookup stamps alone would make it look cold.
 */
bool file_cache_full(struct file_cache *c);
/*
 * The per-file steps (called by the agent as it adds files to the file
 * table, and as it takes the gone ones): file_added reads the symbols of
 * new file f (a->fd, or a->mem for the vDSO; debug files looked up inside
 * a->root_fd first, or its MiniDebugInfo). 0: read; 1: read on the loader
 * thread (file_cache_take_load hands it back); -EAGAIN: the loader's queue
 * is full, -ENOMEM: no entry (the file is discarded again). A malformed
 * file still yields an entry (with load_err set), so it is read once, not
 * at every sample. file_freed drops what is kept of f (nothing: no-op).
 */
int file_cache_file_added(struct file_cache *c, struct file *f,
			  const struct file_added *a);
void file_cache_file_freed(struct file_cache *c, struct file *f);
/*
 * With the loader started, a file of FILE_LOADER_MIN_BYTES or more is read
 * on its thread (see file_cache_file_added).
 * notify_fd (not owned) is written to when a load finished. 0 or -errno.
 */
int file_cache_start_loader(struct file_cache *c, int notify_fd);
/* The next load the loader finished, taken into its entry: its file, and
 * in *fd the file it was read from (the caller's until the next call).
 * NULL: none left. */
struct file *file_cache_take_load(struct file_cache *c, int *fd);
/* Merge the debug files the debuginfod lookups brought. */
void file_cache_finish_lookups(struct file_cache *c);
/* Servers to ask for debug files no local lookup found (as in
 * $DEBUGINFOD_URLS; NULL or "": off). Before file_cache_start_loader.
 * 0, or -EINVAL with a reason in why. */
int file_cache_set_debuginfod(struct file_cache *c, const char *urls,
			      const char **why);
/* f lacks symbols that a debuginfod server may have: ask for them (on
 * the lookup threads; the result is merged by file_cache_finish_lookups).
 * Cheap when there is nothing to do; drain thread only. */
void file_cache_debuginfod_check(struct file_cache *c, struct elf_file *f);
/* Would file_cache_debuginfod_check ask for f now? */
bool file_cache_debuginfod_due(const struct file_cache *c,
			       const struct elf_file *f);
/* Loads queued, running or not yet taken. */
bool file_cache_loads_busy(struct file_cache *c);
/* Stop the loader; unfinished loads and those not taken leave their
 * entries without symbols. */
void file_cache_stop_loader(struct file_cache *c);
/*
 * An evicted file a sample needs again: may it be read again now? The
 * first time a second after its eviction; each later eviction of the same
 * file waits twice as long (up to a minute), so a working set larger than
 * the budget costs a bounded number of reloads instead of one per sample.
 */
bool file_cache_reload_due(const struct elf_file *f);
/* Read the symbols (and debug symbols, DWARF) of evicted f again from fd,
 * the same file (its identity is checked), making room as a new load
 * would. 0, or a negative errno (it stays evicted). */
int file_cache_reload(struct file_cache *c, struct elf_file *f, int fd,
		      const char *path, int root_fd);
/* Source lines are read when a frame of the file first needs one, not at
 * load: DWARF holds the whole file in memory and a Go daemon's line table
 * is tens of MB, and most files mapped on a host are never sampled. A Go
 * function's lines come from Go's own table (a third of the file or less)
 * where the file has one, DWARF serving the rest (go: the frame is a Go
 * function's). Due: f has such lines not read yet. file_cache_load_lines
 * reads them from fd, the same file (its identity is checked): 0 or a
 * negative errno (tried once: its frames stay without lines). */
bool file_cache_go_lines_used(const struct elf_file *f, bool go);
bool file_cache_lines_due(const struct elf_file *f, bool go);
int file_cache_load_lines(struct file_cache *c, struct elf_file *f, int fd,
			  bool go);
/* Source lines (DWARF, Go line tables) of files no sample used for idle_ns
 * by now_ns (boot clock) are freed: a frame that needs them again reads
 * them again. What a debuginfod server sent stays. Of files in use, the
 * DWARF image may go (dwarf_lines_trim). */
void file_cache_drop_idle_lines(struct file_cache *c, uint64_t now_ns,
				uint64_t idle_ns);
/* The ELF vaddr that mapping m of f (its symbols: ef) starts at, and the
 * bias (load address - vaddr). false: not a mapping of its code. */
bool file_mapping_vaddr(const struct proc_mapping *m, const struct elf_file *ef,
			uint64_t *vaddr);
bool file_mapping_bias(const struct proc_mapping *m, const struct elf_file *ef,
		       uint64_t *bias);

#endif
