// SPDX-License-Identifier: Apache-2.0
#include "process/process_table.h"
#include "util/debug_log.h"
#include "process/mapped_file.h"
#include "process/proc_file.h"
#include "util/clock.h"

#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

void process_table_stamp_files(struct process_table *t)
{
	for (uint32_t i = 0; i < t->nslots; i++) {
		struct process *p = t->procs[i];

		for (size_t k = 0; p && k < p->maps.n; k++) {
			struct file *f = p->maps.v[k].file;

			if (f && f->last_used_ns < p->last_seen_ns)
				f->last_used_ns = p->last_seen_ns;
		}
	}
}

void process_table_init(struct process_table *t, struct file_table *files)
{
	memset(t, 0, sizeof(*t));
	idxmap_init(&t->index);
	t->files = files;
	snprintf(t->proc_root, sizeof(t->proc_root), "/proc");
	t->clk_tck = sysconf(_SC_CLK_TCK);
	if (t->clk_tck <= 0 || t->clk_tck > 1000000000)
		t->clk_tck = 100;
}

/* Note what changed in p for the caller (merged with a change it has not
 * taken yet: NEW stays NEW, counts add up). */
static void note_change(struct process_table *t, struct process *p,
			const struct process_change *c)
{
	if (p->change_pending) {
		if (c->why < p->change.why)
			p->change.why = c->why;
		p->change.added += c->added;
		p->change.removed += c->removed;
		return;
	}
	p->change = *c;
	p->change_pending = true;
	p->next_changed = NULL;
	if (t->changed_last)
		t->changed_last->next_changed = p;
	else
		t->changed = p;
	t->changed_last = p;
}

static void tell(struct process_table *t, struct process *p,
		 enum process_change_why why)
{
	struct process_change c = {why, 0, 0};

	note_change(t, p, &c);
}

static bool held_young(const struct process *p, uint64_t *now)
{
	if (!p->young_until_ns || p->sampled)
		return false;
	if (!*now)
		*now = boot_ns();
	return *now < p->young_until_ns;
}

struct process *process_table_take_changed(struct process_table *t,
					   struct process_change *c)
{
	struct process *p = t->changed, *prev = NULL;
	uint64_t now = 0;

	/* oldest first, past the young still waiting for a sample */
	while (p && held_young(p, &now)) {
		prev = p;
		p = p->next_changed;
	}
	if (!p)
		return NULL;
	if (prev)
		prev->next_changed = p->next_changed;
	else
		t->changed = p->next_changed;
	if (t->changed_last == p)
		t->changed_last = prev;
	p->next_changed = NULL;
	p->change_pending = false;
	p->young_until_ns = 0;
	*c = p->change;
	return p;
}

void process_table_young(struct process_table *t, struct process *p,
			 uint64_t now_ns)
{
	if (t->young_ns && p->change_pending && p->change.why == PROCESS_NEW &&
	    !p->sampled)
		p->young_until_ns = now_ns + t->young_ns;
}

/* p leaves the changed list (it is being removed). */
static void drop_change(struct process_table *t, struct process *p)
{
	struct process **pp = &t->changed, *prev = NULL;

	if (!p->change_pending)
		return;
	if (p->young_until_ns && !p->sampled)
		t->counters.gone_young++;
	while (*pp && *pp != p) {
		prev = *pp;
		pp = &(*pp)->next_changed;
	}
	if (*pp)
		*pp = p->next_changed;
	if (t->changed_last == p)
		t->changed_last = prev;
	p->next_changed = NULL;
	p->change_pending = false;
}

static void release_maps(struct process_table *t, struct process *p)
{
	for (size_t i = 0; i < p->maps.n; i++)
		if (p->maps.v[i].file)
			file_table_put(t->files, p->maps.v[i].file);
	proc_maps_free(&p->maps);
}

static void process_destroy(struct process_table *t, struct process *p)
{
	release_maps(t, p);
	free(p->exe_path);
	free(p->env);
	free(p);
}

