// SPDX-License-Identifier: Apache-2.0
#include "unwind/process_unwind.h"
#include "util/debug_log.h"
#include "unwind/unwind_table.h"
#include "util/clock.h"

#include <errno.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The kernel array a worker made for a file's table. */
struct prebuilt_array {
	int err; /* 0: fd, nrows and index_rows are set */
	int fd;
	uint32_t nrows;
	uint32_t index_rows;
	uint64_t unrepresentable;
};

struct unwind_job {
	struct file *f;		  /* referenced until installed */
	struct mem_account *acct; /* the file's (the file store's entry) */
	int fd;
	int err;
	uint64_t ns;
	struct unwind_table table;
	struct unwind_table_stats st;
	struct prebuilt_array array;
	uint32_t owner_pid; /* the process the file was loaded for */
	uint64_t owner_serial;
	struct work_item item; /* in the queue, or a list taken */
};

#define unwind_job_of(it) work_queue_job(it, struct unwind_job, item)

/* The process a table is charged to, if it is still there. */
static struct process *owner_of(struct process_unwind *pu, uint32_t pid,
				uint64_t serial)
{
	/* Exited processes too: a file read for one is charged to it. */
	return pid ? process_table_find_serial(pu->procs, pid, serial) : NULL;
}

static void install_table(struct process_unwind *pu, struct file *f,
			  struct unwind_table *t, int err,
			  const struct unwind_table_stats *st,
			  struct prebuilt_array *pre, struct process *owner);

static struct unwind_file none;

struct unwind_file *process_unwind_file(struct process_unwind *pu,
					const struct file *f)
{
	if (f->slot >= pu->nufiles) {
		uint32_t n = pu->nufiles ? pu->nufiles : 64;
		struct unwind_file *v;

		while (n <= f->slot)
			n *= 2;
		v = realloc(pu->ufiles, n * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + pu->nufiles, 0, (n - pu->nufiles) * sizeof(*v));
		pu->ufiles = v;
		pu->nufiles = n;
	}
	return &pu->ufiles[f->slot];
}

/* Read-only: a file the table has no room for has no table. */
static const struct unwind_file *file_of(struct process_unwind *pu,
					 const struct file *f)
{
	return f->slot < pu->nufiles ? &pu->ufiles[f->slot] : &none;
}

void process_unwind_file_loading(struct process_unwind *pu,
				 const struct file *f)
{
	struct unwind_file *u = process_unwind_file(pu, f);

	if (u) {
		memset(u, 0, sizeof(*u));
		u->pending = true; /* no table before symbols */
	}
}

void process_unwind_file_freed(struct process_unwind *pu, const struct file *f)
{
	struct unwind_file *u;

	if (f->slot >= pu->nufiles)
		return;
	u = &pu->ufiles[f->slot];
	unwind_maps_remove_file(&pu->maps, &u->slot);
	memset(u, 0, sizeof(*u)); /* the slot's next file starts afresh */
}

