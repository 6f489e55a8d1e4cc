// SPDX-License-Identifier: Apache-2.0
#include "symbolize/file_cache.h"
#include "symbolize/debug_info.h"
#include "process/proc_maps.h"
#include "util/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void file_cache_init(struct file_cache *c)
{
	memset(c, 0, sizeof(*c));
	idxmap_init(&c->index);
	mem_budget_init(&c->budget, 0, 0);
	file_loader_init(&c->loader);
	debuginfod_init(&c->dbgd);
}

void file_cache_set_listener(struct file_cache *c,
			     const struct file_cache_listener *l)
{
	if (l)
		c->listener = *l;
	else
		memset(&c->listener, 0, sizeof(c->listener));
}

static void tell_ready(struct file_cache *c, struct elf_file *f, int fd,
		       const void *mem, size_t len)
{
	if (c->listener.on_ready)
		c->listener.on_ready(c->listener.ctx, f, fd, mem, len);
}

void file_cache_set_budget(struct file_cache *c, uint64_t total,
			   uint64_t per_file)
{
	mem_budget_init(&c->budget, total, per_file);
}

static void file_destroy(struct file_cache *c, struct elf_file *f)
{
	if (c && c->listener.on_free)
		c->listener.on_free(c->listener.ctx, f);
	elf_symbols_free(&f->sym);
	symbol_names_free(&f->names);
	dwarf_lines_close(f->dwarf);
	mem_account_release(&f->acct);
	free(f->path);
	free(f);
}

void file_cache_free(struct file_cache *c)
{
	file_cache_stop_loader(c);
	debuginfod_free(&c->dbgd);
	for (uint32_t i = 0; i < c->nslots; i++)
		if (c->files[i])
			file_destroy(c, c->files[i]);
	free(c->files);
	idxmap_free(&c->index);
	memset(c, 0, sizeof(*c));
}

static uint64_t id_hash(const struct file_id *id)
{
	return hash_bytes(id, sizeof(*id), 0x66696c65);
}

struct id_eq_ctx {
	const struct file_cache *c;
	const struct file_id *id;
};

static bool id_eq(const void *ctx, uint32_t slot)
{
	const struct id_eq_ctx *e = ctx;
	const struct elf_file *f = e->c->files[slot];

	return f && !memcmp(&f->id, e->id, sizeof(*e->id));
}