void process_table_free(struct process_table *t)
{
	for (uint32_t i = 0; i < t->nslots; i++)
		if (t->procs[i])
			process_destroy(t, t->procs[i]);
	while (t->removed)
		process_destroy(t, process_table_take_removed(t));
	if (t->ghost)
		process_destroy(t, t->ghost);
	free(t->procs);
	idxmap_free(&t->index);
	memset(t, 0, sizeof(*t));
}

static bool pid_eq(const void *ctx, uint32_t slot)
{
	const struct process_table *t = ((const void *const *)ctx)[0];
	uint32_t pid = *(const uint32_t *)((const void *const *)ctx)[1];

	return t->procs[slot] && t->procs[slot]->pid == pid;
}

static struct process *find(struct process_table *t, uint32_t pid)
{
	const void *ctx[2] = {t, &pid};
	uint32_t slot;

	if (idxmap_find(&t->index, hash_u64(pid), pid_eq, ctx, &slot))
		return t->procs[slot];
	return NULL;
}

struct process *process_table_find(struct process_table *t, uint32_t pid)
{
	struct process *p = find(t, pid);

	return p && !p->exited ? p : NULL;
}

struct process *process_table_find_serial(struct process_table *t, uint32_t pid,
					  uint64_t serial)
{
	struct process *p = find(t, pid);

	return p && p->serial == serial ? p : NULL;
}

void process_set_exec_path(struct process *p, const char *path, size_t len)
{
	size_t n = strnlen(path, len);
	char *copy;
	const char *s;

	if (*p->exe_path || !n || n == len)
		return;
	copy = strndup(path, n);
	if (!copy)
		return;
	free(p->exe_path);
	p->exe_path = copy;
	s = strrchr(copy, '/');
	p->exe_name = s ? s + 1 : copy;
}

/* Out of the table now; freed once the caller took it (the stages may
 * still refer to it until they forget it). FIFO: forgotten in the order
 * removed. */
static void remove_proc(struct process_table *t, struct process *p)
{
	struct process **pp = &t->removed;

	drop_change(t, p);
	idxmap_remove(&t->index, hash_u64(p->pid), p->slot);
	t->procs[p->slot] = NULL;
	p->removed = true;
	p->next_removed = NULL;
	while (*pp)
		pp = &(*pp)->next_removed;
	*pp = p;
}

struct process *process_table_take_removed(struct process_table *t)
{
	struct process *p = t->removed;

	if (p) {
		t->removed = p->next_removed;
		p->next_removed = NULL;
	}
	return p;
}

void process_table_release(struct process_table *t, struct process *p)
{
	process_destroy(t, p);
}

/* Read and parse pid's maps into *maps (no table state touched: may run
 * with the caller's lock released). 0, or -errno; *bad: lines skipped. */
static int read_maps(const char *proc_root, uint32_t pid,
		     struct proc_maps *maps, unsigned *bad)
{
	char path[96], *text;
	long n;
	int e;

	*bad = 0;
	snprintf(path, sizeof(path), "%s/%u/maps", proc_root, pid);
	n = proc_read_file(path, &text, PROC_MAPS_MAX_BYTES);
	if (n <= 0)
		debug_log("%s: %s", path, n < 0 ? strerror((int)-n) : "empty");
	if (n < 0)
		return (int)n;
	e = proc_maps_parse(text, (size_t)n, maps, bad);
	free(text);
	return e ? -EINVAL : 0;
}

/* p's mappings become maps (taken). *c (may be NULL): how many were added
 * (marked fresh) and removed. */
static void apply_maps(struct process_table *t, struct process *p,
		       struct proc_maps *maps, struct process_change *c)
{
	size_t same = 0;

	/* Carry resolved files over to mappings that did not change. */
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_mapping *old =
			proc_maps_find(&p->maps, maps->v[i].start);

		bool unchanged = old && old->start == maps->v[i].start &&
				 old->end == maps->v[i].end &&
				 old->offset == maps->v[i].offset &&
				 old->inode == maps->v[i].inode;

