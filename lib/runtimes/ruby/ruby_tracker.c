// SPDX-License-Identifier: Apache-2.0
#include "runtimes/ruby/ruby_tracker.h"

#include <bpf/bpf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "context/tls_location.h"
#include "elf/elf_dynsym.h"
#include "elf/elf_file.h"
#include "elf/tls_symbols.h"
#include "filestore/file_cache.h"
#include "process/mapped_file.h"
#include "rt_ruby.skel.h"
#include "util/debug_log.h"

/* The native function each run of Ruby frames goes above: every vm_exec
 * call of the VM loop is one (exported by libruby up to 3.1; where it is
 * not named, the Ruby frames go after the native ones). */
#define RUBY_LOOP_FUNCTION "rb_vm_exec"

/* Stack copy of a Ruby process: 7 KiB, so 64 of its frames (2 words
 * each, appended by its walk) still fit after it. */
#define RUBY_COPY_KB 7

/* ---- per-process state, by pid ---- */

static bool pid_eq(const void *ctx, uint32_t idx)
{
	const void *const *c = ctx;
	const struct ruby_tracker *t = c[0];

	return t->rp[idx]->pid == *(const uint32_t *)c[1];
}

static struct ruby_process *find(const struct ruby_tracker *t, uint32_t pid)
{
	const void *ctx[2] = {t, &pid};
	uint32_t idx;

	if (!idxmap_find(&t->by_pid, hash_u64(pid), pid_eq, ctx, &idx))
		return NULL;
	return t->rp[idx];
}

static struct ruby_process *process_add(struct ruby_tracker *t, uint32_t pid,
					const struct ruby_layout *l)
{
	struct ruby_process *rp = find(t, pid);

	if (rp)
		return rp;
	if (t->nrp == t->caprp) {
		uint32_t ncap = t->caprp ? t->caprp * 2 : 16;
		struct ruby_process **n = realloc(t->rp, ncap * sizeof(*n));

		if (!n)
			return NULL;
		t->rp = n;
		t->caprp = ncap;
	}
	rp = ruby_process_new(pid, t->files ? &t->files->budget : NULL);
	if (!rp)
		return NULL;
	rp->layout = l;
	if (idxmap_insert(&t->by_pid, hash_u64(pid), t->nrp)) {
		ruby_process_free(rp);
		return NULL;
	}
	t->rp[t->nrp++] = rp;
	return rp;
}

static void process_remove(struct ruby_tracker *t, uint32_t pid)
{
	const void *ctx[2] = {t, &pid};
	uint32_t idx, last;

	if (!idxmap_find(&t->by_pid, hash_u64(pid), pid_eq, ctx, &idx))
		return;
	ruby_process_free(t->rp[idx]);
	idxmap_remove(&t->by_pid, hash_u64(pid), idx);
	last = --t->nrp;
	if (idx != last) {
		/* the last entry moves into the hole */
		uint32_t moved = t->rp[last]->pid;

		idxmap_remove(&t->by_pid, hash_u64(moved), last);
		t->rp[idx] = t->rp[last];
		(void)idxmap_insert(&t->by_pid, hash_u64(moved), idx);
	}
}

/* ---- finding Ruby in a process ---- */

/*
 * Put process p in the kernel: its ruby_procs entry, then runtime_procs,
 * which sends its samples through the walk. The first Ruby process asks
 * for the walk program; until it is loaded (another thread) p waits,
 * native stacks only, and kernel_ready writes it.
 */
static void kernel_write(struct ruby_tracker *t, struct process *p)
{
	struct ruby_process *rp = find(t, p->pid);
	uint8_t mode = OTELPROF_RT_MODE_AFTER;
	int fd;

	if (!rp || !rp->layout || rp->in_kernel || !t->progs)
		return;
	switch (runtime_programs_want(t->progs, OTELPROF_RT_RUBY,
				      &ruby_runtime.program)) {
	case RUNTIME_PROGRAM_READY:
		break;
	case RUNTIME_PROGRAM_LOADING:
		t->rd.counters.waited++;
		return;
	default:
		return; /* no kernel walk here: native frames */
	}
	fd = runtime_programs_map_fd(t->progs, OTELPROF_RT_RUBY, "ruby_procs");
	if (rp->jit_step)
		mode |= OTELPROF_RT_F_JIT_STEP;
	if (fd < 0 || bpf_map_update_elem(fd, &p->pid, &rp->walk, BPF_ANY) ||
	    runtime_programs_attach(t->progs, p->pid, OTELPROF_RT_RUBY, mode,
				    RUBY_COPY_KB)) {
		t->rd.counters.map_errors++;
		return;
	}
	rp->in_kernel = true;
}

