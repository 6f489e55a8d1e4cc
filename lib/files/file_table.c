// SPDX-License-Identifier: Apache-2.0
#include "files/file_table.h"
#include "util/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void file_table_init(struct file_table *t)
{
	memset(t, 0, sizeof(*t));
	idxmap_init(&t->index);
	idxmap_init(&t->by_content);
}

void file_table_share_by_content(struct file_table *t, file_reopen_fn reopen,
				 void *ctx)
{
	t->reopen = reopen;
	t->reopen_ctx = ctx;
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

	if (!f)
		return false;
	if (!memcmp(&f->id, e->id, sizeof(*e->id)))
		return true;
	for (uint32_t i = 0; i < f->naliases; i++)
		if (!memcmp(&f->aliases[i], e->id, sizeof(*e->id)))
			return true;
	return false;
}

static uint64_t key_hash(const struct file_content_key *k)
{
	return hash_bytes(k, sizeof(*k), 0x636f6e74);
}

struct key_eq_ctx {
	const struct file_table *t;
	const struct file_content_key *key;
};

static bool key_eq(const void *ctx, uint32_t slot)
{
	const struct key_eq_ctx *e = ctx;
	const struct file *f = e->t->files[slot];

	return f && f->has_key && !f->gone &&
	       !memcmp(&f->key, e->key, sizeof(*e->key));
}

#define KEY_END_BYTES 4096u

/* fd's content key: size, and a hash of its first and last 4 KiB (the ELF
 * header and build id note at the start, section headers at the end). 0
 * or -errno. */
static int content_key_of_fd(int fd, uint64_t size, struct file_content_key *k)
{
	unsigned char buf[2 * KEY_END_BYTES];
	size_t head = size < KEY_END_BYTES ? (size_t)size : KEY_END_BYTES;
	size_t tail = size - head < KEY_END_BYTES ? (size_t)(size - head)
						  : KEY_END_BYTES;

	if (pread(fd, buf, head, 0) != (ssize_t)head ||
	    (tail && pread(fd, buf + head, tail, (off_t)(size - tail)) !=
			     (ssize_t)tail))
		return -EIO;
	memset(k, 0, sizeof(*k));
	k->size = size;
	k->ends_hash = hash_bytes(buf, head + tail, size);
	return 0;
}

#define COMPARE_CHUNK (64u << 10)

/* Do fds a and b, both of identity size, hold the same bytes? Read whole
 * (bounded by FILE_SHARE_MAX_BYTES at the caller); a file that changes
 * while it is read is not the same. */
static bool same_bytes(int a, int b, const struct file_id *ida,
		       const struct file_id *idb)
{
	unsigned char *x = malloc(2 * (size_t)COMPARE_CHUNK), *y;
	struct file_id after_a, after_b;
	bool same = x != NULL;

	y = x + COMPARE_CHUNK;
	for (uint64_t off = 0; same && off < ida->size; off += COMPARE_CHUNK) {
		size_t n = ida->size - off < COMPARE_CHUNK
				   ? (size_t)(ida->size - off)
				   : COMPARE_CHUNK;

		same = pread(a, x, n, (off_t)off) == (ssize_t)n &&
		       pread(b, y, n, (off_t)off) == (ssize_t)n &&
		       !memcmp(x, y, n);
	}
	free(x);
	return same && !file_id_of_fd(a, &after_a) &&
	       !file_id_of_fd(b, &after_b) &&
	       !memcmp(&after_a, ida, sizeof(*ida)) &&
	       !memcmp(&after_b, idb, sizeof(*idb));
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

/* Out of both indexes: every identity and the content key. */
static void unindex(struct file_table *t, struct file *f)
{
	idxmap_remove(&t->index, id_hash(&f->id), f->slot);
	for (uint32_t i = 0; i < f->naliases; i++)
		idxmap_remove(&t->index, id_hash(&f->aliases[i]), f->slot);
	if (f->has_key)
		idxmap_remove(&t->by_content, key_hash(&f->key), f->slot);
}

static void destroy(struct file_table *t, struct file *f)
{
	if (!f->gone)
		unindex(t, f);
	t->files[f->slot] = NULL;
	free(f->aliases);
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
	unindex(t, f);
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
			const struct file_content_key *key, const char *path,
			uint32_t owner_pid, uint64_t owner_serial, bool *added,
			int *err)
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
	/* Without its key in the index a file is only not shared. */
	if (key && !idxmap_insert(&t->by_content, key_hash(key), slot)) {
		f->key = *key;
		f->has_key = true;
	}
	*added = true;
	return f;
nomem:
	free(f->path);
	free(f);
	*err = -ENOMEM;
	return NULL;
}

/* The known file with key whose bytes are fd's (identity id), referenced,
 * with id added as its alias; or NULL. */
static struct file *find_same_bytes(struct file_table *t, int fd,
				    const struct file_id *id,
				    const struct file_content_key *key)
{
	struct key_eq_ctx ctx = {t, key};
	struct file_id *nv;
	struct file *c;
	uint32_t slot;
	bool same;
	int cfd;

	if (!idxmap_find(&t->by_content, key_hash(key), key_eq, &ctx, &slot))
		return NULL;
	c = t->files[slot];
	if (c->naliases >= FILE_MAX_ALIASES)
		return NULL;
	cfd = t->reopen(t->reopen_ctx, c);
	if (cfd < 0) {
		t->counters.share_unverified++;
		return NULL;
	}
	same = same_bytes(fd, cfd, id, &c->id);
	close(cfd);
	if (!same) {
		t->counters.share_mismatch++;
		return NULL;
	}
	nv = realloc(c->aliases, (c->naliases + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	c->aliases = nv;
	if (idxmap_insert(&t->index, id_hash(id), c->slot))
		return NULL;
	c->aliases[c->naliases++] = *id;
	t->counters.shared++;
	file_ref(c);
	return c;
}

struct file *file_table_get_fd(struct file_table *t, int fd, const char *path,
			       uint32_t owner_pid, uint64_t owner_serial,
			       bool *added, int *err)
{
	struct file_content_key key, *k = NULL;
	struct file_id id;
	struct file *f;
	int e = file_id_of_fd(fd, &id);

	*added = false;
	if (e) {
		*err = e;
		return NULL;
	}
	f = file_table_find(t, &id);
	if (f)
		return f;
	if (t->reopen && id.size && id.size <= FILE_SHARE_MAX_BYTES &&
	    !content_key_of_fd(fd, id.size, &key)) {
		f = find_same_bytes(t, fd, &id, &key);
		if (f)
			return f;
		k = &key;
	}
	return add(t, &id, k, path, owner_pid, owner_serial, added, err);
}

struct file *file_table_get_mem(struct file_table *t, const struct file_id *id,
				const char *path, bool *added, int *err)
{
	struct file *f = file_table_find(t, id);

	*added = false;
	return f ? f : add(t, id, NULL, path, 0, 0, added, err);
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
	idxmap_free(&t->by_content);
	memset(t, 0, sizeof(*t));
}