		same += unchanged;
		maps->v[i].fresh = !unchanged;
		if (unchanged && old->file_tried) {
			maps->v[i].file = old->file;
			maps->v[i].file_tried = 1;
			if (old->file)
				file_ref(old->file);
		}
	}
	if (c) {
		c->added = (uint32_t)(maps->n - same);
		c->removed = (uint32_t)(p->maps.n - same);
	}
	/* Context candidates the last scan did not list are new. */
	for (uint32_t i = 0; i < maps->ncand; i++) {
		maps->cand[i].fresh = 1;
		for (uint32_t k = 0; k < p->maps.ncand; k++)
			if (p->maps.cand[k].start == maps->cand[i].start &&
			    p->maps.cand[k].end == maps->cand[i].end)
				maps->cand[i].fresh = 0;
	}
	release_maps(t, p);
	p->maps = *maps;
}

/* Reads p's executable mappings again. False if nothing could be read;
 * *c (may be NULL): how many were added (marked fresh) and removed. */
static bool scan_maps(struct process_table *t, struct process *p,
		      struct process_change *c)
{
	uint64_t t0 = mono_ns();
	struct proc_maps maps;
	unsigned bad;

	if (read_maps(t->proc_root, p->pid, &maps, &bad)) {
		t->counters.scan_errors++;
		return false;
	}
	p->scan_cost_ns = mono_ns() - t0;
	if (bad)
		t->counters.scan_errors++;
	apply_maps(t, p, &maps, c);
	return true;
}

