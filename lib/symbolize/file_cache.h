/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ELF files known to the profiler, keyed by file identity (device, inode,
 * size, mtime) and shared by every process that maps the same file. An entry
 * is freed when the last mapping referring to it goes away.
 */
#ifndef OTELPROF_SYMBOLIZE_FILE_CACHE_H
#define OTELPROF_SYMBOLIZE_FILE_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "symbolize/debuginfod.h"
#include "symbolize/dwarf_lines.h"
#include "symbolize/elf_file.h"
#include "symbolize/file_loader.h"
#include "symbolize/symbol_names.h"
#include "util/idxmap.h"
#include "util/mem_budget.h"

struct file_id {
	uint64_t dev, ino, size, mtime_ns;
};

struct elf_file {
	struct file_id id;
	uint32_t slot;
	uint32_t refcnt;
	int load_err;	  /* 0, or why symbols are missing */
	int debug_source; /* enum debug_info_source: where more came from */
	struct elf_symbols sym;
	struct symbol_names names; /* demangled, filled as frames need them */
	struct dwarf_lines *dwarf; /* source lines, NULL if no DWARF */
	struct mem_account acct;   /* what this file's data costs */
	uint64_t last_used_ns;	   /* last sample that looked it up
				      (CLOCK_BOOTTIME): eviction order */
	bool evicted;		   /* symbols dropped for the global budget */
	uint64_t reload_after_ns;  /* evicted: not read again before this
				      (CLOCK_MONOTONIC) */
	uint32_t reloads;	   /* times read again after an eviction */
	char htlhash[33];	   /* "" if unknown */
	char *path;		   /* path as first seen in /proc/PID/maps */
	const char *basename;	   /* into path */
	uint64_t idle_since_ns;	   /* refcnt 0 since (CLOCK_MONOTONIC); kept a
				      while for the next exec of the same file */
	bool loading;	  /* read on the loader thread: no symbols yet */
	bool just_loaded; /* finished by the last file_cache_finish_loads */
	/* The process it was read for (charged for its table), set by the
	 * process table while loading. */
	uint32_t owner_pid;
	uint64_t owner_serial;
	/* Its debug file asked of debuginfod servers (debuginfod.h). */
	uint8_t dbgd_state;	/* enum file_dbgd_state */
	uint64_t dbgd_retry_ns; /* idle: not asked before (CLOCK_MONOTONIC) */
};

enum file_dbgd_state {
	FILE_DBGD_IDLE = 0,
	FILE_DBGD_PENDING, /* a lookup runs: its names may still come */
	FILE_DBGD_DONE,	   /* its symbols came from a server */
};

/*
 * What the file cache reports, to its one listener: the agent, which calls
 * the next stages' per-file steps in order (lib/agent/file_sync.c). Each
 * report is made when it happens, inside the call that caused it.
 */
struct file_cache_listener {
	void *ctx;
	/* f's symbols were read (inline, or taken from the loader thread):
	 * fd is the file (mem/len for the vDSO), valid until the call
	 * returns. fd < 0 and mem NULL: it was not read (loader stopped). */
	void (*on_ready)(void *ctx, struct elf_file *f, int fd, const void *mem,
			 size_t len);
	/* f is read on the loader thread: on_ready follows when done. */
	void (*on_loading)(void *ctx, struct elf_file *f);
	/* f is about to be freed (its slot taken by another file next). */
	void (*on_free)(void *ctx, struct elf_file *f);
	/* The budget is full: files are evicted, least recently used first,
	 * right after this returns. The listener stamps last_used_ns of the
	 * files its recently active processes map (a hot stack is
	 * symbolized once per window, from the stack cache after that, so
	 * per-lookup stamps alone would make it look cold). */
	void (*before_evict)(void *ctx);
};

/* What the file cache counts (for otelprof_stats). */
struct file_cache_counters {
	uint64_t loaded, malformed;
	uint64_t memory;	/* bytes of symbols held */
	uint64_t evictions;	/* files whose symbols were dropped (or idle
				   files freed) to make room */
	uint64_t over_budget;	/* files whose own data exceeded the
				   per-file budget: symbols dropped */
	uint64_t reloads;	/* evicted files read again for a sample */
	uint64_t loads_async;	/* files read on the loader thread */
	uint64_t loads_retried; /* its queue was full: tried again later */
};