static void dynsym_lookup(int fd, struct ruby_symbols *out)
{
	static const char *const names[] = {
		"ruby_version", "rb_thread_current", "ruby_current_ec",
		"rb_vm_exec",	"rb_iseq_eval",	     "rb_iseq_eval_main",
		"rb_id2str",	"rb_yjit_init"};
	uint64_t v[8];

	memset(out, 0, sizeof(*out));
	(void)elf_dynsym_lookup(fd, NULL, names, 8, v);
	(void)elf_dynsym_lookup(fd, NULL, ruby_call_names, RUBY_CALLS,
				out->calls);
	out->version = v[0];
	out->thread_current = v[1];
	out->current_ec = v[2];
	out->vm_exec = v[3];
	out->iseq_eval = v[4];
	out->iseq_eval_main = v[5];
	out->id2str = v[6];
	out->yjit_init = v[7];
}

/*
 * x86_64's YJIT code has no CFI: its frames go to the walk's JIT step
 * (ruby.bpf.c), which takes a frame only where it returns into the VM's
 * code, the file's executable load. aarch64's YJIT keeps a frame record
 * ({x29, x30}): the frame-pointer step already follows it.
 */
static void jit_step_place(struct ruby_process *rp, const struct elf_file *f,
			   uint64_t bias, const struct ruby_symbols *s)
{
#if defined(__x86_64__)
	for (size_t i = 0; s->yjit_init && i < f->sym.nloads; i++) {
		const struct elf_load *l = &f->sym.loads[i];
		uint64_t lo = bias + l->vaddr, hi = lo + l->filesz;

		if (!(l->flags & PF_X) || !l->filesz || hi < lo)
			continue;
		rp->walk.vm_text_lo = lo;
		rp->walk.vm_text_hi = hi;
		rp->jit_step = true;
		return;
	}
#else
	(void)rp;
	(void)f;
	(void)bias;
	(void)s;
#endif
}

/* Where the file's exported ruby_current_ec is, by its TLS relocation
 * (a TLS descriptor on aarch64); kind 0 if not exported (3.3). */
static void ec_relocation(int fd, uint64_t bias, bool is_main,
			  struct ruby_symbols *out)
{
	struct tls_ctx_symbol s;
	Elf *e;

	memset(&out->ec_loc, 0, sizeof(out->ec_loc));
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return;
	(void)tls_symbol_lookup(e, "ruby_current_ec", &s, NULL);
	elf_end(e);
	(void)tls_location_of(&s, bias, is_main, &out->ec_loc);
}

static void tracker_sync(struct ruby_tracker *t, struct process *p,
			 const struct process_change *c)
{
	struct ruby_process *rp = find(t, p->pid);
	bool fresh_only = c->why == PROCESS_RESCANNED && !rp;

	if (rp && (rp->layout || rp->unknown_reported))
		return; /* Ruby does not move */
	if (fresh_only && !c->added)
		return;
	for (size_t i = 0; i < p->maps.n; i++) {
		struct proc_mapping *m = &p->maps.v[i];
		struct ruby_symbols s;
		struct elf_file *f;
		const char *base;
		uint64_t bias;
		int fd;

		if (m->kind != PROC_MAPPING_FILE || !m->path ||
		    (fresh_only && !m->fresh))
			continue;
		base = strrchr(m->path, '/');
		base = base ? base + 1 : m->path;
		if (strncmp(base, "libruby", 7) && strncmp(base, "ruby", 4))
			continue;
		f = file_cache_of(t->files, m->file);
		if (!f || !file_mapping_bias(m, f, &bias))
			continue;
		fd = mapped_file_open((pid_t)p->pid, m);
		if (fd < 0)
			continue;
		dynsym_lookup(fd, &s);
		if (s.version && s.thread_current)
			ec_relocation(fd, bias,
				      p->exe_path &&
					      !strcmp(m->path, p->exe_path),
				      &s);
		close(fd);
		if (!s.version || !s.thread_current)
			continue;
		rp = process_add(t, p->pid, NULL);
		if (!rp)
			return;
		if (!ruby_identify(&t->rd, rp, &s, bias)) {
			/* Reported once; its stacks stay native. */
			rp->unknown_reported = true;
			t->rd.counters.unknown++;
			return;
		}
		t->rd.counters.found++;
		jit_step_place(rp, f, bias, &s);
		kernel_write(t, p);
		return;
	}
}