void process_unwind_file_ready(struct process_unwind *pu, struct file *f,
			       int fd, const void *mem, size_t len)
{
	struct unwind_table table = {0};
	struct unwind_table_stats st;
	uint64_t t0 = mono_ns();
	struct stat sb;
	int err;
	/* The process it was first read for (inline, or on the loader). */
	struct process *owner = owner_of(pu, f->owner_pid, f->owner_serial);
	struct unwind_file *u = process_unwind_file(pu, f);
	struct elf_file *ef = file_cache_of(pu->files, f);

	if (!u)
		return;		  /* no room to note a table: frame pointers */
	memset(u, 0, sizeof(*u)); /* not pending any more */
	if (fd < 0 && !mem)
		return; /* not read: no table */
	if (fd >= 0 && pu->builds.started && !fstat(fd, &sb) &&
	    sb.st_size >= UNWIND_ASYNC_MIN_FILE_BYTES) {
		struct unwind_job *j = calloc(1, sizeof(*j));

		if (j) {
			j->fd = dup(fd);
			if (j->fd >= 0) {
				j->f = f;
				j->acct = ef ? &ef->acct : NULL;
				file_ref(f);
				u->pending = true;
				j->array.fd = -1;
				if (owner) {
					j->owner_pid = owner->pid;
					j->owner_serial = owner->serial;
				}
				/* First come, first built. */
				if (!work_queue_submit(&pu->builds, &j->item))
					return;
				u->pending = false;
				file_table_put(pu->procs->files, f);
				close(j->fd);
			}
			free(j);
		}
	}
	memset(&st, 0, sizeof(st));
	st.acct = ef ? &ef->acct : NULL;
	err = fd >= 0 ? unwind_table_build_fd(fd, &table, &st)
		      : unwind_table_build_mem(mem, len, &table, &st);
	pu->counters.build_ns += mono_ns() - t0;
	install_table(pu, f, &table, err, &st, NULL, owner);
}

/* May the kernel take nrows more rows for owner (NULL: no process)? The
 * refusal is counted by reason; the file then unwinds by frame
 * pointers. */
static bool within_budget(struct process_unwind *pu, struct process *owner,
			  uint64_t nrows)
{
	if (pu->maps.counters.rows + nrows > UNWIND_HOST_MAX_ROWS) {
		pu->counters.refused_host++;
		return false;
	}
	if (owner && owner->unwind_rows + nrows > UNWIND_PROCESS_MAX_ROWS) {
		pu->counters.refused_process++;
		return false;
	}
	if (owner)
		owner->unwind_rows += nrows;
	return true;
}

/* t holds the built table (if !err), or pre its kernel array: load it
 * into a chunk. t is freed. */
static void install_table(struct process_unwind *pu, struct file *f,
			  struct unwind_table *t, int err,
			  const struct unwind_table_stats *stp,
			  struct prebuilt_array *pre, struct process *owner)
{
	struct unwind_table_stats st = *stp;
	struct unwind_file *u = process_unwind_file(pu, f);

	if (!u) {
		unwind_table_free(t);
		if (pre && pre->fd >= 0)
			close(pre->fd);
		if (pre)
			pre->fd = -1;
		return;
	}

	if (err) {
		/* No CFI (or unusable): frame pointers for this file. */
		u->err = err;
		debug_log("no unwind table for %s: %s", f->path,
			  strerror(-err));
		if (st.flags & UNWIND_ST_OVER_BUDGET)
			pu->counters.over_budget++;
		else if (err != -ENOENT)
			pu->counters.table_errors++;
		return;
	}
	/* Built, but (part of) the file's CFI was corrupt and left out. */
	if (st.flags & (UNWIND_ST_CFI_CORRUPT | UNWIND_ST_HOSTILE))
		pu->counters.table_errors++;
	debug_log("unwind table of %s: %zu rows, %llu FDEs "
		  "(%llu skipped), flags %#x",
		  f->path, t->nrows, (unsigned long long)st.fdes_total,
		  (unsigned long long)st.fdes_skipped, st.flags);
	if (pu->maps.files_fd >= 0 &&
	    !within_budget(pu, owner,
			   pre && pre->fd >= 0
				   ? (uint64_t)pre->index_rows + pre->nrows
				   : t->nrows + t->nrows / 8 + 2)) {
		if (pre && pre->fd >= 0)
			close(pre->fd);
		if (pre)
			pre->fd = -1;
		u->err = -EDQUOT;
		unwind_table_free(t);
		return;
	}
	if (pre && (pre->err || pre->fd >= 0)) {
		pu->counters.rows_unrepresentable += pre->unrepresentable;
		err = pre->err;
		if (err) {
			pu->counters.load_errors++;
			if (pre->fd >= 0)
				close(pre->fd);
		} else {
			/* Takes the fd, also on failure. */
			err = unwind_maps_register(&pu->maps, pre->fd,
						   pre->nrows, pre->index_rows,
						   &u->slot);
		}
		pre->fd = -1;
	} else {
		/* Into a kernel chunk, or without kernel maps (tests,
		 * tools) a chunk in memory: the walk reads both alike. */
		err = unwind_maps_add_file(&pu->maps, t, &u->slot);
	}
	if (err) {
		/* The kernel refused it: frame pointers, in the kernel and
		 * in the stack-copy walk alike. */
		u->err = err;
		debug_log("unwind table of %s (%zu rows) not "
			  "loaded: %s",
			  f->path, t->nrows, strerror(-err));
	}
	/* The chunk has it: no second copy here. */
	unwind_table_free(t);
}