struct file_cache {
	struct elf_file **files; /* by slot; NULL = free */
	uint32_t nslots, cap;
	struct idxmap index;
	struct mem_budget budget; /* symbols, strings, unwind scratch */
	struct file_cache_listener listener; /* on_ready NULL: none */
	/* Big files are read off the drain thread (file_loader.h). */
	struct file_loader loader;
	/* Debug files from debuginfod servers (off unless configured). */
	struct debuginfod dbgd;
	struct file_cache_counters counters;
};

void file_cache_init(struct file_cache *c);
/* Who is told of files read and freed (NULL: nobody, before tearing the
 * stages down). */
void file_cache_set_listener(struct file_cache *c,
			     const struct file_cache_listener *l);
/* Budget for data derived from files (0: default). Before any load. */
void file_cache_set_budget(struct file_cache *c, uint64_t total,
			   uint64_t per_file);
/* A sample used f now: it is evicted after files used less recently. */
static inline void file_cache_touch(struct elf_file *f, uint64_t now_ns)
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
 * Find or load the file open as fd (mapped at `path` by some process).
 * Returns a referenced entry (release with file_cache_put) or NULL with
 * *err set. A malformed file still yields an entry (with load_err set), so
 * it is read once, not at every sample.
 */
struct elf_file *file_cache_get_fd(struct file_cache *c, int fd,
				   const char *path, int *err);
/* Same; a file loaded now without .symtab gets the symbols of its debug
 * file, looked up inside root_fd (the process's root, O_PATH) first, or
 * of its MiniDebugInfo (debug_info.c). */
struct elf_file *file_cache_get_fd_root(struct file_cache *c, int fd,
					const char *path, int root_fd,
					int *err);
/*
 * With the loader started, a file of FILE_LOADER_MIN_BYTES or more is read
 * on its thread: file_cache_get_fd* returns its entry at once with
 * `loading` set (reported to the listener) and no symbols; -EAGAIN (no entry)
 * when the loader's queue is full, to be tried again later.
 * notify_fd (not owned) is written to when a load finished. 0 or -errno.
 */
int file_cache_start_loader(struct file_cache *c, int notify_fd);
/* Take the finished loads into their entries (each reported ready).
 * Each gets just_loaded set until file_cache_clear_just_loaded. Returns
 * how many. */
int file_cache_finish_loads(struct file_cache *c);
void file_cache_clear_just_loaded(struct file_cache *c);
/* Servers to ask for debug files no local lookup found (as in
 * $DEBUGINFOD_URLS; NULL or "": off). Before file_cache_start_loader.
 * 0, or -EINVAL with a reason in why. */
int file_cache_set_debuginfod(struct file_cache *c, const char *urls,
			      const char **why);
/* f lacks symbols that a debuginfod server may have: ask for them (on
 * the lookup threads; the result is merged by file_cache_finish_loads).
 * Cheap when there is nothing to do; drain thread only. */
void file_cache_debuginfod_check(struct file_cache *c, struct elf_file *f);
/* Loads queued, running or not yet taken. */
bool file_cache_loads_busy(struct file_cache *c);
/* Stop the loader; unfinished loads leave their entries without symbols.
 * Before the listener's stages go away. */
void file_cache_stop_loader(struct file_cache *c);
/* The vDSO image, loaded from our own process (same kernel, same vDSO). */
struct elf_file *file_cache_get_vdso(struct file_cache *c);
void file_cache_ref(struct elf_file *f);
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
/* Drop a reference. An unreferenced file lingers (an exec storm of one
 * binary must not rebuild its tables each time) until file_cache_sweep. */
void file_cache_put(struct file_cache *c, struct elf_file *f);
/* Free files unreferenced for longer than max_idle_ns. */
void file_cache_sweep(struct file_cache *c, uint64_t max_idle_ns);

#endif
