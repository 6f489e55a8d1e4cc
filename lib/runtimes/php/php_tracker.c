// SPDX-License-Identifier: Apache-2.0
#include "runtimes/php/php_tracker.h"
#include "util/debug_log.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/elf_dynsym.h"
#include "elf/elf_file.h"
#include "filestore/file_cache.h"
#include "process/mapped_file.h"
#include "rt_php.skel.h"

/* The executor's loop: every Zend engine defines it; PHP frames go above
 * the native frame that ran them. */
#define PHP_LOOP_SYMBOL "execute_ex"
/* Stack copy of a PHP process: 7 KiB, so 64 of its frames (2 words each,
 * appended by its walk) still fit after it. */
#define PHP_COPY_KB 7
/* The version string is looked for in at most this much of the file, a
 * block at a time. */
#define PHP_SCAN_MAX   (256ull << 20)
#define PHP_SCAN_BLOCK (1u << 20)

static void php_process_free(struct php_process *pp)
{
	if (!pp)
		return;
	for (uint32_t i = 0; i < pp->nfuncs; i++) {
		free(pp->funcs[i].name);
		free(pp->funcs[i].file);
	}
	free(pp->funcs);
	idxmap_free(&pp->index);
	mem_account_release(&pp->account);
	free(pp);
}

/* The version in the file's "X-Powered-By: PHP/x.y.z" (read-only data;
 * PHP_VERSION is compiled into it). 0, or -ENOENT. */
static int version_scan(int fd, unsigned *major, unsigned *minor,
			unsigned *release)
{
	const size_t nlen = sizeof(PHP_VERSION_NEEDLE) - 1, keep = nlen + 16;
	char *buf = malloc(PHP_SCAN_BLOCK + keep);
	uint64_t off = 0;
	size_t have = 0;
	int err = -ENOENT;

	if (!buf)
		return -ENOMEM;
	while (off < PHP_SCAN_MAX) {
		ssize_t n = pread(fd, buf + have, PHP_SCAN_BLOCK, (off_t)off);
		const char *hit;

		if (n <= 0)
			break;
		off += (uint64_t)n;
		have += (size_t)n;
		hit = memmem(buf, have, PHP_VERSION_NEEDLE, nlen);
		if (hit) {
			size_t at = (size_t)(hit - buf) + nlen;

			if (at + 12 > have) { /* the rest in the next block */
				n = pread(fd, buf + have, 16, (off_t)off);
				if (n > 0)
					have += (size_t)n;
			}
			err = php_version_parse(buf + at, have - at, major,
						minor, release)
				      ? -ENOENT
				      : 0;
			break;
		}
		/* keep the tail: the needle may straddle two blocks */
		if (have > keep) {
			memmove(buf, buf + have - keep, keep);
			have = keep;
		}
	}
	free(buf);
	return err;
}

static struct php_process *state(struct php_tracker *t, struct process *p)
{
	if (!p->php) {
		p->php = calloc(1, sizeof(*p->php));
		if (p->php) {
			idxmap_init(&p->php->index);
			mem_account_init(&p->php->account,
					 t->files ? &t->files->budget : NULL);
		}
	}
	return p->php;
}

/*
 * Put process p's executor in the kernel: its entry in php_procs, then
 * runtime_procs, which sends its samples through the walk. The first PHP
 * process asks for the walk program; until it is loaded (another thread)
 * p waits, native stacks only, and kernel_ready writes it.
 */
static void kernel_write(struct php_tracker *t, struct process *p)
{
	struct php_process *pp = p->php;
	struct otelprof_php_proc v;
	uint8_t mode;
	int fd;

	if (!pp || !pp->layout || pp->in_kernel)
		return;
	switch (runtime_programs_want(t->progs, OTELPROF_RT_PHP,
				      &php_runtime.program)) {
	case RUNTIME_PROGRAM_READY:
		break;
	case RUNTIME_PROGRAM_LOADING:
		t->counters.waited++;
		return;
	default:
		return; /* no kernel walk here: native frames */
	}
	fd = runtime_programs_map_fd(t->progs, OTELPROF_RT_PHP, "php_procs");
	v = pp->layout->walk;
	v.current_execute_data = pp->current_execute_data;
	v.jit_start = pp->jit_start;
	v.jit_end = pp->jit_end;
	v.vm_body_pc = pp->vm_body_pc;
	/* JIT code seen: its frames are handed to the walk's JIT step */
	mode = OTELPROF_RT_MODE_AFTER;
	if (pp->jit_end && pp->vm_body_pc)
		mode |= OTELPROF_RT_F_JIT_STEP;
	if (fd < 0 || bpf_map_update_elem(fd, &p->pid, &v, BPF_ANY) ||
	    runtime_programs_attach(t->progs, p->pid, OTELPROF_RT_PHP, mode,
				    PHP_COPY_KB)) {
		t->counters.map_errors++;
		return;
	}
	pp->in_kernel = true;
}

