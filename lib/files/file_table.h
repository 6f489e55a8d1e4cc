/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The files the profiler knows, whatever a stage keeps of them: identity
 * (device, inode, size, mtime), a slot, the references of the mappings
 * that use them, the path they were first seen at. Shared by every
 * process that maps the same file, and (file_table_share_by_content) by
 * every identity with the same bytes: a copy, the same library in another
 * container's root; an unreferenced file lingers until
 * file_table_sweep (an exec storm of one binary must not read it again
 * each time).
 *
 * What the stages keep of a file (symbols, unwind tables) is in their own
 * tables, by slot. The table calls no one: a lookup says whether it added
 * the file (its caller, the agent, has the stages read it:
 * lib/agent/file_sync.c), and a file that leaves (swept, or dropped for
 * the budget) waits, out of the index with its slot kept, until the agent
 * has had every stage forget it. Nothing here knows a stage.
 */
#ifndef OTELPROF_FILES_FILE_TABLE_H
#define OTELPROF_FILES_FILE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/idxmap.h"

struct file_id {
	uint64_t dev, ino, size, mtime_ns;
};

/* The vDSO (ours: same kernel, same image). */
#define FILE_ID_VDSO ((struct file_id){.dev = UINT64_MAX, .ino = UINT64_MAX})

/* A file's content in brief: size and a hash of its first and last
 * 4 KiB. Equal keys only name a candidate; the bytes are compared. */
struct file_content_key {
	uint64_t size, ends_hash;
};

struct file {
	struct file_id id;
	/* Other identities with the same bytes (a copy, another container's
	 * layer): found in the index like id, sharing everything kept. */
	struct file_id *aliases;
	uint32_t naliases;
	bool has_key; /* key set and indexed (content sharing applies) */
	struct file_content_key key;
	uint32_t slot;
	uint32_t refcnt;
	char *path;		/* as first seen in /proc/PID/maps */
	const char *basename;	/* into path */
	uint64_t idle_since_ns; /* refcnt 0 since (CLOCK_MONOTONIC) */
	uint64_t last_used_ns;	/* last sample, or active process mapping
				   it (CLOCK_BOOTTIME): eviction order */
	/* The process it was first read for (charged for its table). */
	uint32_t owner_pid;
	uint64_t owner_serial;
	bool changed; /* read since file_table_clear_changed */
	bool gone;    /* left the table, waiting to be forgotten */
	struct file *next_gone;
};

/* What the readers of a new file get, valid until the report returns. */
struct file_added {
	int fd;		 /* the file, its identity checked; -1: mem */
	const void *mem; /* the vDSO image (NULL: could not be read) */
	size_t len;
	int root_fd; /* the process's root (O_PATH), -1: none */
};

/* Opens f again for reading, as a process that maps it sees it, with
 * f's identity checked (the caller's: the file table knows no process).
 * An fd, or a negative errno. */
typedef int (*file_reopen_fn)(void *ctx, const struct file *f);

/* Files bigger than this are not compared for sharing (the comparison
 * reads both on the caller's thread: ~0.5 ms per MiB). */
#define FILE_SHARE_MAX_BYTES (256ull << 20)

/* Aliases one file keeps at most: an alias lives as long as its file
 * (libc: the whole run), so a process writing fresh copies of it without
 * end would grow it without bound; past this, a copy is a file of its own
 * (swept when unused, like any file). */
#define FILE_MAX_ALIASES 64u

struct file_table_counters {
	uint64_t shared; /* identities found to be a known file's bytes */
	uint64_t share_mismatch;   /* candidates whose bytes differed */
	uint64_t share_unverified; /* candidates that could not be reread */
};

struct file_table {
	struct file **files; /* by slot; NULL = free */
	uint32_t nslots, cap;
	struct idxmap index;	  /* every identity (id, aliases) -> slot */
	struct idxmap by_content; /* content key -> slot */
	file_reopen_fn reopen;	  /* NULL: no sharing by content */
	void *reopen_ctx;
	struct file_table_counters counters;
	struct file *gone; /* left, not yet released (file_table_take_gone) */
};

void file_table_init(struct file_table *t);
/* Share files by content from now on: a file new by identity whose bytes
 * equal a known file's (found by its content key, then compared with the
 * known file reopened through reopen) becomes that file's alias. */
void file_table_share_by_content(struct file_table *t, file_reopen_fn reopen,
				 void *ctx);
/* Frees every file, gone or not (no stage is told). */
void file_table_free(struct file_table *t);
/* fd's identity. 0 or -errno. */
int file_id_of_fd(int fd, struct file_id *id);
/* The file with identity id, referenced, or NULL. */
struct file *file_table_find(struct file_table *t, const struct file_id *id);
/*
 * Find or add the file open as fd (mapped at path by process owner_pid,
 * owner_serial). *added: it is new, and the caller has it read by every
 * stage now (or, if they cannot, file_table_discard). Returns a
 * referenced entry (release with file_table_put) or NULL with *err set.
 */
struct file *file_table_get_fd(struct file_table *t, int fd, const char *path,
			       uint32_t owner_pid, uint64_t owner_serial,
			       bool *added, int *err);
/* Same for an image in memory (the vDSO): id is given. */
struct file *file_table_get_mem(struct file_table *t, const struct file_id *id,
				const char *path, bool *added, int *err);
/* A file just added that its readers refused (they keep nothing of it):
 * freed now. */
void file_table_discard(struct file_table *t, struct file *f);
static inline void file_ref(struct file *f)
{
	f->refcnt++;
	f->idle_since_ns = 0;
}
/* Drop a reference; an unreferenced file lingers until a sweep. */
void file_table_put(struct file_table *t, struct file *f);
/* Unreferenced f leaves now (a stage needs its room): gone. */
void file_table_drop(struct file_table *t, struct file *f);
/* Files unreferenced for longer than max_idle_ns leave: gone. */
void file_table_sweep(struct file_table *t, uint64_t max_idle_ns);
/* The files gone, one at a time, oldest first: every stage forgets it,
 * then file_table_release frees it and its slot. NULL: none left. */
struct file *file_table_take_gone(struct file_table *t);
void file_table_release(struct file_table *t, struct file *f);
/* f was read since (a stage finished with it): see file_table_clear. */
static inline void file_mark_changed(struct file *f)
{
	f->changed = true;
}
void file_table_clear_changed(struct file_table *t);
static inline struct file *file_table_at(const struct file_table *t,
					 uint32_t slot)
{
	return slot < t->nslots ? t->files[slot] : NULL;
}

#endif