static void tracker_forget(struct ruby_tracker *t, struct process *p)
{
	struct ruby_process *rp = find(t, p->pid);

	if (!rp)
		return;
	if (rp->in_kernel && t->progs) {
		int fd = runtime_programs_map_fd(t->progs, OTELPROF_RT_RUBY,
						 "ruby_procs");

		runtime_programs_detach(t->progs, p->pid);
		if (fd >= 0)
			bpf_map_delete_elem(fd, &p->pid);
	}
	process_remove(t, p->pid);
}

void ruby_tracker_init(struct ruby_tracker *t, struct process_table *procs,
		       struct file_cache *files, struct runtime_programs *progs)
{
	memset(t, 0, sizeof(*t));
	t->procs = procs;
	t->files = files;
	t->progs = progs;
	t->rd.read_mem = process_memory_read;
	idxmap_init(&t->by_pid);
}

void ruby_tracker_free(struct ruby_tracker *t)
{
	for (uint32_t i = 0; i < t->nrp; i++)
		ruby_process_free(t->rp[i]);
	free(t->rp);
	idxmap_free(&t->by_pid);
	memset(t, 0, sizeof(*t));
}

/* ---- the runtime protocol ---- */

static void rt_init(void *rt, struct process_table *procs,
		    struct file_cache *files, struct runtime_programs *progs)
{
	ruby_tracker_init(rt, procs, files, progs);
}

static void rt_sync(void *rt, struct process *p, const struct process_change *c)
{
	tracker_sync(rt, p, c);
}

static void rt_kernel_ready(void *rt, struct process *p)
{
	kernel_write(rt, p);
}

static void rt_forget(void *rt, struct process *p)
{
	tracker_forget(rt, p);
}

static bool rt_name_frame(void *rt, struct process *p, uint64_t iseq,
			  uint64_t pc, uint64_t now_ns,
			  struct runtime_frame *out)
{
	struct ruby_tracker *t = rt;
	struct ruby_process *rp = find(t, p->pid);

	return rp && ruby_frame(&t->rd, rp, iseq, pc, now_ns, out);
}

static bool rt_is_loop(void *rt, struct process *p, uint64_t pc)
{
	const struct ruby_process *rp = find(rt, p->pid);

	return rp && rp->loop_lo && pc > rp->loop_lo && pc <= rp->loop_hi;
}

/* A C function's pair ends a run only where C code called it. */
static bool rt_call_run(uint64_t w0, uint64_t w1)
{
	return (w0 & OTELPROF_RUBY_ME_TAG) && !w1;
}

static bool rt_is_call(void *rt, struct process *p, uint64_t pc)
{
	const struct ruby_process *rp = find(rt, p->pid);

	for (size_t i = 0; rp && i < RUBY_CALLS; i++)
		if (pc > rp->call_lo[i] && pc <= rp->call_hi[i])
			return true;
	return false;
}

static void rt_counters(const void *rt, struct runtime_counters *out)
{
	const struct ruby_counters *c =
		&((const struct ruby_tracker *)rt)->rd.counters;

	*out = (struct runtime_counters){
		.found = c->found,
		.unknown = c->unknown,
		.map_errors = c->map_errors,
		.frame_errors = c->read_errors + c->over_budget,
		.waited = c->waited,
	};
}

static void rt_free(void *rt)
{
	ruby_tracker_free(rt);
}

static const void *program_elf(size_t *size)
{
	return ruby_bpf__elf_bytes(size);
}

const struct runtime_ops ruby_runtime = {
	.name = "ruby",
	.id = OTELPROF_RT_RUBY,
	.mode = OTELPROF_RT_MODE_AFTER,
	.copy_kb = RUBY_COPY_KB,
	.loop_function = RUBY_LOOP_FUNCTION,
	.state_size = sizeof(struct ruby_tracker),
	.program = {"ruby", program_elf},
	.init = rt_init,
	.sync = rt_sync,
	.kernel_ready = rt_kernel_ready,
	.forget = rt_forget,
	.name_frame = rt_name_frame,
	.counters = rt_counters,
	.free = rt_free,
	.is_loop = rt_is_loop,
	.call_run = rt_call_run,
	.is_call = rt_is_call,
};