/* One mapping as the walk sees it. A file not resolved yet (left for a
 * later slice of the drain thread) is pending meanwhile. */
static void fill_mapping(struct process_unwind *pu,
			 const struct proc_mapping *m,
			 struct otelprof_bpf_mapping *b)
{
	bool deferred = !m->file_tried && m->kind == PROC_MAPPING_FILE;
	struct file *f = m->file;
	const struct elf_file *ef = file_cache_of(pu->files, f);

	memset(b, 0, sizeof(*b));
	b->start = m->start;
	b->end = m->end;
	const struct unwind_file *u = f ? file_of(pu, f) : &none;

	if (deferred || u->pending) {
		b->file_id = OTELPROF_FILE_ID_PENDING;
	} else if (u->slot.id && ef && file_mapping_bias(m, ef, &b->bias)) {
		b->file_id = u->slot.id;
		b->nrows = u->slot.nrows;
		b->row_base = u->slot.base;
		b->index_rows = u->slot.index_rows;
	}
}

/* At most this many of one process's mappings in big_mappings, so that
 * one process cannot take all of it (its mappings beyond are unknown to
 * the kernel: stack copies). */
#define BIG_MAPPINGS_PER_PROCESS (OTELPROF_BIG_MAPPINGS / 4)

void process_unwind_sync(struct process_unwind *pu, struct process *p)
{
	struct otelprof_bpf_proc proc;
	struct otelprof_bpf_mapping *big = NULL;
	uint32_t base = 0, n = (uint32_t)p->maps.n;

	memset(&proc, 0, sizeof(proc));
	if (n > BIG_MAPPINGS_PER_PROCESS)
		n = BIG_MAPPINGS_PER_PROCESS;
	if (n > OTELPROF_MAX_PROC_MAPPINGS && pu->maps.procs_fd >= 0)
		big = unwind_maps_big_alloc(&pu->maps, n, &base);
	if (big) {
		/* Written before the entry points at them. */
		for (uint32_t i = 0; i < n; i++)
			fill_mapping(pu, &p->maps.v[i], &big[i]);
		proc.big_base = base;
		proc.big_n = n;
	} else {
		for (size_t i = 0;
		     i < p->maps.n && proc.n < OTELPROF_MAX_PROC_MAPPINGS; i++)
			fill_mapping(pu, &p->maps.v[i], &proc.m[proc.n++]);
	}
	/* When the sampler may next report a change in this process. */
	proc.map_count = p->kernel_map_count;
	proc.notify_after_ns = p->next_rescan_ns;
	proc.notify_gap_ns = p->rescan_gap_ns;
	if (pu->maps.procs_fd >= 0) {
		unwind_maps_set_process(&pu->maps, p->pid, &proc);
		p->unwind_in_kernel = true; /* even if refused: delete */
	}
	/* The old range only once the entry no longer names it. */
	unwind_maps_big_free(&pu->maps, p->big_base, p->big_n);
	p->big_base = big ? base : 0;
	p->big_n = big ? n : 0;
}