/* Is m a mapping of a Zend engine (php, php-fpm, libphp.so)? Its
 * executor_globals' ELF address then. */
static bool zend_engine(struct php_tracker *t, struct process *p,
			struct proc_mapping *m, uint64_t *bias, uint64_t *body,
			int *fdp)
{
	static const char *const names[] = {"executor_globals"};
	struct elf_file *f = file_cache_of(t->files, m->file);
	const struct elf_sym *loop;
	uint64_t eg = 0;
	int fd;

	*fdp = -1;
	if (!f || !(loop = elf_symbols_find(&f->sym, PHP_LOOP_SYMBOL)) ||
	    !file_mapping_bias(m, f, bias))
		return false;
	/* The middle of the VM's body: its prologue and early returns are
	 * at its start, the rule there is the one JIT code runs under.
	 * (+1: the walk looks a return address up one byte back.) */
	*body = loop->size >= 256 ? *bias + loop->addr + loop->size / 2 + 1 : 0;
	fd = mapped_file_open((pid_t)p->pid, m);
	if (fd < 0) {
		(void)state(t, p); /* looked for again */
		return false;
	}
	(void)elf_dynsym_lookup(fd, "executor_", names, 1, &eg);
	if (!eg) {
		close(fd);
		return false; /* a ZTS build (no such global): not yet */
	}
	*bias += eg;
	*fdp = fd;
	return true;
}

/*
 * opcache's JIT buffer: the executable part of its shared memory, an
 * anonymous shared mapping (shown as "/dev/zero (deleted)"). The largest
 * such mapping of the process; true if one was found (kept in pp).
 */
static bool jit_buffer(const struct process *p, struct php_process *pp)
{
	const struct proc_mapping *best = NULL;

	for (size_t i = 0; i < p->maps.n; i++) {
		const struct proc_mapping *m = &p->maps.v[i];

		if (m->path && m->deleted && !strcmp(m->path, "/dev/zero") &&
		    (!best || m->end - m->start > best->end - best->start))
			best = m;
	}
	if (!best)
		return false;
	pp->jit_start = best->start;
	pp->jit_end = best->end;
	return true;
}

static void php_sync(struct php_tracker *t, struct process *p,
		     const struct process_change *c)
{
	/* A rescan shows no engine the last look missed but among the
	 * mappings it added; one whose file could not be opened (state kept
	 * without a layout) is looked for again. */
	bool fresh_only = c->why == PROCESS_RESCANNED && !p->php;

	if (p->php && p->php->layout && !p->php->jit_end && c->added &&
	    jit_buffer(p, p->php)) {
		/* opcache mapped its JIT buffer after the engine was found:
		 * the kernel entry again, with it */
		debug_log("pid %u: opcache JIT buffer %#llx-%#llx", p->pid,
			  (unsigned long long)p->php->jit_start,
			  (unsigned long long)p->php->jit_end);
		p->php->in_kernel = false;
		kernel_write(t, p);
	}
	if (p->php && (p->php->layout || p->php->unknown_reported))
		return; /* an engine does not move */
	if (fresh_only && !c->added)
		return;
	for (size_t i = 0; i < p->maps.n; i++) {
		struct proc_mapping *m = &p->maps.v[i];
		unsigned major = 0, minor = 0, release = 0;
		const struct php_layout *l;
		struct php_process *pp;
		uint64_t eg, body;
		int fd, err;

		if (m->kind != PROC_MAPPING_FILE || !m->path ||
		    (fresh_only && !m->fresh) || !strstr(m->path, "php"))
			continue;
		if (!zend_engine(t, p, m, &eg, &body, &fd))
			continue;
		err = version_scan(fd, &major, &minor, &release);
		close(fd);
		pp = state(t, p);
		if (!pp)
			return;
		l = err ? NULL : php_layout_find(major, minor);
		if (!l) {
			/* Reported once; its stacks stay native. */
			pp->unknown_reported = true;
			t->counters.unknown_versions++;
			debug_log("pid %u: PHP %u.%u.%u has no known layout; "
				  "native frames only",
				  p->pid, major, minor, release);
			return;
		}
		pp->layout = l;
		pp->major = major;
		pp->minor = minor;
		pp->release = release;
		pp->current_execute_data = eg + l->eg_current_execute_data;
		pp->vm_body_pc = body;
		if (jit_buffer(p, pp))
			debug_log("pid %u: opcache JIT buffer %#llx-%#llx",
				  p->pid, (unsigned long long)pp->jit_start,
				  (unsigned long long)pp->jit_end);
		t->counters.found++;
		debug_log("pid %u: PHP %u.%u.%u in %s", p->pid, major, minor,
			  release, m->path);
		kernel_write(t, p);
		return;
	}
}

