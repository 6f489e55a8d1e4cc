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

void file_table_set_listener(struct file_table *t,
			     const struct file_table_listener *l)
{
	if (l)
		t->listener = *l;
	else
		memset(&t->listener, 0, sizeof(t->listener));
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
	if (t->listener.on_free)
		t->listener.on_free(t->listener.ctx, f);
	idxmap_remove(&t->index, id_hash(&f->id), f->slot);
	t->files[f->slot] = NULL;
	free(f->path);
	free(f);
}

/* A new entry in a free slot, reported to the listener. */
static struct file *add(struct file_table *t, const struct file_id *id,
			const char *path, const struct file_added *a,
			uint32_t owner_pid, uint64_t owner_serial, int *err)
{
	struct file *f = calloc(1, sizeof(*f));
	const char *slash;
	uint32_t slot;
	int e;

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
	e = t->listener.on_added ? t->listener.on_added(t->listener.ctx, f, a)
				 : 0;
	if (e) {
		destroy(t, f);
		*err = e;
		return NULL;
	}
	return f;
nomem:
	free(f->path);
	free(f);
	*err = -ENOMEM;
	return NULL;
}

struct file *file_table_get_fd(struct file_table *t, int fd, const char *path,
			       int root_fd, uint32_t owner_pid,
			       uint64_t owner_serial, int *err)
{
	struct file_added a = {fd, NULL, 0, root_fd};
	struct file_id id;
	struct file *f;
	int e = file_id_of_fd(fd, &id);

	if (e) {
		*err = e;
		return NULL;
	}
	f = file_table_find(t, &id);
	return f ? f : add(t, &id, path, &a, owner_pid, owner_serial, err);
}

struct file *file_table_get_mem(struct file_table *t, const struct file_id *id,
				const char *path, const void *mem, size_t len,
				int *err)
{
	struct file_added a = {-1, mem, len, -1};
	struct file *f = file_table_find(t, id);

	return f ? f : add(t, id, path, &a, 0, 0, err);
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
		destroy(t, f);
}

void file_table_sweep(struct file_table *t, uint64_t max_idle_ns)
{
	uint64_t now = mono_ns();

	for (uint32_t i = 0; i < t->nslots; i++) {
		struct file *f = t->files[i];

		if (f && !f->refcnt && now - f->idle_since_ns >= max_idle_ns)
			destroy(t, f);
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
