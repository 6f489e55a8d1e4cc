// SPDX-License-Identifier: Apache-2.0
#include "files/file_table.h"
#include "util/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void file_table_init(struct file_table *t)
{
	memset(t, 0, sizeof(*t));
	idxmap_init(&t->index);
}

static uint64_t id_hash(const struct file_id *id)
{
	return hash_bytes(id, sizeof(*id), 0x66696c65);
}

struct id_eq_ctx {
	const struct file_table *t;
	const struct file_id *id;
};

static bool id_eq(const void *ctx, uint32_t slot)
{
	const struct id_eq_ctx *e = ctx;
	const struct file *f = e->t->files[slot];

	return f && !memcmp(&f->id, e->id, sizeof(*e->id));
}

int file_id_of_fd(int fd, struct file_id *id)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	memset(id, 0, sizeof(*id));
	id->dev = (uint64_t)st.st_dev;
	id->ino = (uint64_t)st.st_ino;
	id->size = (uint64_t)st.st_size;
	id->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
		       (uint64_t)st.st_mtim.tv_nsec;
	return 0;
}

struct file *file_table_find(struct file_table *t, const struct file_id *id)
{
	struct id_eq_ctx ctx = {t, id};
	uint32_t slot;

	if (!idxmap_find(&t->index, id_hash(id), id_eq, &ctx, &slot))
		return NULL;
	file_ref(t->files[slot]);
	return t->files[slot];
}

static void destroy(struct file_table *t, struct file *f)
{
	if (!f->gone)
		idxmap_remove(&t->index, id_hash(&f->id), f->slot);
	t->files[f->slot] = NULL;
	free(f->path);
	free(f);
}

/* Out of the index (a lookup adds the same file anew), its slot kept
 * until the stages forgot it: their tables are by slot. FIFO. */
static void leave(struct file_table *t, struct file *f)
{
	struct file **pp = &t->gone;

	if (f->gone)
		return;
	idxmap_remove(&t->index, id_hash(&f->id), f->slot);
	f->gone = true;
	f->next_gone = NULL;
	while (*pp)
		pp = &(*pp)->next_gone;
	*pp = f;
}

struct file *file_table_take_gone(struct file_table *t)
{
	struct file *f = t->gone;

	if (f) {
		t->gone = f->next_gone;
		f->next_gone = NULL;
	}
	return f;
}

void file_table_release(struct file_table *t, struct file *f)
{
	destroy(t, f);
}

/* A new entry in a free slot. */
static struct file *add(struct file_table *t, const struct file_id *id,
			const char *path, uint32_t owner_pid,
			uint64_t owner_serial, bool *added, int *err)
{
	struct file *f = calloc(1, sizeof(*f));
	const char *slash;
	uint32_t slot;

	if (!f || !(f->path = strdup(path && *path ? path : "[unknown]"))) {
		free(f);
		*err = -ENOMEM;
		return NULL;
	}
	slash = strrchr(f->path, '/');
	f->basename = slash ? slash + 1 : f->path;
	f->id = *id;
	f->refcnt = 1;
	f->last_used_ns = boot_ns();
	f->owner_pid = owner_pid;
	f->owner_serial = owner_serial;
	for (slot = 0; slot < t->nslots; slot++)
		if (!t->files[slot])
			break;
	if (slot == t->nslots && t->nslots == t->cap) {
		uint32_t ncap = t->cap ? t->cap * 2 : 64;
		struct file **nv = realloc(t->files, ncap * sizeof(*nv));

		if (!nv)
			goto nomem;
		t->files = nv;
		t->cap = ncap;
	}
	if (idxmap_insert(&t->index, id_hash(id), slot))
		goto nomem;
	if (slot == t->nslots)
		t->nslots++;
	t->files[slot] = f;
	f->slot = slot;
	*added = true;
	return f;
nomem:
	free(f->path);
	free(f);
	*err = -ENOMEM;
	return NULL;
}

struct file *file_table_get_fd(struct file_table *t, int fd, const char *path,
			       uint32_t owner_pid, uint64_t owner_serial,
			       bool *added, int *err)
{
	struct file_id id;
	struct file *f;
	int e = file_id_of_fd(fd, &id);

	*added = false;
	if (e) {
		*err = e;
		return NULL;
	}
	f = file_table_find(t, &id);
	return f ? f : add(t, &id, path, owner_pid, owner_serial, added, err);
}

struct file *file_table_get_mem(struct file_table *t, const struct file_id *id,
				const char *path, bool *added, int *err)
{
	struct file *f = file_table_find(t, id);

	*added = false;
	return f ? f : add(t, id, path, 0, 0, added, err);
}

void file_table_discard(struct file_table *t, struct file *f)
{
	destroy(t, f);
}

void file_table_put(struct file_table *t, struct file *f)
{
	(void)t;
	if (!f || !f->refcnt || --f->refcnt)
		return;
	f->idle_since_ns = mono_ns();
}

void file_table_drop(struct file_table *t, struct file *f)
{
	if (!f->refcnt)
		leave(t, f);
}

void file_table_sweep(struct file_table *t, uint64_t max_idle_ns)
{
	uint64_t now = mono_ns();

	for (uint32_t i = 0; i < t->nslots; i++) {
		struct file *f = t->files[i];

		if (f && !f->gone && !f->refcnt &&
		    now - f->idle_since_ns >= max_idle_ns)
			leave(t, f);
	}
}

void file_table_clear_changed(struct file_table *t)
{
	for (uint32_t i = 0; i < t->nslots; i++)
		if (t->files[i])
			t->files[i]->changed = false;
}

void file_table_free(struct file_table *t)
{
	for (uint32_t i = 0; i < t->nslots; i++)
		if (t->files[i])
			destroy(t, t->files[i]);
	free(t->files);
	idxmap_free(&t->index);
	memset(t, 0, sizeof(*t));
}