void process_unwind_forget(struct process_unwind *pu, struct process *p)
{
	/* Most short processes go before they are synced (held while
	 * young): no entry, no syscall. */
	if (pu->maps.procs_fd >= 0 && p->unwind_in_kernel)
		unwind_maps_remove_process(&pu->maps, p->pid);
	p->unwind_in_kernel = false;
	unwind_maps_big_free(&pu->maps, p->big_base, p->big_n);
	p->big_n = 0;
}

static void run_build(void *ctx, unsigned worker, struct work_item *it)
{
	struct process_unwind *pu = ctx;
	struct unwind_job *j = unwind_job_of(it);
	uint64_t t0;

	(void)worker;
	/* Only the job's own memory is touched here (and a new kernel
	 * array, which nothing else refers to yet). */
	t0 = mono_ns();
	j->st.cancel = &pu->builds.stopping;
	j->st.acct = j->acct; /* f is referenced by the job */
	j->err = unwind_table_build_fd(j->fd, &j->table, &j->st);
	/* Big tables get their own kernel array, made and filled here;
	 * smaller ones are packed into a shared chunk by the drain thread
	 * (a copy, no syscall). */
	if (!j->err && pu->maps.files_fd >= 0 &&
	    j->table.nrows >= UNWIND_OWN_CHUNK_ROWS) {
		j->array.err = unwind_maps_create_array(
			&j->table, &j->array.fd, &j->array.nrows,
			&j->array.index_rows, &j->array.unrepresentable);
		/* The kernel has the rows: no second copy. */
		if (!j->array.err)
			unwind_table_free(&j->table);
	}
	j->ns = mono_ns() - t0;
	close(j->fd);
	j->fd = -1;
}

int process_unwind_start_worker(struct process_unwind *pu)
{
	int e;

	pu->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (pu->notify_fd < 0)
		return -errno;
	e = work_queue_start(&pu->builds, 1, run_build, pu, pu->notify_fd);
	if (e < 0) {
		close(pu->notify_fd);
		pu->notify_fd = -1;
		return e;
	}
	return 0;
}

/* Write the kernel entries of processes whose files got their tables, at
 * most once each, as far as the pass's slice goes (the rest next pass:
 * one such entry is up to 16,384 mappings). */
static void repush_marked(struct process_unwind *pu)
{
	/* run at every drain pass: no slot scan when none is marked */
	if (!pu->any_repush)
		return;
	for (uint32_t i = 0; i < pu->procs->nslots; i++) {
		struct process *p = pu->procs->procs[i];

		if (!p || !p->unwind_repush)
			continue;
		if (process_table_slice_over(pu->procs))
			return;
		p->unwind_repush = false;
		process_unwind_sync(pu, p);
	}
	pu->any_repush = false;
}

void process_unwind_take_wakeup(struct process_unwind *pu)
{
	/* The loader and the debuginfod lookups write it too, and a
	 * finished load or lookup with no table build after it left it
	 * readable, waking the drain thread without end. */
	uint64_t v;

	if (pu->notify_fd >= 0 && read(pu->notify_fd, &v, sizeof(v)) < 0) {
		/* nothing to reset */
	}
}

