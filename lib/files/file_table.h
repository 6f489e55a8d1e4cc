/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The files the profiler knows, whatever a stage keeps of them: identity
 * (device, inode, size, mtime), a slot, the references of the mappings
 * that use them, the path they were first seen at. Shared by every
 * process that maps the same file; an unreferenced file lingers until
 * file_table_sweep (an exec storm of one binary must not read it again
 * each time).
 *
 * What the stages keep of a file (symbols, unwind tables) is in their own
 * tables, by slot. The table reports what changed (a file added, with
 * what its readers need; a file about to be freed) to one listener: the
 * agent, which calls the stages' per-file steps in order
 * (lib/agent/file_sync.c). Nothing here knows a stage.
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

struct file {
	struct file_id id;
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
};

/* What the readers of a new file get, valid until the report returns. */
struct file_added {
	int fd;		 /* the file, its identity checked; -1: mem */
	const void *mem; /* the vDSO image (NULL: could not be read) */
	size_t len;
	int root_fd; /* the process's root (O_PATH), -1: none */
};

struct file_table_listener {
	void *ctx;
	/* f is new: read it. 0, or a negative errno: f is freed again (with
	 * on_free) and the lookup fails with it (-EAGAIN: try later). */
	int (*on_added)(void *ctx, struct file *f, const struct file_added *a);
	/* f is about to be freed (its slot taken by another file next). */
	void (*on_free)(void *ctx, struct file *f);
};

struct file_table {
	struct file **files; /* by slot; NULL = free */
	uint32_t nslots, cap;
	struct idxmap index;
	struct file_table_listener listener; /* on_added NULL: none */
};

void file_table_init(struct file_table *t);
/* Frees every file (on_free told, if a listener is still set). */
void file_table_free(struct file_table *t);
void file_table_set_listener(struct file_table *t,
			     const struct file_table_listener *l);
/* fd's identity. 0 or -errno. */
int file_id_of_fd(int fd, struct file_id *id);
/* The file with identity id, referenced, or NULL. */
struct file *file_table_find(struct file_table *t, const struct file_id *id);
/*
 * Find or add the file open as fd (mapped at path by process owner_pid,
 * owner_serial; root_fd: its root). A new one is reported (on_added) before
 * this returns. Returns a referenced entry (release with file_table_put)
 * or NULL with *err set.
 */
struct file *file_table_get_fd(struct file_table *t, int fd, const char *path,
			       int root_fd, uint32_t owner_pid,
			       uint64_t owner_serial, int *err);
/* Same for an image in memory (the vDSO): id is given. */
struct file *file_table_get_mem(struct file_table *t, const struct file_id *id,
				const char *path, const void *mem, size_t len,
				int *err);
static inline void file_ref(struct file *f)
{
	f->refcnt++;
	f->idle_since_ns = 0;
}
/* Drop a reference; an unreferenced file lingers until a sweep. */
void file_table_put(struct file_table *t, struct file *f);
/* Free unreferenced f now (a stage needs its room). */
void file_table_drop(struct file_table *t, struct file *f);
/* Free files unreferenced for longer than max_idle_ns. */
void file_table_sweep(struct file_table *t, uint64_t max_idle_ns);
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