static void php_forget(struct php_tracker *t, struct process *p)
{
	if (p->php && p->php->in_kernel) {
		int fd = runtime_programs_map_fd(t->progs, OTELPROF_RT_PHP,
						 "php_procs");

		runtime_programs_detach(t->progs, p->pid);
		if (fd >= 0)
			bpf_map_delete_elem(fd, &p->pid);
	}
	php_process_free(p->php);
	p->php = NULL;
}

/* ---- functions ---- */

static bool func_eq(const void *ctx, uint32_t idx)
{
	const void *const *c = ctx;
	const struct php_process *pp = c[0];

	return pp->funcs[idx].addr == *(const uint64_t *)c[1];
}

static void clear_cache(struct php_process *pp)
{
	for (uint32_t i = 0; i < pp->nfuncs; i++) {
		free(pp->funcs[i].name);
		free(pp->funcs[i].file);
	}
	pp->nfuncs = 0;
	pp->bytes = 0;
	idxmap_clear(&pp->index);
	mem_account_release(&pp->account);
}

static void drop_strings(struct php_process *pp, struct php_cached_function *f)
{
	free(f->name);
	free(f->file);
	f->name = f->file = NULL;
	mem_account_uncharge(&pp->account, f->bytes);
	pp->bytes -= f->bytes;
	f->bytes = 0;
}

/* (Re)read function f from the process. */
static void resolve(struct php_tracker *t, struct process *p,
		    struct php_process *pp, struct php_cached_function *f,
		    uint64_t now)
{
	struct php_function *pf = malloc(sizeof(*pf));

	drop_strings(pp, f);
	f->ok = false;
	f->checked_ns = now;
	if (!pf)
		return;
	if (php_function_read(pp->layout, t->read_mem, &p->pid, f->addr, pf)) {
		t->counters.read_errors++;
		free(pf);
		return;
	}
	f->type = pf->type;
	f->name_ptr = pf->name_ptr;
	f->scope_ptr = pf->scope_ptr;
	f->file_ptr = pf->file_ptr;
	f->line_start = pf->line_start;
	f->line_end = pf->line_end;
	f->name = strdup(pf->name);
	f->file = pf->file[0] ? strdup(pf->file) : NULL;
	free(pf);
	if (!f->name) {
		drop_strings(pp, f);
		return;
	}
	f->bytes = (uint32_t)(sizeof(*f) + strlen(f->name) +
			      (f->file ? strlen(f->file) : 0));
	if (!mem_account_charge(&pp->account, f->bytes)) {
		/* Over the budget: keep nothing of it (the frame is left
		 * out) and look again at the next recheck. */
		t->counters.over_budget++;
		f->bytes = 0;
		free(f->name);
		free(f->file);
		f->name = f->file = NULL;
		return;
	}
	pp->bytes += f->bytes;
	f->ok = true;
}

static struct php_cached_function *function(struct php_tracker *t,
					    struct process *p,
					    struct php_process *pp,
					    uint64_t addr, uint64_t now)
{
	const void *ctx[2] = {pp, &addr};
	struct php_cached_function *f;
	uint32_t idx;

	if (idxmap_find(&pp->index, hash_u64(addr), func_eq, ctx, &idx)) {
		struct php_function h;

		f = &pp->funcs[idx];
		if (now - f->checked_ns < PHP_RECHECK_NS)
			return f->ok ? f : NULL;
		/* Still the same function? (a request's functions are freed
		 * at its end and their memory reused) */
		if (!php_function_header(pp->layout, t->read_mem, &p->pid, addr,
					 &h) &&
		    h.type == f->type && h.name_ptr == f->name_ptr &&
		    h.scope_ptr == f->scope_ptr && h.file_ptr == f->file_ptr &&
		    h.line_start == f->line_start) {
			f->checked_ns = now;
			return f->ok ? f : NULL;
		}
		resolve(t, p, pp, f, now);
		return f->ok ? f : NULL;
	}
	if (pp->bytes > PHP_CACHE_BUDGET)
		clear_cache(pp);
	if (pp->nfuncs == pp->cap) {
		uint32_t ncap = pp->cap ? pp->cap * 2 : 64;
		struct php_cached_function *nf =
			realloc(pp->funcs, ncap * sizeof(*nf));

		if (!nf)
			return NULL;
		pp->funcs = nf;
		pp->cap = ncap;
	}
	f = &pp->funcs[pp->nfuncs];
	memset(f, 0, sizeof(*f));
	f->addr = addr;
	if (idxmap_insert(&pp->index, hash_u64(addr), pp->nfuncs))
		return NULL;
	pp->nfuncs++;
	resolve(t, p, pp, f, now);
	return f->ok ? f : NULL;
}

