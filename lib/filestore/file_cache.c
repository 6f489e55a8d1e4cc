// SPDX-License-Identifier: Apache-2.0
#include "filestore/file_cache.h"
#include "elf/debug_info.h"
#include "util/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void file_cache_init(struct file_cache *c, struct file_table *table)
{
	memset(c, 0, sizeof(*c));
	c->table = table;
	mem_budget_init(&c->budget, 0, 0);
	file_loader_init(&c->loader);
	debuginfod_init(&c->dbgd);
}

void file_cache_set_budget(struct file_cache *c, uint64_t total,
			   uint64_t per_file)
{
	mem_budget_init(&c->budget, total, per_file);
}

static void entry_destroy(struct elf_file *f)
{
	elf_symbols_free(&f->sym);
	symbol_names_free(&f->names);
	dwarf_lines_close(f->dwarf);
	mem_account_release(&f->acct);
	free(f);
}

void file_cache_file_freed(struct file_cache *c, struct file *file)
{
	struct elf_file *f = file_cache_of(c, file);

	if (!f)
		return;
	c->v[file->slot] = NULL;
	c->counters.memory -= elf_symbols_memory(&f->sym);
	entry_destroy(f);
}

void file_cache_free(struct file_cache *c)
{
	file_cache_stop_loader(c);
	debuginfod_free(&c->dbgd);
	for (uint32_t i = 0; i < c->nv; i++)
		if (c->v[i])
			entry_destroy(c->v[i]);
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* The entry of new file in its slot. */
static struct elf_file *new_entry(struct file_cache *c, struct file *file)
{
	struct elf_file *f;

	if (file->slot >= c->nv) {
		uint32_t n = c->nv ? c->nv : 64;
		struct elf_file **v;

		while (n <= file->slot)
			n *= 2;
		v = realloc(c->v, n * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + c->nv, 0, (n - c->nv) * sizeof(*v));
		c->v = v;
		c->nv = n;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->file = file;
	mem_account_init(&f->acct, &c->budget);
	symbol_names_init(&f->names);
	f->names.acct = &f->acct;
	return f;
}

/* A load's result into its entry. */
static void take_result(struct file_cache *c, struct elf_file *f,
			struct file_load_result *r)
{
	f->load_err = r->load_err;
	f->debug_source = r->debug_source;
	f->sym = r->sym;
	f->dwarf = r->dwarf;
	dwarf_lines_count_image_reads(f->dwarf, &c->counters.lines_image_reads);
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

static uint64_t reload_wait(uint32_t reloads)
{
	uint64_t wait = RELOAD_FIRST_NS << (reloads < 6 ? reloads : 6);

	return wait < RELOAD_MAX_NS ? wait : RELOAD_MAX_NS;
}

/*
 * Before a load: free the least recently sampled files until the load
 * fits (a first read: a whole file's budget; a reload: what the file
 * held before, reload_need). An idle file (no process
 * maps it) goes whole (the file table drops it: every stage's entry
 * goes); a mapped one keeps its entry, loads and build id and loses its
 * symbols (its frames keep their addresses). O(files) per victim: only
 * runs when the budget is full.
 */
bool file_cache_full(struct file_cache *c)
{
	return mem_budget_used(&c->budget) + c->budget.file_limit >
	       c->budget.limit;
}

/*
 * What reading f's symbols again may need: the most its account held
 * before (the read that fitted then fits again), with an eighth over for
 * what the process's copy adds; a whole file's budget if it never held
 * anything. Making room for a whole file's budget before every reload
 * evicted a big file for each small one read again, which evicted it in
 * turn when due: neither stayed named.
 */
static uint64_t reload_need(const struct file_cache *c,
			    const struct elf_file *f)
{
	uint64_t peak = atomic_load(&f->acct.peak);
	uint64_t need = peak + peak / 8 + (64u << 10);

	return peak && need < c->budget.file_limit ? need
						   : c->budget.file_limit;
}

static uint64_t lines_need(const struct file_cache *c, uint64_t file_size)
{
	uint64_t need = file_size + file_size / 8 + (1u << 20);

	return need < c->budget.file_limit ? need : c->budget.file_limit;
}

static void make_room(struct file_cache *c, uint64_t need)
{
	while (mem_budget_used(&c->budget) + need > c->budget.limit) {
		struct elf_file *victim = NULL;

		for (uint32_t i = 0; i < c->nv; i++) {
			struct elf_file *f = c->v[i];

			/* A file being read is charged as it goes: its
			 * symbols are not in the entry yet. */
			if (!f || f->loading || !atomic_load(&f->acct.bytes) ||
			    (f->evicted && f->file->refcnt))
				continue;
			if (!victim ||
			    f->file->last_used_ns < victim->file->last_used_ns)
				victim = f;
		}
		if (!victim)
			return;
		c->counters.evictions++;
		if (!victim->file->refcnt) {
			/* Ours goes now (the budget wants it); the other
			 * stages forget the file when the agent takes it
			 * from the table's gone files. */
			struct file *file = victim->file;

			file_cache_file_freed(c, file);
			file_table_drop(c->table, file);
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
		victim->reload_after_ns =
			mono_ns() + reload_wait(victim->reloads);
	}
}

/* The vDSO: its image (the caller's copy of ours). */
static int add_mem(struct file_cache *c, struct elf_file *f,
		   const struct file_added *a)
{
	c->v[f->file->slot] = f;
	f->load_err =
		a->mem ? elf_symbols_load_mem(a->mem, a->len, &f->sym, &f->acct)
		       : -ENOENT;
	return 0;
}

int file_cache_file_added(struct file_cache *c, struct file *file,
			  const struct file_added *a)
{
	struct elf_file *f = new_entry(c, file);

	if (!f)
		return -ENOMEM;
	if (a->fd < 0)
		return add_mem(c, f, a);
	make_room(c, c->budget.file_limit);
	if (c->loader.queue.started && file->id.size >= FILE_LOADER_MIN_BYTES) {
		int e = file_loader_submit(&c->loader, f, &f->acct, a->fd,
					   file->path, a->root_fd);

		if (e == -EAGAIN) {
			c->counters.loads_retried++;
			entry_destroy(f);
			return -EAGAIN;
		}
		if (!e) {
			/* Published at once: a second mapping of it waits
			 * for the same load. */
			f->loading = true;
			file_ref(file); /* the job's reference */
			c->v[file->slot] = f;
			return 1;
		}
		/* Out of memory for the job: read it here. */
	}
	{
		struct file_load_result r;

		file_load_run(&r, a->fd, file->path, a->root_fd, &f->acct,
			      NULL);
		if (r.load_err == -ENOMEM) {
			elf_symbols_free(&r.sym);
			entry_destroy(f);
			return -ENOMEM;
		}
		c->v[file->slot] = f;
		take_result(c, f, &r);
	}
	return 0;
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

bool file_cache_debuginfod_due(const struct file_cache *c,
			       const struct elf_file *f)
{
	/* Only files whose own tables and local debug files gave no
	 * symbol table (the vDSO is ours, never asked). */
	if (f->dbgd_state != FILE_DBGD_IDLE || !c->dbgd.queue.started ||
	    f->loading || f->evicted || f->load_err || f->sym.has_symtab ||
	    f->debug_source != DEBUG_INFO_NONE || !f->sym.build_id[0] ||
	    f->file->id.dev == UINT64_MAX)
		return false;
	return !f->dbgd_retry_ns || mono_ns() >= f->dbgd_retry_ns;
}

void file_cache_debuginfod_check(struct file_cache *c, struct elf_file *f)
{
	uint64_t retry = 0;
	int e;

	if (!file_cache_debuginfod_due(c, f))
		return;
	e = debuginfod_submit(&c->dbgd, f, &f->acct, f->sym.build_id, &retry);
	if (!e) {
		f->dbgd_state = FILE_DBGD_PENDING;
		file_ref(f->file); /* the job's reference */
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
		dwarf_lines_count_image_reads(f->dwarf,
					      &c->counters.lines_image_reads);
	}
}

void file_cache_finish_lookups(struct file_cache *c)
{
	struct work_item *dit = debuginfod_take_done(&c->dbgd);

	while (dit) {
		struct debuginfod_job *dj = debuginfod_job_of(dit);
		struct elf_file *f = dj->file;

		dit = dit->next;
		take_debuginfod(c, dj);
		debuginfod_job_free(dj);
		file_table_put(c->table, f->file);
	}
}

/* The job last handed out by file_cache_take_load: its fd was the
 * caller's until now. */
static void free_taken(struct file_cache *c)
{
	struct file_load_job *j = c->taken;

	if (!j)
		return;
	c->taken = NULL;
	file_table_put(c->table, j->file->file);
	file_loader_job_free(j);
}

struct file *file_cache_take_load(struct file_cache *c, int *fd)
{
	struct file_load_job *j;
	struct elf_file *f;

	free_taken(c);
	if (!c->done)
		c->done = file_loader_take_done(&c->loader);
	if (!c->done)
		return NULL;
	j = file_load_job_of(c->done);
	c->done = c->done->next;
	f = j->file;
	if (j->r.load_err == -ENOMEM) {
		/* Kept as an entry without symbols (counted): it is mapped,
		 * and a retry would fail the same way. */
		elf_symbols_free(&j->r.sym);
		memset(&j->r.sym, 0, sizeof(j->r.sym));
	}
	take_result(c, f, &j->r);
	f->loading = false;
	c->taken = j;
	*fd = j->fd;
	return f->file;
}

bool file_cache_loads_busy(struct file_cache *c)
{
	return c->done || file_loader_busy(&c->loader);
}

void file_cache_stop_loader(struct file_cache *c)
{
	struct work_item *it, *dit = debuginfod_stop(&c->dbgd);

	free_taken(c);
	/* Finished loads not taken go with the unfinished ones. */
	it = file_loader_stop(&c->loader);
	if (c->done) {
		struct work_item *last = c->done;

		while (last->next)
			last = last->next;
		last->next = it;
		it = c->done;
		c->done = NULL;
	}

	while (dit) {
		struct debuginfod_job *dj = debuginfod_job_of(dit);
		struct elf_file *f = dj->file;

		dit = dit->next;
		/* Finished or not: the file keeps what it had. */
		f->dbgd_state = FILE_DBGD_IDLE;
		debuginfod_job_free(dj);
		file_table_put(c->table, f->file);
	}

	while (it) {
		struct file_load_job *j = file_load_job_of(it);
		struct elf_file *f = j->file;

		it = it->next;
		/* Unfinished or not taken: the entry stays without
		 * symbols and without a table. */
		elf_symbols_free(&j->r.sym);
		dwarf_lines_close(j->r.dwarf);
		f->load_err = -ECANCELED;
		f->loading = false;
		file_table_put(c->table, f->file);
		file_loader_job_free(j);
	}
}

bool file_cache_reload_due(const struct elf_file *f)
{
	return f->evicted && !f->loading && mono_ns() >= f->reload_after_ns;
}

static bool dwarf_due(const struct elf_file *f)
{
	return f->sym.has_dwarf && !f->dwarf && !f->dwarf_tried;
}

bool file_cache_go_lines_used(const struct elf_file *f, bool go)
{
	return go && f->sym.go_tab_size &&
	       !(f->sym.go_lines_tried && !f->sym.go_tab);
}

bool file_cache_lines_due(const struct elf_file *f, bool go)
{
	if (f->loading || f->evicted)
		return false;
	return file_cache_go_lines_used(f, go)
		       ? elf_symbols_go_lines_due(&f->sym)
		       : dwarf_due(f);
}

int file_cache_load_lines(struct file_cache *c, struct elf_file *f, int fd,
			  bool go)
{
	struct file_id id;
	int err;

	if (!file_cache_lines_due(f, go))
		return -EALREADY;
	err = file_id_of_fd(fd, &id);
	if (err)
		return err;
	if (memcmp(&id, &f->file->id, sizeof(id))) {
		f->dwarf_tried = f->sym.go_lines_tried = true;
		return -ESTALE;
	}
	/* DWARF's image is charged as the file's size, its rows as units
	 * are read (dwarf_lines.c): room for that, not for a whole file's
	 * budget, which evicted a big file's symbols for a small file's
	 * lines. Go's lines, decoded from the pclntab, can outgrow the
	 * file: a whole file's budget. */
	make_room(c, file_cache_go_lines_used(f, go) ? c->budget.file_limit
						     : lines_need(c, id.size));
	if (!file_cache_go_lines_used(f, go)) {
		f->dwarf_tried = true;
		f->dwarf = dwarf_lines_open(fd, &f->acct);
		dwarf_lines_count_image_reads(f->dwarf,
					      &c->counters.lines_image_reads);
		return f->dwarf ? 0 : -ENOEXEC;
	}
	c->counters.memory -= elf_symbols_memory(&f->sym);
	err = elf_symbols_load_go_lines(&f->sym, fd);
	c->counters.memory += elf_symbols_memory(&f->sym);
	return err;
}

void file_cache_drop_idle_lines(struct file_cache *c, uint64_t now_ns,
				uint64_t idle_ns)
{
	uint64_t before_ns = now_ns - idle_ns;

	for (uint32_t i = 0; i < c->nv; i++) {
		struct elf_file *f = c->v[i];

		if (!f || f->loading)
			continue;
		if (f->file->last_used_ns >= before_ns) {
			/* In use: its units read stay, the image may go. */
			dwarf_lines_trim(f->dwarf, now_ns);
			continue;
		}
		if (f->dwarf && f->dbgd_state != FILE_DBGD_DONE) {
			dwarf_lines_close(f->dwarf);
			f->dwarf = NULL;
			f->dwarf_tried = false;
		}
		if (f->sym.go_tab) {
			c->counters.memory -= elf_symbols_memory(&f->sym);
			elf_symbols_drop_go_lines(&f->sym);
			c->counters.memory += elf_symbols_memory(&f->sym);
		}
	}
}

int file_cache_reload(struct file_cache *c, struct elf_file *f, int fd,
		      const char *path, int root_fd)
{
	struct elf_symbols sym;
	struct file_id id;
	int err;

	if (!f->evicted)
		return 0;
	err = file_id_of_fd(fd, &id);
	if (err)
		return err;
	if (memcmp(&id, &f->file->id, sizeof(id)))
		return -ESTALE;
	/* Not again before the next due time, whatever happens now. */
	f->reload_after_ns = UINT64_MAX;
	make_room(c, reload_need(c, f));
	err = elf_symbols_load_fd(fd, &sym, &f->acct);
	if (err) {
		elf_symbols_free(&sym);
		return err;
	}
	if (sym.over_budget) {
		/* It fitted its own budget before: the total was short (other
		 * files grew meanwhile). Tried again later, waiting longer
		 * each time. */
		elf_symbols_free(&sym);
		c->counters.over_budget++;
		f->reload_after_ns = mono_ns() + reload_wait(f->reloads++);
		return -EDQUOT;
	}
	debug_info_attach(&sym, fd, path, root_fd);
	c->counters.memory -= elf_symbols_memory(&f->sym);
	elf_symbols_free(&f->sym);
	f->sym = sym;
	c->counters.memory += elf_symbols_memory(&f->sym);
	f->dwarf_tried = false; /* opened again when a frame needs it */
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

bool file_mapping_vaddr(const struct proc_mapping *m, const struct elf_file *ef,
			uint64_t *vaddr)
{
	/* The vDSO image starts at its mapping. */
	uint64_t off = m->kind == PROC_MAPPING_VDSO ? 0 : m->offset;

	return elf_symbols_mapping_vaddr(&ef->sym, off, m->end - m->start,
					 vaddr);
}

bool file_mapping_bias(const struct proc_mapping *m, const struct elf_file *ef,
		       uint64_t *bias)
{
	uint64_t vaddr;

	if (!file_mapping_vaddr(m, ef, &vaddr))
		return false;
	*bias = m->start - vaddr;
	return true;
}