static int add_slot(struct file_cache *c, struct elf_file *f)
{
	uint32_t slot;

	for (slot = 0; slot < c->nslots; slot++)
		if (!c->files[slot])
			break;
	if (slot == c->nslots) {
		if (c->nslots == c->cap) {
			uint32_t ncap = c->cap ? c->cap * 2 : 64;
			struct elf_file **nv =
				realloc(c->files, ncap * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			c->files = nv;
			c->cap = ncap;
		}
		c->nslots++;
	}
	if (idxmap_insert(&c->index, id_hash(&f->id), slot))
		return -ENOMEM;
	c->files[slot] = f;
	f->slot = slot;
	return 0;
}

static struct elf_file *new_file(struct file_cache *c, const struct file_id *id,
				 const char *path)
{
	struct elf_file *f = calloc(1, sizeof(*f));
	const char *slash;

	if (!f)
		return NULL;
	f->id = *id;
	f->refcnt = 1;
	mem_account_init(&f->acct, &c->budget);
	f->last_used_ns = boot_ns();
	symbol_names_init(&f->names);
	f->names.acct = &f->acct;
	f->path = strdup(path && *path ? path : "[unknown]");
	if (!f->path) {
		free(f);
		return NULL;
	}
	slash = strrchr(f->path, '/');
	f->basename = slash ? slash + 1 : f->path;
	return f;
}

static void file_evict(struct file_cache *c, struct elf_file *f);

/* A load's result into its entry. */
static void take_result(struct file_cache *c, struct elf_file *f,
			struct file_load_result *r)
{
	f->load_err = r->load_err;
	f->debug_source = r->debug_source;
	f->sym = r->sym;
	f->dwarf = r->dwarf;
	memcpy(f->htlhash, r->htlhash, sizeof(f->htlhash));
	if (f->load_err || f->sym.skipped_symbols)
		c->counters.malformed++;
	else
		c->counters.loaded++;
	if (f->sym.over_budget)
		c->counters.over_budget++;
	c->counters.memory += elf_symbols_memory(&f->sym);
}

/* The first reload a second after an eviction, doubling up to a minute. */
#define RELOAD_FIRST_NS (1000000000ull)
#define RELOAD_MAX_NS	(64000000000ull)

/*
 * Before a load: free the least recently sampled files until one more
 * file could take its whole per-file budget. An idle file (no process
 * maps it) goes whole; a mapped one keeps its entry, loads and build id
 * and loses its symbols (its frames keep their addresses). O(files) per
 * victim: only runs when the budget is full.
 */
static void make_room(struct file_cache *c)
{
	if (mem_budget_used(&c->budget) + c->budget.file_limit >
		    c->budget.limit &&
	    c->listener.before_evict)
		c->listener.before_evict(c->listener.ctx);
	while (mem_budget_used(&c->budget) + c->budget.file_limit >
	       c->budget.limit) {
		struct elf_file *victim = NULL;

		for (uint32_t i = 0; i < c->nslots; i++) {
			struct elf_file *f = c->files[i];

			/* A file being read is charged as it goes: its
			 * symbols are not in the entry yet. */
			if (!f || f->loading || !atomic_load(&f->acct.bytes) ||
			    (f->evicted && f->refcnt))
				continue;
			if (!victim || f->last_used_ns < victim->last_used_ns)
				victim = f;
		}
		if (!victim)
			return;
		c->counters.evictions++;
		if (!victim->refcnt) {
			file_evict(c, victim);
			continue;
		}
		c->counters.memory -= elf_symbols_memory(&victim->sym);
		elf_symbols_drop(&victim->sym);
		/* Its demangled names are keyed by symbol index. */
		symbol_names_free(&victim->names);
		symbol_names_init(&victim->names);
		victim->names.acct = &victim->acct;
		/* Source lines go too: read again with the symbols. */
		dwarf_lines_close(victim->dwarf);
		victim->dwarf = NULL;
		c->counters.memory += elf_symbols_memory(&victim->sym);
		victim->evicted = true;
		{
			uint64_t wait =
				RELOAD_FIRST_NS
				<< (victim->reloads < 6 ? victim->reloads : 6);

			victim->reload_after_ns =
				mono_ns() +
				(wait < RELOAD_MAX_NS ? wait : RELOAD_MAX_NS);
		}
	}
}

struct elf_file *file_cache_get_fd(struct file_cache *c, int fd,
				   const char *path, int *err)
{
	return file_cache_get_fd_root(c, fd, path, -1, err);
}

struct elf_file *file_cache_get_fd_root(struct file_cache *c, int fd,
					const char *path, int root_fd, int *err)
{
	struct stat st;
	struct file_id id;
	struct id_eq_ctx ctx = {c, &id};
	struct elf_file *f;
	uint32_t slot;

	if (fstat(fd, &st)) {
		*err = -errno;
		return NULL;
	}
	memset(&id, 0, sizeof(id));
	id.dev = (uint64_t)st.st_dev;
	id.ino = (uint64_t)st.st_ino;
	id.size = (uint64_t)st.st_size;
	id.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
		      (uint64_t)st.st_mtim.tv_nsec;
	if (idxmap_find(&c->index, id_hash(&id), id_eq, &ctx, &slot)) {
		f = c->files[slot];
		f->refcnt++;
		f->idle_since_ns = 0;
		return f;
	}
	f = new_file(c, &id, path);
	if (!f) {
		*err = -ENOMEM;
		return NULL;
	}
	make_room(c);
	if (c->loader.started && id.size >= FILE_LOADER_MIN_BYTES) {
		int e = file_loader_submit(&c->loader, f, &f->acct, fd, path,
					   root_fd);

		if (e == -EAGAIN) {
			c->counters.loads_retried++;
			file_destroy(NULL, f);
			*err = -EAGAIN;
			return NULL;
		}
		if (!e) {
			/* Published at once: a second mapping of it waits
			 * for the same load. */
			c->counters.loads_async++;
			f->loading = true;
			f->refcnt++; /* the job's reference */
			if (add_slot(c, f)) {
				/* The job still refers to f: it stays,
				 * unpublished, until the load is taken. */
				f->refcnt--;
				*err = -ENOMEM;
				return NULL;
			}
			if (c->listener.on_loading)
				c->listener.on_loading(c->listener.ctx, f);
			return f;
		}
		/* Out of memory for the job: read it here. */
	}
	{
		struct file_load_result r;

		file_load_run(&r, fd, path, root_fd, &f->acct, NULL);
		if (r.load_err == -ENOMEM) {
			elf_symbols_free(&r.sym);
			file_destroy(NULL, f);
			*err = -ENOMEM;
			return NULL;
		}
		if (add_slot(c, f)) {
			elf_symbols_free(&r.sym);
			dwarf_lines_close(r.dwarf);
			file_destroy(NULL, f);
			*err = -ENOMEM;
			return NULL;
		}
		take_result(c, f, &r);
	}
	tell_ready(c, f, fd, NULL, 0);
	return f;
}

int file_cache_start_loader(struct file_cache *c, int notify_fd)
{
	int e = file_loader_start(&c->loader, notify_fd);

	if (e)
		return e;
	/* Off (no servers): nothing starts. */
	e = debuginfod_start(&c->dbgd, notify_fd);
	if (e)
		file_cache_stop_loader(c);
	return e;
}

int file_cache_set_debuginfod(struct file_cache *c, const char *urls,
			      const char **why)
{
	return debuginfod_set_urls(&c->dbgd, urls, why);
}

void file_cache_debuginfod_check(struct file_cache *c, struct elf_file *f)
{
	uint64_t retry = 0;
	int e;

	/* Only files whose own tables and local debug files gave no
	 * symbol table (the vDSO is ours, never asked). */
	if (f->dbgd_state != FILE_DBGD_IDLE || !c->dbgd.started || f->loading ||
	    f->evicted || f->load_err || f->sym.has_symtab ||
	    f->debug_source != DEBUG_INFO_NONE || !f->sym.build_id[0] ||
	    f->id.dev == UINT64_MAX)
		return;
	if (f->dbgd_retry_ns && mono_ns() < f->dbgd_retry_ns)
		return;
	e = debuginfod_submit(&c->dbgd, f, &f->acct, f->sym.build_id, &retry);
	if (!e) {
		f->dbgd_state = FILE_DBGD_PENDING;
		f->refcnt++; /* the job's reference */
		return;
	}
	/* Failed lately: not before its backoff ends. Queue full: a
	 * second from now. */
	f->dbgd_retry_ns = e == -EBUSY ? retry : mono_ns() + 1000000000ull;
}

/* A debug file from a server: its symbols (and lines) join the file's. */
static void take_debuginfod(struct file_cache *c, struct debuginfod_job *j)
{
	struct elf_file *f = j->file;

	f->dbgd_state = FILE_DBGD_IDLE;
	if (j->result != DEBUGINFOD_HIT || f->evicted) {
		/* Evicted meanwhile: asked again after its reload. */
		return;
	}
	c->counters.memory -= elf_symbols_memory(&f->sym);
	if (!elf_symbols_merge(&f->sym, &j->sym)) {
		f->debug_source = DEBUG_INFO_DEBUGINFOD;
		f->dbgd_state = FILE_DBGD_DONE;
		/* Names demangled so far are keyed by symbol index. */
		symbol_names_free(&f->names);
		symbol_names_init(&f->names);
		f->names.acct = &f->acct;
	}
	if (j->sym.over_budget || f->sym.over_budget)
		c->counters.over_budget++;
	c->counters.memory += elf_symbols_memory(&f->sym);
	if (f->dbgd_state == FILE_DBGD_DONE && !f->dwarf) {
		f->dwarf = j->dwarf;
		j->dwarf = NULL;
	}
}

int file_cache_finish_loads(struct file_cache *c)
{
	struct file_load_job *j = file_loader_take_done(&c->loader);
	struct debuginfod_job *dj = debuginfod_take_done(&c->dbgd);
	int n = 0;

	while (dj) {
		struct debuginfod_job *next = dj->next;

		take_debuginfod(c, dj);
		file_cache_put(c, dj->file);
		debuginfod_job_free(dj);
		dj = next;
	}

	while (j) {
		struct file_load_job *next = j->next;
		struct elf_file *f = j->file;

		if (f->slot >= c->nslots || c->files[f->slot] != f) {
			/* Never published (add_slot failed): no report. */
			elf_symbols_free(&j->r.sym);
			dwarf_lines_close(j->r.dwarf);
			file_destroy(NULL, f);
			file_loader_job_free(j);
			j = next;
			continue;
		}
		if (j->r.load_err == -ENOMEM) {
			/* Kept as an entry without symbols (counted): it is
			 * mapped, and a retry would fail the same way. */
			elf_symbols_free(&j->r.sym);
			memset(&j->r.sym, 0, sizeof(j->r.sym));
		}
		take_result(c, f, &j->r);
		f->loading = false;
		f->just_loaded = true;
		tell_ready(c, f, j->fd, NULL, 0);
		file_cache_put(c, f);
		file_loader_job_free(j);
		j = next;
		n++;
	}
	return n;
}

void file_cache_clear_just_loaded(struct file_cache *c)
{
	for (uint32_t i = 0; i < c->nslots; i++)
		if (c->files[i])
			c->files[i]->just_loaded = false;
}

bool file_cache_loads_busy(struct file_cache *c)
{
	return file_loader_busy(&c->loader);
}

void file_cache_stop_loader(struct file_cache *c)
{
	struct file_load_job *j = file_loader_stop(&c->loader);
	struct debuginfod_job *dj = debuginfod_stop(&c->dbgd);

	while (dj) {
		struct debuginfod_job *next = dj->next;
		struct elf_file *f = dj->file;

		/* Finished or not: the file keeps what it had. */
		f->dbgd_state = FILE_DBGD_IDLE;
		file_cache_put(c, f);
		debuginfod_job_free(dj);
		dj = next;
	}

	while (j) {
		struct file_load_job *next = j->next;
		struct elf_file *f = j->file;

		/* Unfinished or not taken: the entry stays without
		 * symbols and without a table. */
		elf_symbols_free(&j->r.sym);
		dwarf_lines_close(j->r.dwarf);
		f->load_err = -ECANCELED;
		f->loading = false;
		if (f->slot >= c->nslots || c->files[f->slot] != f) {
			file_destroy(NULL, f); /* never published */
		} else {
			tell_ready(c, f, -1, NULL, 0);
			file_cache_put(c, f);
		}
		file_loader_job_free(j);
		j = next;
	}
}

/* The vDSO's size comes from our own [vdso] line in /proc/self/maps. */
static size_t own_vdso_size(uint64_t base)
{
	struct proc_maps maps;
	const struct proc_mapping *m;
	size_t size = 0;
	char *text;
	long n = proc_read_file("/proc/self/maps", &text, PROC_MAPS_MAX_BYTES);

	if (n < 0)
		return 0;
	if (!proc_maps_parse(text, (size_t)n, &maps, NULL)) {
		m = proc_maps_find(&maps, base);
		if (m && m->kind == PROC_MAPPING_VDSO)
			size = (size_t)(m->end - base);
		proc_maps_free(&maps);
	}
	free(text);
	return size;
}

struct elf_file *file_cache_get_vdso(struct file_cache *c)
{
	struct file_id id = {.dev = UINT64_MAX, .ino = UINT64_MAX};
	struct id_eq_ctx ctx = {c, &id};
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	struct elf_file *f;
	uint32_t slot;
	size_t size;
	void *copy;

	if (idxmap_find(&c->index, id_hash(&id), id_eq, &ctx, &slot)) {
		f = c->files[slot];
		f->refcnt++;
		f->idle_since_ns = 0;
		return f;
	}
	f = new_file(c, &id, "[vdso]");
	if (!f)
		return NULL;
	size = base ? own_vdso_size(base) : 0;
	copy = size ? malloc(size) : NULL;
	if (copy) {
		memcpy(copy, (const void *)(uintptr_t)base, size);
		f->load_err =
			elf_symbols_load_mem(copy, size, &f->sym, &f->acct);
	} else {
		f->load_err = -ENOENT;
	}
	if (add_slot(c, f)) {
		free(copy);
		file_destroy(NULL, f);
		return NULL;
	}
	if (copy)
		tell_ready(c, f, -1, copy, size);
	free(copy);
	return f;
}

bool file_cache_reload_due(const struct elf_file *f)
{
	return f->evicted && !f->loading && mono_ns() >= f->reload_after_ns;
}

int file_cache_reload(struct file_cache *c, struct elf_file *f, int fd,
		      const char *path, int root_fd)
{
	struct elf_symbols sym;
	struct stat st;
	int err;

	if (!f->evicted)
		return 0;
	if (fstat(fd, &st))
		return -errno;
	if ((uint64_t)st.st_dev != f->id.dev ||
	    (uint64_t)st.st_ino != f->id.ino ||
	    (uint64_t)st.st_size != f->id.size ||
	    (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
			    (uint64_t)st.st_mtim.tv_nsec !=
		    f->id.mtime_ns)
		return -ESTALE;
	/* Not again before the next due time, whatever happens now. */
	f->reload_after_ns = UINT64_MAX;
	make_room(c);
	err = elf_symbols_load_fd(fd, &sym, &f->acct);
	if (err) {
		elf_symbols_free(&sym);
		return err;
	}
	if (sym.over_budget) {
		elf_symbols_free(&sym);
		c->counters.over_budget++;
		return -EDQUOT;
	}
	debug_info_attach(&sym, fd, path, root_fd);
	c->counters.memory -= elf_symbols_memory(&f->sym);
	elf_symbols_free(&f->sym);
	f->sym = sym;
	c->counters.memory += elf_symbols_memory(&f->sym);
	if (f->sym.has_dwarf && !f->dwarf)
		f->dwarf = dwarf_lines_open(fd, &f->acct);
	f->evicted = false;
	f->reloads++;
	c->counters.reloads++;
	/* Its server's symbols went with the eviction: asked again. */
	if (f->dbgd_state == FILE_DBGD_DONE) {
		f->dbgd_state = FILE_DBGD_IDLE;
		f->debug_source = DEBUG_INFO_NONE;
		f->dbgd_retry_ns = 0;
	}
	return 0;
}

void file_cache_ref(struct elf_file *f)
{
	f->refcnt++;
	f->idle_since_ns = 0;
}

static void file_evict(struct file_cache *c, struct elf_file *f)
{
	idxmap_remove(&c->index, id_hash(&f->id), f->slot);
	c->files[f->slot] = NULL;
	c->counters.memory -= elf_symbols_memory(&f->sym);
	file_destroy(c, f);
}

void file_cache_put(struct file_cache *c, struct elf_file *f)
{
	(void)c;
	if (!f || !f->refcnt || --f->refcnt)
		return;
	f->idle_since_ns = mono_ns();
}

void file_cache_sweep(struct file_cache *c, uint64_t max_idle_ns)
{
	uint64_t now = mono_ns();

	for (uint32_t i = 0; i < c->nslots; i++) {
		struct elf_file *f = c->files[i];

		if (f && !f->refcnt && now - f->idle_since_ns >= max_idle_ns)
			file_evict(c, f);
	}
}
