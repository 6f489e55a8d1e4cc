// SPDX-License-Identifier: Apache-2.0
#include "process/process_table.h"
#include "process/mapped_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void process_table_init(struct process_table *t, struct file_cache *files)
{
	memset(t, 0, sizeof(*t));
	idxmap_init(&t->index);
	t->files = files;
	snprintf(t->proc_root, sizeof(t->proc_root), "/proc");
}

static void release_maps(struct process_table *t, struct process *p)
{
	for (size_t i = 0; i < p->maps.n; i++)
		if (p->maps.v[i].file)
			file_cache_put(t->files, p->maps.v[i].file);
	proc_maps_free(&p->maps);
}

static void process_destroy(struct process_table *t, struct process *p)
{
	release_maps(t, p);
	free(p->exe_path);
	free(p);
}

void process_table_free(struct process_table *t)
{
	for (uint32_t i = 0; i < t->nslots; i++)
		if (t->procs[i])
			process_destroy(t, t->procs[i]);
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

static void remove_proc(struct process_table *t, struct process *p)
{
	if (t->hooks.on_remove)
		t->hooks.on_remove(t->hooks.ctx, p);
	idxmap_remove(&t->index, hash_u64(p->pid), p->slot);
	t->procs[p->slot] = NULL;
	process_destroy(t, p);
}

static void scan_maps(struct process_table *t, struct process *p)
{
	char path[96], *text;
	struct proc_maps maps;
	unsigned bad = 0;
	long n;

	snprintf(path, sizeof(path), "%s/%u/maps", t->proc_root, p->pid);
	n = proc_read_file(path, &text, PROC_MAPS_MAX_BYTES);
	if (getenv("OTELPROF_DEBUG") && n <= 0)
		fprintf(stderr, "otelprof: %s: %s\n", path,
			n < 0 ? strerror((int)-n) : "empty");
	if (n < 0) {
		t->scan_errors++;
		return;
	}
	if (proc_maps_parse(text, (size_t)n, &maps, &bad)) {
		free(text);
		t->scan_errors++;
		return;
	}
	free(text);
	if (bad)
		t->scan_errors++;
	/* Carry resolved files over to mappings that did not change. */
	for (size_t i = 0; i < maps.n; i++) {
		const struct proc_mapping *old =
			proc_maps_find(&p->maps, maps.v[i].start);

		if (old && old->start == maps.v[i].start &&
		    old->end == maps.v[i].end &&
		    old->offset == maps.v[i].offset &&
		    old->inode == maps.v[i].inode && old->file_tried) {
			maps.v[i].file = old->file;
			maps.v[i].file_tried = 1;
			if (old->file)
				file_cache_ref(old->file);
		}
	}
	release_maps(t, p);
	p->maps = maps;
}

static void scan_info(struct process_table *t, struct process *p)
{
	char path[96], buf[PROC_PATH_MAX], *text;
	ssize_t n;
	long len;

	snprintf(path, sizeof(path), "%s/%u/stat", t->proc_root, p->pid);
	len = proc_read_file(path, &text, 64 * 1024);
	if (len >= 0) {
		p->info_ok = !proc_stat_parse_starttime(text, (size_t)len,
							&p->start_time);
		free(text);
	}
	if (!p->info_ok)
		t->scan_errors++;

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

	/* comm after exe: an exec switches the executable first and the
	 * name last, so a read racing with an exec sees the new name only if
	 * it saw the new executable (which keeps the sample's comm check in
	 * get() honest). */
	snprintf(path, sizeof(path), "%s/%u/comm", t->proc_root, p->pid);
	len = proc_read_file(path, &text, 4096);
	if (len > 0) {
		size_t k = (size_t)len;

		while (k && (text[k - 1] == '\n'))
			k--;
		if (k >= sizeof(p->comm))
			k = sizeof(p->comm) - 1;
		memcpy(p->comm, text, k);
		p->comm[k] = '\0';
		free(text);
	}

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
 * The pid of a process seen exiting shows up again: samples of the same
 * process still in flight (its last moments, or other threads when the
 * leader exited first), or a new process that got the pid? /proc knows by
 * the start time. A sample under the exited process's own name within a
 * millisecond of the exit is taken as its own; otherwise look, at most once
 * a millisecond per process.
 */
static bool pid_reused(struct process_table *t, struct process *p,
		       const char *comm, uint64_t now_ns)
{
	bool other = comm && *p->comm &&
		     strncmp(comm, p->comm, sizeof(p->comm) - 1),
	     reused = false;
	char path[96], *text;
	uint64_t start;
	long len;

	if (now_ns - p->reuse_checked_ns < PROCESS_REUSE_CHECK_NS ||
	    (!other &&
	     (int64_t)(now_ns - p->exit_ns) < (int64_t)PROCESS_REUSE_CHECK_NS))
		return false;
	if (!p->info_ok) /* no start time to compare */
		return other || (int64_t)(now_ns - p->exit_ns) >=
					(int64_t)PROCESS_REUSE_CHECK_NS;
	p->reuse_checked_ns = now_ns;
	snprintf(path, sizeof(path), "%s/%u/stat", t->proc_root, p->pid);
	len = proc_read_file(path, &text, 64 * 1024);
	if (len < 0) /* gone too: another name is another process */
		return other;
	if (!proc_stat_parse_starttime(text, (size_t)len, &start)) {
		/* Within one clock tick (10 ms) start times tie: then the
		 * name in stat (a zombie's too) tells. */
		const char *a = memchr(text, '(', (size_t)len);
		const char *b = memrchr(text, ')', (size_t)len);

		reused = start != p->start_time;
		if (!reused && a && b > a)
			reused = (size_t)(b - a - 1) != strlen(p->comm) ||
				 memcmp(a + 1, p->comm, (size_t)(b - a - 1));
	}
	free(text);
	if (!reused && other && *p->exe_path) {
		/* Started within the same clock tick: another executable
		 * under another name is another process too. */
		char exe[PROC_PATH_MAX];
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%u/exe", t->proc_root, p->pid);
		n = readlink(path, exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = '\0';
			reused = strcmp(exe, p->exe_path) != 0;
		}
	}
	return reused;
}

/* The comm thread tid of pid has now, or "" if unknown. */
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

static struct process *get(struct process_table *t, uint32_t pid, uint32_t tid,
			   const char *comm, uint64_t now_ns)
{
	struct process *p = find(t, pid);
	uint32_t slot;

	/* Signed: a sample taken just before the exit can be read after
	 * its exit event. */
	if (p && p->exited &&
	    ((int64_t)(now_ns - p->exit_ns) > (int64_t)PROCESS_EXIT_GRACE_NS ||
	     pid_reused(t, p, comm, now_ns))) {
		/* The pid was reused after an exit we saw. */
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
	p->serial = ++t->next_serial;
	p->last_seen_ns = now_ns;
	if (comm)
		snprintf(p->comm, sizeof(p->comm), "%.15s", comm);
	scan_info(t, p);
	if (comm && tid) {
		char now_comm[16];

		/*
		 * /proc describes the process as it is now, the sample as it
		 * was: if the sampled thread has another name now, the
		 * process exec'ed since (its exec event is still behind us
		 * in the ring buffer). Do not file the old image's sample
		 * under the new image: a one-sample entry named after the
		 * sample's comm, with no mappings, kept out of the table.
		 */
		thread_comm(t, p, tid, now_comm);
		if (*now_comm && strncmp(now_comm, comm, 15)) {
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
	}
	scan_maps(t, p);
	p->last_scan_ns = now_ns;
	if (!p->exe_path) {
		process_destroy(t, p);
		return NULL;
	}
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
				return NULL;
			}
			t->procs = nv;
			t->cap = ncap;
		}
		t->nslots++;
	}
	if (idxmap_insert(&t->index, hash_u64(pid), slot)) {
		process_destroy(t, p);
		return NULL;
	}
	p->slot = slot;
	t->procs[slot] = p;
	if (t->hooks.on_maps)
		t->hooks.on_maps(t->hooks.ctx, p);
	return p;
}

struct process *process_table_get(struct process_table *t, uint32_t pid,
				  const char *comm, uint64_t now_ns)
{
	return get(t, pid, 0, comm, now_ns);
}

struct process *process_table_get_sample(struct process_table *t, uint32_t pid,
					 uint32_t tid, const char *comm,
					 uint64_t now_ns)
{
	return get(t, pid, tid, comm, now_ns);
}

bool process_table_rescan(struct process_table *t, struct process *p,
			  uint64_t now_ns, uint64_t min_interval_ns)
{
	if (p->ghost || now_ns - p->last_scan_ns < min_interval_ns)
		return false;
	p->last_scan_ns = now_ns;
	scan_maps(t, p);
	if (t->hooks.on_maps)
		t->hooks.on_maps(t->hooks.ctx, p);
	return true;
}

struct elf_file *process_mapping_file(struct process_table *t,
				      struct process *p, struct proc_mapping *m)
{
	int fd, err = 0;

	if (m->file_tried)
		return m->file;
	m->file_tried = 1;
	if (m->kind == PROC_MAPPING_VDSO) {
		m->file = file_cache_get_vdso(t->files);
		return m->file;
	}
	if (m->kind != PROC_MAPPING_FILE)
		return NULL;
	fd = mapped_file_open((pid_t)p->pid, m);
	if (fd < 0) {
		t->scan_errors++;
		return NULL;
	}
	m->file = file_cache_get_fd(t->files, fd, m->path, &err);
	close(fd);
	return m->file;
}

void process_table_exec(struct process_table *t, uint32_t pid)
{
	struct process *p = find(t, pid);

	/* A new image: everything we knew is stale. */
	if (p)
		remove_proc(t, p);
}

void process_table_check_exec(struct process_table *t, struct process *p,
			      const char *path, size_t len, uint64_t exec_ns)
{
	uint64_t tick_ns = 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK);
	size_t n = strnlen(path, len), blen;
	const char *base, *now_base;
	char comm[16], *copy;

	if (!n || n == len)
		return;
	/* The kernel names an exec'ed process after the file name. */
	base = memrchr(path, '/', n);
	base = base ? base + 1 : path;
	blen = n - (size_t)(base - path);
	snprintf(comm, sizeof(comm), "%.*s", (int)blen, base);
	if (!*p->comm) /* /proc was gone already */
		memcpy(p->comm, comm, sizeof(comm));
	if (!p->info_ok)
		return;
	now_base = strrchr(p->exe_path, '/');
	now_base = now_base ? now_base + 1 : p->exe_path;
	/* /proc/PID/stat starttime counts clock ticks of the boot clock, as
	 * exec_ns does: a start after the exec is another process. Within a
	 * tick: another name and another executable than the exec's. */
	if (p->start_time * tick_ns <= exec_ns &&
	    (!strcmp(comm, p->comm) ||
	     (strlen(now_base) == blen && !memcmp(now_base, base, blen))))
		return;
	copy = strndup(path, n);
	if (!copy)
		return;
	if (t->hooks.on_remove) /* the kernel must not use its mappings */
		t->hooks.on_remove(t->hooks.ctx, p);
	release_maps(t, p);
	free(p->exe_path);
	p->exe_path = copy;
	p->exe_name = copy + (base - path);
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	p->container_id[0] = '\0';
	p->info_ok = false;
	p->ghost = true;
}

void process_table_exit(struct process_table *t, uint32_t pid, uint64_t now_ns)
{
	struct process *p = find(t, pid);

	if (p) {
		p->exited = true;
		p->exit_ns = now_ns;
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