int process_unwind_finish_builds(struct process_unwind *pu)
{
	struct work_item *it, *installed = NULL;
	int n = 0;

	if (!pu->builds.started)
		return 0;
	it = work_queue_take_done(&pu->builds);
	/* A big table's own chunk costs an RCU grace period to publish:
	 * as many as the slice takes, the rest in the next pass. */
	while (it) {
		struct work_item *next = it->next;
		struct unwind_job *j = unwind_job_of(it);
		struct file *f = j->f;

		if (n && process_table_slice_over(pu->procs)) {
			work_queue_put_back(&pu->builds, it);
			break;
		}
		if (f->slot < pu->nufiles)
			pu->ufiles[f->slot].pending = false;
		pu->counters.build_ns += j->ns;
		install_table(pu, f, &j->table, j->err, &j->st, &j->array,
			      owner_of(pu, j->owner_pid, j->owner_serial));
		if (f->slot < pu->nufiles)
			pu->ufiles[f->slot].fresh = true;
		it->next = installed;
		installed = it;
		it = next;
		n++;
	}
	/* Every process mapping one of them learns its tables, once. */
	if (installed) {
		for (uint32_t i = 0; i < pu->procs->nslots; i++) {
			struct process *p = pu->procs->procs[i];

			for (size_t k = 0; p && k < p->maps.n; k++) {
				const struct file *f = p->maps.v[k].file;

				if (f && file_of(pu, f)->fresh) {
					p->unwind_repush = pu->any_repush =
						true;
					break;
				}
			}
		}
	}
	while (installed) {
		struct unwind_job *j = unwind_job_of(installed);

		installed = installed->next;
		if (j->f->slot < pu->nufiles)
			pu->ufiles[j->f->slot].fresh = false;
		file_table_put(pu->procs->files, j->f);
		free(j);
	}
	repush_marked(pu);
	return n;
}

bool process_unwind_busy(struct process_unwind *pu)
{
	/* Queued or finished builds; one running is not counted, as
	 * before the queue was shared. */
	return work_queue_waiting(&pu->builds);
}

static void free_jobs(struct process_unwind *pu, struct work_item *it)
{
	while (it) {
		struct unwind_job *j = unwind_job_of(it);

		it = it->next;
		if (j->fd >= 0)
			close(j->fd);
		if (j->array.fd >= 0)
			close(j->array.fd);
		unwind_table_free(&j->table);
		if (j->f->slot < pu->nufiles)
			pu->ufiles[j->f->slot].pending = false;
		file_table_put(pu->procs->files, j->f);
		free(j);
	}
}

void process_unwind_stop_worker(struct process_unwind *pu)
{
	if (!pu->builds.started)
		return;
	/* A build in progress (seconds for a big or hostile file) stops at
	 * its next FDE (stopping): close must not wait for it. */
	free_jobs(pu, work_queue_stop(&pu->builds));
	if (pu->notify_fd >= 0)
		close(pu->notify_fd);
	pu->notify_fd = -1;
}

void process_unwind_init(struct process_unwind *pu, struct process_table *t,
			 struct file_cache *files, int files_fd, int procs_fd)
{
	memset(pu, 0, sizeof(*pu));
	pu->notify_fd = -1;
	work_queue_init(&pu->builds, 0);
	pu->files = files;
	unwind_maps_init(&pu->maps, files_fd, procs_fd);
	pu->procs = t;
}

void process_unwind_free(struct process_unwind *pu)
{
	unwind_maps_free(&pu->maps);
	free(pu->ufiles);
	pu->ufiles = NULL;
	pu->nufiles = 0;
}

/*
 * The stack-copy walk's memory (unwind_walk.h accessors): the stack is the
 * copy only, the mappings are the process's as userspace knows them, the
 * rows are the chunks' (through their mappings: no syscall per probe).
 */
struct copy_walk {
	const uint64_t *words; /* the copy: [sp0, sp0 + 8 * nwords) */
	uint64_t sp0;
	uint32_t nwords;
	struct process_unwind *pu;
	struct process *p;
	struct otelprof_bpf_mapping m;	 /* the last mapping looked at */
	uint32_t idx;			 /* its index in p->maps */
	struct proc_mapping *unresolved; /* the mapping it stopped at */
};

/* Any alignment, as bpf_probe_read_user reads. */
static int copy_read(void *ctx, uint64_t addr, uint64_t *out)
{
	const struct copy_walk *c = ctx;
	uint64_t off = addr - c->sp0, len = (uint64_t)c->nwords * 8;

	if (addr < c->sp0 || off >= len || len - off < 8)
		return -1;
	memcpy(out, (const unsigned char *)c->words + off, 8);
	return 0;
}

/* The search reads start and end only; the file is looked at (and maybe
 * loaded) once a frame is in it (copy_resolve). */