bool php_frame(struct php_tracker *t, struct process *p, uint64_t word0,
	       uint64_t word1, uint64_t now_ns, struct runtime_frame *out)
{
	struct php_process *pp = p->php;
	uint32_t info = (uint32_t)(word1 >> 32), line = (uint32_t)word1;
	struct php_cached_function *f;
	const char *name;

	if (!pp || !pp->layout || !word0)
		return false;
	f = function(t, p, pp, word0, now_ns);
	if (!f)
		return false;
	name = f->name;
	if (f->type == 4)
		name = "{eval}";
	else if (!name[0])
		/* A file's top-level code: the script's own, or one it
		 * included (a nested executor call of code). */
		name = info & OTELPROF_PHP_CALL_TOP ? "{main}" : "{include}";
	/* The walk reports the running opline where the VM's registers
	 * showed it, else the one last stored into the frame, which may lag
	 * (opcache's JIT stores it rarely): a line outside the function's
	 * lines is another function's, not believed, and unknown (0). */
	if (f->type == 1 || line < f->line_start || line > f->line_end)
		line = 0;
	*out = (struct runtime_frame){
		.name = name,
		.file = f->file,
		.start_line = f->line_start,
		.line = line,
	};
	return true;
}

/* ---- the protocol ---- */

static void rt_init(void *rt, struct process_table *procs,
		    struct file_cache *files, struct runtime_programs *progs)
{
	struct php_tracker *t = rt;

	memset(t, 0, sizeof(*t));
	t->procs = procs;
	t->files = files;
	t->progs = progs;
	t->read_mem = process_memory_read;
}

static void rt_sync(void *rt, struct process *p, const struct process_change *c)
{
	php_sync(rt, p, c);
}

/* The walk program loaded: the processes found meanwhile go in. */
static void rt_kernel_ready(void *rt, struct process *p)
{
	kernel_write(rt, p);
}

static void rt_forget(void *rt, struct process *p)
{
	php_forget(rt, p);
}

static bool rt_name_frame(void *rt, struct process *p, uint64_t word0,
			  uint64_t word1, uint64_t now_ns,
			  struct runtime_frame *out)
{
	return php_frame(rt, p, word0, word1, now_ns, out);
}

static void rt_counters(const void *rt, struct runtime_counters *out)
{
	const struct php_counters *c =
		&((const struct php_tracker *)rt)->counters;

	*out = (struct runtime_counters){
		.found = c->found,
		.unknown = c->unknown_versions,
		.map_errors = c->map_errors,
		.frame_errors = c->read_errors + c->over_budget,
		.waited = c->waited,
	};
}

static void rt_free(void *rt)
{
	struct php_tracker *t = rt;
	struct process_table *procs = t->procs;

	/* The processes still in the table: their kernel entries go with
	 * the map. */
	for (uint32_t i = 0; procs && i < procs->nslots; i++) {
		struct process *p = procs->procs[i];

		if (p) {
			php_process_free(p->php);
			p->php = NULL;
		}
	}
	memset(t, 0, sizeof(*t));
}

static const void *program_elf(size_t *size)
{
	return php_bpf__elf_bytes(size);
}

const struct runtime_ops php_runtime = {
	.name = "php",
	.id = OTELPROF_RT_PHP,
	.mode = OTELPROF_RT_MODE_AFTER,
	.copy_kb = PHP_COPY_KB,
	.loop_function = PHP_LOOP_SYMBOL,
	.state_size = sizeof(struct php_tracker),
	.program = {"php", program_elf},
	.init = rt_init,
	.sync = rt_sync,
	.kernel_ready = rt_kernel_ready,
	.forget = rt_forget,
	.name_frame = rt_name_frame,
	.counters = rt_counters,
	.free = rt_free,
};