static void scan_info(struct process_table *t, struct process *p)
{
	char path[96], buf[PROC_PATH_MAX], *text;
	ssize_t n;
	long len;

	snprintf(path, sizeof(path), "%s/%u/exe", t->proc_root, p->pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	free(p->exe_path);
	p->exe_path = NULL;
	if (n > 0) {
		static const char del[] = " (deleted)";

		buf[n] = '\0';
		if ((size_t)n > sizeof(del) - 1 &&
		    !strcmp(buf + n - (sizeof(del) - 1), del))
			buf[n - (sizeof(del) - 1)] = '\0';
		p->exe_path = strdup(buf);
	}
	if (!p->exe_path)
		p->exe_path = strdup("");
	if (p->exe_path) {
		const char *s = strrchr(p->exe_path, '/');

		p->exe_name = s ? s + 1 : p->exe_path;
	} else {
		p->exe_name = "";
	}

	/* stat (its start time, and the name: one file fewer than comm)
	 * after exe: an exec switches the executable first and the name
	 * last, so a read racing with an exec sees the new name only if it
	 * saw the new executable (which keeps the sample's comm check in
	 * get() honest). */
	snprintf(path, sizeof(path), "%s/%u/stat", t->proc_root, p->pid);
	len = proc_read_file(path, &text, 64 * 1024);
	if (len >= 0) {
		p->info_ok = !proc_stat_parse_starttime(text, (size_t)len,
							&p->start_time);
		if (p->info_ok)
			proc_stat_parse_comm(text, (size_t)len, p->comm);
		free(text);
	}
	if (!p->info_ok)
		t->counters.scan_errors++;

	free(p->env);
	snprintf(path, sizeof(path), "%s/%u/environ", t->proc_root, p->pid);
	p->env = proc_env_read(path, t->env_names, &t->counters.env);

	snprintf(path, sizeof(path), "%s/%u/cgroup", t->proc_root, p->pid);
	p->container_id[0] = '\0';
	len = proc_read_file(path, &text, 1 << 20);
	if (len >= 0) {
		if (proc_cgroup_parse_container_id(text, (size_t)len,
						   p->container_id))
			p->container_id[0] = '\0';
		free(text);
	}
}

/*
 * Is p the process that started at start_ns (0: unknown, assume so)? The
 * kernel's start_boottime is exact; /proc's starttime is the same clock in
 * ticks, truncated, for entries no event has dated yet.
 */
static bool same_process(struct process_table *t, struct process *p,
			 uint64_t start_ns)
{
	if (!start_ns)
		return true;
	if (p->start_ns)
		return p->start_ns == start_ns;
	if (p->start_time &&
	    start_ns / (1000000000ull / (uint64_t)t->clk_tck) != p->start_time)
		return false;
	p->start_ns = start_ns;
	return true;
}

/* The comm thread tid of p has now, or "" if unknown. */
static void thread_comm(struct process_table *t, const struct process *p,
			uint32_t tid, char out[16])
{
	char path[128], *text;
	long len;

	out[0] = '\0';
	if (tid == p->pid) {
		if (p->info_ok)
			memcpy(out, p->comm, 16);
		return;
	}
	snprintf(path, sizeof(path), "%s/%u/task/%u/comm", t->proc_root, p->pid,
		 tid);
	len = proc_read_file(path, &text, 4096);
	if (len <= 0)
		return;
	while (len && text[len - 1] == '\n')
		len--;
	if (len > 15)
		len = 15;
	memcpy(out, text, (size_t)len);
	out[len] = '\0';
	free(text);
}

/* p (fresh from /proc) as a one-off entry for a pre-exec sample. */
static struct process *make_ghost(struct process_table *t, struct process *p,
				  const char *comm)
{
	snprintf(p->comm, sizeof(p->comm), "%.15s", comm);
	free(p->exe_path);
	p->exe_path = strdup("");
	p->exe_name = p->exe_path ? p->exe_path : "";
	p->ghost = true;
	if (!p->exe_path) {
		process_destroy(t, p);
		return NULL;
	}
	if (t->ghost)
		process_destroy(t, t->ghost);
	t->ghost = p;
	return p;
}

static int insert(struct process_table *t, struct process *p);

static struct process *get(struct process_table *t, uint32_t pid, uint32_t tid,
			   const char *comm, uint64_t start_ns, uint64_t now_ns)
{
	struct process *p = find(t, pid);

	/* Signed: a sample taken just before the exit can be read after
	 * its exit event. */
	if (p && p->exited &&
	    (int64_t)(now_ns - p->exit_ns) > (int64_t)PROCESS_EXIT_GRACE_NS) {
		/* The pid was reused after an exit we saw. */
		remove_proc(t, p);
		p = NULL;
	}
	if (p && !same_process(t, p, start_ns)) {
		debug_log("pid %u reused: %s started %llu "
			  "(ticks %llu), now %llu",
			  pid, p->comm, (unsigned long long)p->start_ns,
			  (unsigned long long)p->start_time,
			  (unsigned long long)start_ns);
		t->counters.pid_reuses++;
		remove_proc(t, p);
		p = NULL;
	}
	if (p && p->forked && comm && tid == pid &&
	    strncmp(comm, p->comm, sizeof(p->comm) - 1)) {
		/* Named otherwise than its parent: it exec'ed since the
		 * fork (the exec event is still behind this sample). */
		remove_proc(t, p);
		p = NULL;
	}
	if (p) {
		p->last_seen_ns = now_ns;
		return p;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->start_ns = start_ns;
	p->serial = ++t->next_serial;
	p->last_seen_ns = now_ns;
	if (comm)
		snprintf(p->comm, sizeof(p->comm), "%.15s", comm);
	scan_info(t, p);
	if (start_ns && p->info_ok &&
	    start_ns / (1000000000ull / (uint64_t)t->clk_tck) !=
		    p->start_time) {
		/* /proc already shows another process under this pid (ours
		 * is gone): nothing there is ours. */
		free(p->exe_path);
		p->exe_path = strdup("");
		p->exe_name = p->exe_path ? p->exe_path : "";
		p->info_ok = false;
		p->container_id[0] = '\0';
		free(p->env);
		p->env = NULL;
		if (comm)
			snprintf(p->comm, sizeof(p->comm), "%.15s", comm);
		p->ghost = true;
	}
	if (comm && tid && !p->ghost) {
		char now_comm[16];

		/* The sampled thread has another name now: the process
		 * exec'ed since the sample. */
		thread_comm(t, p, tid, now_comm);
		if (*now_comm && strncmp(now_comm, comm, 15))
			return make_ghost(t, p, comm);
	}
	if (p->ghost) {
		if (!p->exe_path) {
			process_destroy(t, p);
			return NULL;
		}
		/* Kept in the table (its samples share a resource) but
		 * without mappings. */
		goto insert;
	}
	scan_maps(t, p, NULL);
	p->last_scan_ns = now_ns;
	if (!p->exe_path) {
		process_destroy(t, p);
		return NULL;
	}
insert:
	return insert(t, p) ? NULL : p;
}

/* Put p in the table and tell the consumers. On failure p is freed. */
static int insert(struct process_table *t, struct process *p)
{
	uint32_t slot;

	for (slot = 0; slot < t->nslots; slot++)
		if (!t->procs[slot])
			break;
	if (slot == t->nslots) {
		if (t->nslots == t->cap) {
			uint32_t ncap = t->cap ? t->cap * 2 : 256;
			struct process **nv =
				realloc(t->procs, ncap * sizeof(*nv));

			if (!nv) {
				process_destroy(t, p);
				return -ENOMEM;
			}
			t->procs = nv;
			t->cap = ncap;
		}
		t->nslots++;
	}
	if (idxmap_insert(&t->index, hash_u64(p->pid), slot)) {
		process_destroy(t, p);
		return -ENOMEM;
	}
	p->slot = slot;
	t->procs[slot] = p;
	tell(t, p, PROCESS_NEW);
	return 0;
}

struct process *process_table_get(struct process_table *t, uint32_t pid,
				  const char *comm, uint64_t start_ns,
				  uint64_t now_ns)
{
	return get(t, pid, 0, comm, start_ns, now_ns);
}

struct process *process_table_get_sample(struct process_table *t, uint32_t pid,
					 uint32_t tid, const char *comm,
					 uint64_t start_ns, uint64_t now_ns)
{
	struct process *p = get(t, pid, tid, comm, start_ns, now_ns);

	if (p && !p->sampled) {
		p->sampled = true;
		if (p->young_dropped) { /* a sample from before its exit */
			p->young_dropped = false;
			t->counters.gone_young--;
			tell(t, p, PROCESS_NEW);
		}
	}
	return p;
}

bool process_table_rescan(struct process_table *t, struct process *p,
			  uint64_t now_ns)
{
	struct process_change c = {PROCESS_RESCANNED, 0, 0};

	if (p->ghost)
		return false;
	p->last_scan_ns = now_ns;
	p->kernel_map_count = 0;
	scan_maps(t, p, &c);
	note_change(t, p, &c);
	return true;
}

/* The shared budget, refilled by elapsed time. */
static bool budget_left(struct process_table *t, uint64_t now)
{
	if (!t->rescan_budget_at_ns) {
		t->rescan_budget_ns = (int64_t)PROCESS_RESCAN_BUDGET_MAX_NS;
	} else if (now > t->rescan_budget_at_ns) {
		uint64_t add = (now - t->rescan_budget_at_ns) / 1000 *
			       (PROCESS_RESCAN_BUDGET_PER_S / 1000000);

		t->rescan_budget_ns +=
			add > PROCESS_RESCAN_BUDGET_MAX_NS
				? (int64_t)PROCESS_RESCAN_BUDGET_MAX_NS
				: (int64_t)add;
		if (t->rescan_budget_ns > (int64_t)PROCESS_RESCAN_BUDGET_MAX_NS)
			t->rescan_budget_ns =
				(int64_t)PROCESS_RESCAN_BUDGET_MAX_NS;
	}
	t->rescan_budget_at_ns = now;
	return t->rescan_budget_ns > 0;
}

/* Rescan now and price the next one. unlocked: read the maps with the
 * caller's lock released; p may be gone after that (returns NULL). */
static struct process *rescan_priced(struct process_table *t, struct process *p,
				     uint64_t now, bool unlocked)
{
	uint64_t t0 = mono_ns(), cost, gap;
	struct process_change c = {PROCESS_RESCANNED, 0, 0};
	bool read_ok;

	p->rescan_held = false;
	p->last_scan_ns = now;
	if (unlocked && t->unlock) {
		uint32_t pid = p->pid;
		uint64_t serial = p->serial;
		struct proc_maps maps;
		unsigned bad;
		int e;

		/* Asked for again meanwhile: held for later, not inline. */
		p->next_rescan_ns = UINT64_MAX;
		t->unlock(t->lock_ctx);
		e = read_maps(t->proc_root, pid, &maps, &bad);
		t->relock(t->lock_ctx);
		/* A new hold: a new slice. */
		t->slice_end_ns = mono_ns() + PROCESS_LOAD_SLICE_NS;
		p = find(t, pid);
		if (!p || p->serial != serial || p->exited) {
			if (!e)
				proc_maps_free(&maps);
			return NULL;
		}
		read_ok = !e;
		if (e || bad)
			t->counters.scan_errors++;
		if (read_ok) {
			p->scan_cost_ns = mono_ns() - t0;
			apply_maps(t, p, &maps, &c);
		}
	} else {
		read_ok = scan_maps(t, p, &c);
	}
	if (read_ok && (c.added || c.removed))
		gap = PROCESS_RESCAN_MIN_GAP_NS;
	else if (!p->rescan_gap_ns)
		gap = PROCESS_RESCAN_MIN_GAP_NS;
	else if (p->rescan_gap_ns < PROCESS_RESCAN_MAX_GAP_NS / 2)
		gap = p->rescan_gap_ns * 2;
	else
		gap = PROCESS_RESCAN_MAX_GAP_NS;
	cost = mono_ns() - t0;
	t->rescan_budget_ns -= (int64_t)cost;
	t->counters.rescans_asked++;
	p->rescan_gap_ns = gap;
	if (gap < cost * PROCESS_RESCAN_COST_FACTOR)
		gap = cost * PROCESS_RESCAN_COST_FACTOR;
	if (gap > PROCESS_RESCAN_MAX_GAP_NS)
		gap = PROCESS_RESCAN_MAX_GAP_NS;
	p->next_rescan_ns = now + gap;
	note_change(t, p, &c);
	return p;
}

bool process_table_rescan_asked(struct process_table *t, struct process *p,
				uint32_t map_count)
{
	uint64_t now = boot_ns();

	if (p->ghost || p->exited)
		return false;
	/* What the kernel side compares with after the scan: a count from
	 * before it, so a change during the scan is reported again. */
	if (map_count || !p->rescan_held)
		p->kernel_map_count = map_count;
	if (now < p->next_rescan_ns || !budget_left(t, now)) {
		if (!p->rescan_held)
			t->counters.rescans_held++;
		p->rescan_held = t->any_held = true;
		return false;
	}
	if (t->unlock && p->scan_cost_ns > PROCESS_RESCAN_INLINE_MAX_NS) {
		/* Too slow to read here, under the lock: the drain pass
		 * reads it (process_table_run_held), this pass. */
		p->rescan_held = t->any_held = true;
		return false;
	}
	rescan_priced(t, p, now, false);
	return true;
}

bool process_table_run_held(struct process_table *t)
{
	uint64_t now;
	uint32_t n = t->nslots;
	bool held = false;

	if (!t->any_held)
		return false;
	now = boot_ns();
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = (t->held_cursor + k) % n;
		/* The table may have changed while a read had the lock
		 * released. */
		struct process *p = i < t->nslots ? t->procs[i] : NULL;

		if (!p || !p->rescan_held)
			continue;
		held = true;
		if (now < p->next_rescan_ns)
			continue;
		if (p->ghost || p->exited) {
			p->rescan_held = false;
			continue;
		}
		if (!budget_left(t, now) || process_table_slice_over(t)) {
			t->held_cursor = i; /* its turn comes first next time */
			return false;
		}
		t->held_cursor = (i + 1) % n;
		rescan_priced(t, p, now, true);
		return true;
	}
	/* every slot seen: none held, none to look at until one is */
	t->any_held = held;
	return false;
}

void process_table_set_lock(struct process_table *t, void (*unlock)(void *),
			    void (*relock)(void *), void *ctx)
{
	t->unlock = unlock;
	t->relock = relock;
	t->lock_ctx = ctx;
}

void process_table_begin_pass(struct process_table *t)
{
	t->slice_end_ns = mono_ns() + PROCESS_LOAD_SLICE_NS;
	t->slice_spent = false;
}

bool process_table_slice_over(struct process_table *t)
{
	if (!t->slice_end_ns || mono_ns() <= t->slice_end_ns)
		return false;
	t->slice_spent = true;
	return true;
}

void process_table_files_changed(struct process_table *t)
{
	/* Every process mapping one of them learns its symbols (the
	 * context and interpreter trackers look for theirs, the unwinder
	 * pushes the mapping again). */
	for (uint32_t i = 0; i < t->nslots; i++) {
		struct process *p = t->procs[i];

		for (size_t k = 0; p && k < p->maps.n; k++) {
			struct file *f = p->maps.v[k].file;

			if (f && f->changed) {
				tell(t, p, PROCESS_FILES_READY);
				break;
			}
		}
	}
	file_table_clear_changed(t->files);
}

bool process_table_resume_loads(struct process_table *t)
{
	bool whole = t->resume_cursor == 0;

	if (!t->any_deferred)
		return false;
	/* A cursor, not a scan from the start: a process the loader's full
	 * queue defers again waits for the next pass, not this one. */
	for (; t->resume_cursor < t->nslots; t->resume_cursor++) {
		struct process *p = t->procs[t->resume_cursor];

		if (!p || !p->loads_deferred)
			continue;
		if (process_table_slice_over(t))
			return false; /* from here next pass */
		p->loads_deferred = false;
		/* marks it again if still not done */
		tell(t, p, PROCESS_FILES_READY);
		t->resume_cursor++;
		return true;
	}
	t->resume_cursor = 0;
	/* from slot 0 to the end without one: none left */
	if (whole)
		t->any_deferred = false;
	return false;
}

void process_table_defer_loads(struct process_table *t, struct process *p)
{
	p->loads_deferred = t->any_deferred = true;
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

void *process_vdso_image(size_t *len)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	size_t size = base ? own_vdso_size(base) : 0;
	void *copy = size ? malloc(size) : NULL;

	*len = copy ? size : 0;
	if (copy)
		memcpy(copy, (const void *)(uintptr_t)base, size);
	return copy;
}

int process_mapping_open(struct process_table *t, const struct process *p,
			 const struct proc_mapping *m)
{
	int fd = mapped_file_open((pid_t)p->pid, m);

	if (fd == MAPPED_FILE_REFUSED)
		t->counters.files_refused++;
	else if (fd < 0)
		t->counters.scan_errors++;
	return fd;
}

int process_file_reopen(void *table, const struct file *f)
{
	struct process *p =
		process_table_find_serial(table, f->owner_pid, f->owner_serial);
	struct file_id id;

	if (!p)
		return -ESRCH;
	/* The owner's own mapping of f: map_files names that inode. */
	for (size_t i = 0; i < p->maps.n; i++) {
		int fd;

		if (p->maps.v[i].file != f)
			continue;
		fd = mapped_file_open((pid_t)p->pid, &p->maps.v[i]);
		if (fd < 0)
			return fd;
		if (!file_id_of_fd(fd, &id) && !memcmp(&id, &f->id, sizeof(id)))
			return fd;
		close(fd);
		return -ESTALE;
	}
	return -ENOENT;
}

int process_root_open(const struct process_table *t, const struct process *p)
{
	char root[96];

	snprintf(root, sizeof(root), "%s/%u/root", t->proc_root, p->pid);
	return open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

void process_table_exec(struct process_table *t, uint32_t pid)
{
	struct process *p = find(t, pid);

	/* A new image: everything we knew is stale. */
	if (p)
		remove_proc(t, p);
}

/* A deep copy of the parent's mappings, sharing its files. */
static int copy_maps(const struct proc_maps *from, struct proc_maps *to)
{
	*to = *from;
	to->v = NULL;
	to->n = 0;
	if (!from->n)
		return 0;
	to->v = calloc(from->n, sizeof(*to->v));
	if (!to->v)
		return -ENOMEM;
	for (size_t i = 0; i < from->n; i++) {
		to->v[i] = from->v[i];
		to->v[i].path = strdup(from->v[i].path ? from->v[i].path : "");
		if (!to->v[i].path) {
			proc_maps_free(to);
			return -ENOMEM;
		}
		to->n++;
		if (to->v[i].file)
			file_ref(to->v[i].file);
	}
	return 0;
}

void process_table_fork(struct process_table *t, uint32_t parent_pid,
			uint32_t pid, uint64_t start_ns, uint64_t now_ns)
{
	struct process *parent = process_table_find(t, parent_pid), *p;

	if (!parent || parent->ghost || !start_ns || parent_pid == pid)
		return;
	p = find(t, pid);
	if (p) {
		if (same_process(t, p, start_ns))
			return; /* a sample got there first */
		t->counters.pid_reuses++;
		remove_proc(t, p);
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->pid = pid;
	p->start_ns = start_ns;
	p->serial = ++t->next_serial;
	p->last_seen_ns = now_ns;
	p->last_scan_ns = now_ns;
	memcpy(p->comm, parent->comm, sizeof(p->comm));
	memcpy(p->container_id, parent->container_id, sizeof(p->container_id));
	p->info_ok = parent->info_ok;
	p->forked = true;
	/* most forks exec or exit at once: its copy waits for a sample */
	if (t->young_ns)
		p->young_until_ns = now_ns + t->young_ns;
	p->exe_path = strdup(parent->exe_path ? parent->exe_path : "");
	if (!p->exe_path || copy_maps(&parent->maps, &p->maps)) {
		free(p->exe_path);
		free(p);
		return;
	}
	p->exe_name = strrchr(p->exe_path, '/') ? strrchr(p->exe_path, '/') + 1
						: p->exe_path;
	/* A fork starts with its parent's environment. */
	if (parent->env) {
		size_t sz = offsetof(struct proc_env, v) +
			    parent->env->n * sizeof(parent->env->v[0]);

		p->env = malloc(sz);
		if (p->env)
			memcpy(p->env, parent->env, sz);
	}
	insert(t, p);
}

void process_table_exit(struct process_table *t, uint32_t pid,
			uint64_t start_ns, uint64_t now_ns)
{
	struct process *p = find(t, pid);

	if (p && same_process(t, p, start_ns)) {
		p->exited = true;
		p->exit_ns = now_ns;
		/* Gone unsampled while young: off the changed list now (it
		 * stays in the table for samples still in flight, which
		 * note its change again), so that the list holds only the
		 * few young processes still running. */
		if (p->change_pending && p->young_until_ns && !p->sampled) {
			drop_change(t, p);
			p->young_dropped = true;
		}
	}
}

void process_table_sweep(struct process_table *t, uint64_t idle_before_ns)
{
	for (uint32_t i = 0; i < t->nslots; i++) {
		struct process *p = t->procs[i];
		char path[96];

		if (!p)
			continue;
		if (p->exited && p->exit_ns < idle_before_ns) {
			remove_proc(t, p);
			continue;
		}
		if (p->last_seen_ns < idle_before_ns) {
			snprintf(path, sizeof(path), "%s/%u", t->proc_root,
				 p->pid);
			if (access(path, F_OK))
				remove_proc(t, p);
		}
	}
}

uint32_t process_table_count(const struct process_table *t)
{
	return (uint32_t)t->index.len;
}