static const struct otelprof_bpf_mapping *copy_mapping(void *ctx, uint32_t idx)
{
	struct copy_walk *c = ctx;

	if (idx >= c->p->maps.n)
		return NULL;
	c->idx = idx;
	memset(&c->m, 0, sizeof(c->m));
	c->m.start = c->p->maps.v[idx].start;
	c->m.end = c->p->maps.v[idx].end;
	return &c->m;
}

/* What the search found is the last mapping it looked at (c->idx): no
 * second search. */
static const struct otelprof_bpf_mapping *
copy_resolve(void *ctx, const struct otelprof_bpf_mapping *found)
{
	struct copy_walk *c = ctx;

	if (found != &c->m)
		return NULL;
	fill_mapping(c->pu, &c->p->maps.v[c->idx], &c->m);
	if (!c->p->maps.v[c->idx].file_tried &&
	    c->p->maps.v[c->idx].kind == PROC_MAPPING_FILE)
		c->unresolved = &c->p->maps.v[c->idx];
	return &c->m;
}

static void *copy_rows(void *ctx, uint32_t id)
{
	const struct copy_walk *c = ctx;

	return unwind_maps_chunk(&c->pu->maps, id);
}

static const struct unwind_packed_row *copy_row(void *ctx, void *rows,
						uint32_t idx)
{
	const struct unwind_chunk *ch = rows;

	(void)ctx;
	return idx < ch->nrows ? &ch->rows[idx] : NULL;
}

#define UNWIND_READ_U64(ctx, addr, out) copy_read((ctx), (addr), (out))
#define UNWIND_BIG_MAPPING(ctx, idx)	copy_mapping((ctx), (idx))
#define UNWIND_RESOLVE_MAPPING(ctx, m)	copy_resolve((ctx), (m))
#define UNWIND_ROWS(ctx, id)		copy_rows((ctx), (id))
#define UNWIND_ROW(ctx, rows, idx)	copy_row((ctx), (rows), (idx))
#include "unwind_walk.h"

static void walk_copy(struct copy_walk *c, struct unwind_walk *w,
		      const struct otelprof_sample_event *e, uint64_t *frames,
		      uint32_t max)
{
	/* All of the process's mappings, as the big mappings of the
	 * kernel walk (which knows BIG_MAPPINGS_PER_PROCESS of them). */
	w->proc.n = 0;
	w->proc.big_base = 0;
	w->proc.big_n = (uint32_t)c->p->maps.n;
	unwind_walk_begin(w, e->user_ip, e->user_sp, e->user_bp);
#ifdef __aarch64__
	unwind_walk_set_lr(w, e->user_lr);
#endif
	if (!w->r.pc)
		return;
	while (!unwind_walk_frame(c, w, frames, max))
		;
}

void process_unwind_copy(struct process_unwind *pu, struct process *p,
			 const struct otelprof_sample_event *e,
			 uint64_t *frames, uint32_t max,
			 struct unwind_copy *out)
{
	/* interpreter frames, if any, follow the copy */
	struct copy_walk c = {.words = e->words,
			      .sp0 = e->user_sp,
			      .nwords = e->n_user - 2 * e->n_interp,
			      .pu = pu,
			      .p = p};
	struct unwind_walk w;

	if (c.nwords > OTELPROF_USTACK_WORDS)
		c.nwords = OTELPROF_USTACK_WORDS;
	walk_copy(&c, &w, e, frames, max);
	out->n = w.n;
	out->flags = w.flags;
	out->error = w.error;
	out->unresolved =
		w.error == OTELPROF_CNT_UNWIND_PENDING ? c.unresolved : NULL;
}

void process_unwind_count_copy(struct process_unwind *pu,
			       const struct unwind_copy *c)
{
	if (c->error && c->error < OTELPROF_CNT_MAX)
		pu->counters.copy_stops[c->error]++;
}
