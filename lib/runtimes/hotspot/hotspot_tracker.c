// SPDX-License-Identifier: Apache-2.0
#include "runtimes/hotspot/hotspot_tracker.h"
#include "filestore/file_cache.h"
#include "rt_hotspot.skel.h"
#include "util/debug_log.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_file.h"
#include "process/mapped_file.h"
#include "profiler_types.h"

static void hotspot_process_free(struct hotspot_process *hp)
{
	if (!hp)
		return;
	for (uint32_t i = 0; i < hp->n; i++) {
		free(hp->v[i].name);
		free(hp->v[i].system);
		free(hp->v[i].file);
	}
	free(hp->v);
	idxmap_free(&hp->index);
	mem_account_release(&hp->account);
	free(hp);
}

static struct hotspot_process *state(struct hotspot_tracker *t,
				     struct process *p)
{
	if (!p->jvm) {
		p->jvm = calloc(1, sizeof(*p->jvm));
		if (p->jvm) {
			p->jvm->pid = p->pid;
			idxmap_init(&p->jvm->index);
			mem_account_init(&p->jvm->account,
					 t->files ? &t->files->budget : NULL);
		}
	}
	return p->jvm;
}

/* What the kernel walker needs, from what we read. */
static void kernel_view(const struct hotspot_jvm *j,
			struct otelprof_jvm_proc *v)
{
	memset(v, 0, sizeof(*v));
	v->interp_low = j->interp_low;
	v->interp_high = j->interp_high;
	for (uint32_t i = 0; i < j->nheaps && i < OTELPROF_JVM_HEAPS; i++) {
		v->heaps[i].low = j->heaps[i].low;
		v->heaps[i].high = j->heaps[i].limit;
		v->heaps[i].segmap = j->heaps[i].segmap;
		v->heaps[i].log2_segment = j->heaps[i].log2_segment;
		v->nheaps = i + 1;
	}
	v->blob_offset = (uint16_t)j->l.heap_block_size;
	v->frame_size_off = (uint16_t)j->l.blob_frame_size;
	v->interp_method = (int8_t)j->l.frame_interp_method;
	v->interp_bcp = (int8_t)j->l.frame_interp_bcp;
	v->interp_sender_sp = -1; /* frame::interpreter_frame_sender_sp */
	if (j->l.frame_interp_sender_sp < 0)
		v->interp_sender_sp = (int8_t)j->l.frame_interp_sender_sp;
}

static bool is_libjvm(const char *path)
{
	const char *b = strrchr(path, '/');

	return b && !strcmp(b + 1, "libjvm.so");
}

/*
 * Put process p's JVM in the kernel: its code cache in jvm_procs, then
 * runtime_procs, which hands its Java frames to the walk. The first JVM
 * asks for the walk program; until it is loaded (another thread) p
 * waits, native stacks only, and kernel_ready writes it.
 */
static void kernel_write(struct hotspot_tracker *t, struct process *p)
{
	struct hotspot_process *hp = p->jvm;
	struct otelprof_jvm_proc v;
	int fd;

	if (!hp || !hp->ready || hp->in_kernel)
		return;
	switch (runtime_programs_want(t->progs, OTELPROF_RT_HOTSPOT,
				      &hotspot_runtime.program)) {
	case RUNTIME_PROGRAM_READY:
		break;
	case RUNTIME_PROGRAM_LOADING:
		t->counters.waited++;
		return;
	default:
		return; /* no kernel walk here: native frames */
	}
	fd = runtime_programs_map_fd(t->progs, OTELPROF_RT_HOTSPOT,
				     "jvm_procs");
	kernel_view(&hp->jvm, &v);
	if (fd < 0 || bpf_map_update_elem(fd, &p->pid, &v, BPF_ANY) ||
	    runtime_programs_attach(t->progs, p->pid, OTELPROF_RT_HOTSPOT,
				    OTELPROF_RT_MODE_STEP, 0)) {
		t->counters.map_errors++;
		return;
	}
	hp->in_kernel = true;
}

static void try_open(struct hotspot_tracker *t, struct process *p,
		     struct hotspot_process *hp, struct proc_mapping *m)
{
	struct hotspot_syms syms;
	const char *missing = NULL;
	struct elf_file *f;
	uint64_t bias;
	int fd, err;

	f = file_cache_of(t->files, m->file);
	if (!f || !file_mapping_bias(m, f, &bias))
		return;
	fd = mapped_file_open((pid_t)p->pid, m);
	if (fd < 0)
		return;
	err = hotspot_syms_from_file(fd, bias, &syms);
	close(fd);
	if (err) {
		hp->reported = true; /* a libjvm without VMStructs */
		t->counters.unknown++;
		return;
	}
	err = hotspot_jvm_open(&hp->jvm, &syms, t->read_mem, &hp->pid,
			       &missing);
	if (err) {
		/* A JVM still starting has its tables half filled: try
		 * again at its next rescan, then report it once. */
		if (++hp->tries < HS_OPEN_TRIES && !missing)
			return;
		hp->reported = true;
		t->counters.unknown++;
		debug_log("pid %u: JVM layout not usable "
			  "(%s, %d); native frames only",
			  p->pid, missing ? missing : "tables", err);
		return;
	}
	hp->ready = true;
	t->counters.found++;
	kernel_write(t, p);
}

void hotspot_tracker_sync(struct hotspot_tracker *t, struct process *p,
			  const struct process_change *c)
{
	/* A rescan shows no libjvm the last look missed but among the
	 * mappings it added; one seen but not usable yet (a JVM still
	 * starting) is looked at again. */
	bool fresh_only = c->why == PROCESS_RESCANNED && !p->jvm;

	if (p->jvm && (p->jvm->ready || p->jvm->reported))
		return; /* a code cache does not move */
	if (fresh_only && !c->added)
		return;
	for (size_t i = 0; i < p->maps.n; i++) {
		struct proc_mapping *m = &p->maps.v[i];
		struct hotspot_process *hp;

		if (m->kind != PROC_MAPPING_FILE || !m->path ||
		    (fresh_only && !m->fresh) || !is_libjvm(m->path))
			continue;
		hp = state(t, p);
		if (hp)
			try_open(t, p, hp, m);
		return;
	}
}

void hotspot_tracker_forget(struct hotspot_tracker *t, struct process *p)
{
	if (p->jvm && p->jvm->in_kernel) {
		int fd = runtime_programs_map_fd(t->progs, OTELPROF_RT_HOTSPOT,
						 "jvm_procs");

		runtime_programs_detach(t->progs, p->pid);
		if (fd >= 0)
			bpf_map_delete_elem(fd, &p->pid);
	}
	hotspot_process_free(p->jvm);
	p->jvm = NULL;
}

void hotspot_tracker_free(struct hotspot_tracker *t)
{
	struct process_table *procs = t->procs;

	/* The processes still in the table: their kernel entries go with
	 * the map. */
	for (uint32_t i = 0; procs && i < procs->nslots; i++) {
		struct process *p = procs->procs[i];

		if (p) {
			hotspot_process_free(p->jvm);
			p->jvm = NULL;
		}
	}
	memset(t, 0, sizeof(*t));
}

void hotspot_tracker_init(struct hotspot_tracker *t,
			  struct process_table *procs, struct file_cache *files,
			  struct runtime_programs *progs)
{
	memset(t, 0, sizeof(*t));
	t->procs = procs;
	t->files = files;
	t->progs = progs;
	t->read_mem = process_memory_read;
}

/* The walk program loaded: the JVMs found meanwhile go in. */
static void kernel_ready(void *rt, struct process *p)
{
	kernel_write(rt, p);
}

static void rt_init(void *rt, struct process_table *procs,
		    struct file_cache *files, struct runtime_programs *progs)
{
	hotspot_tracker_init(rt, procs, files, progs);
}

static void rt_sync(void *rt, struct process *p, const struct process_change *c)
{
	hotspot_tracker_sync(rt, p, c);
}

static void rt_forget(void *rt, struct process *p)
{
	hotspot_tracker_forget(rt, p);
}

static void rt_free(void *rt)
{
	hotspot_tracker_free(rt);
}

static bool rt_name_frame(void *rt, struct process *p, uint64_t word0,
			  uint64_t word1, uint64_t now_ns,
			  struct runtime_frame *out)
{
	struct hotspot_tracker *t = rt;
	struct hotspot_frame_info fi;

	if (!hotspot_frame(t, p, word0, word1, now_ns, &fi))
		return false;
	*out = (struct runtime_frame){.name = fi.name,
				      .system = fi.system,
				      .file = fi.file,
				      .line = fi.line,
				      .inl = t->named_inl,
				      .ninlined = fi.ninlined};
	for (uint32_t k = 0; k < fi.ninlined; k++)
		t->named_inl[k] = (struct runtime_inline){
			fi.inl[k].name, fi.inl[k].system, fi.inl[k].file,
			fi.inl[k].line, 0};
	return true;
}

static void rt_counters(const void *rt, struct runtime_counters *out)
{
	const struct hotspot_counters *c =
		&((const struct hotspot_tracker *)rt)->counters;

	*out = (struct runtime_counters){
		.found = c->found,
		.unknown = c->unknown,
		.map_errors = c->map_errors,
		.frame_errors =
			c->read_errors + c->stale_frames + c->inline_errors,
		.waited = c->waited,
	};
}

static const void *program_elf(size_t *size)
{
	return hotspot_bpf__elf_bytes(size);
}

const struct runtime_ops hotspot_runtime = {
	.name = "hotspot",
	.id = OTELPROF_RT_HOTSPOT,
	.mode = OTELPROF_RT_MODE_STEP,
	.copy_kb = 0,
	.state_size = sizeof(struct hotspot_tracker),
	.program = {"hotspot", program_elf},
	.init = rt_init,
	.sync = rt_sync,
	.kernel_ready = kernel_ready,
	.forget = rt_forget,
	.name_frame = rt_name_frame,
	.counters = rt_counters,
	.free = rt_free,
};

/* ---- methods ---- */

static bool method_eq(const void *ctx, uint32_t idx)
{
	const void *const *c = ctx;
	const struct hotspot_process *hp = c[0];

	return hp->v[idx].method == *(const uint64_t *)c[1];
}

static char *join(const char *klass, const char *name, const char *sig)
{
	size_t n = strlen(klass) + strlen(name) + strlen(sig) + 2;
	char *s = malloc(n), *q;

	if (!s)
		return NULL;
	snprintf(s, n, "%s.%s%s", klass, name, sig);
	for (q = s; *q && q < s + strlen(klass); q++)
		if (*q == '/')
			*q = '.'; /* java/lang/String -> java.lang.String */
	return s;
}

static void resolve(struct hotspot_tracker *t, struct hotspot_process *hp,
		    struct hotspot_method_entry *e, uint64_t now)
{
	static struct hotspot_method m; /* 4 KiB: not on the stack */

	free(e->name);
	free(e->system);
	free(e->file);
	e->name = e->system = e->file = NULL;
	mem_account_uncharge(&hp->account, e->bytes);
	hp->bytes -= e->bytes;
	e->bytes = 0;
	e->checked_ns = now;
	e->ok = false;
	if (hotspot_method_read(&hp->jvm, e->method, &m)) {
		t->counters.read_errors++;
		return;
	}
	e->const_method = m.const_method;
	e->linetable = m.linetable;
	e->code_base = m.const_method + hp->jvm.l.cmethod_size;
	e->name = join(m.klass, m.name, "");
	e->system = join(m.klass, m.name, m.signature);
	e->file = m.source[0] ? strdup(m.source) : NULL;
	if (!e->name || !e->system)
		return;
	e->bytes = (uint32_t)(sizeof(*e) + 2 * strlen(e->system) +
			      (e->file ? strlen(e->file) : 0));
	if (!mem_account_charge(&hp->account, e->bytes)) {
		e->bytes = 0;
		return;
	}
	hp->bytes += e->bytes;
	e->ok = true;
}

static struct hotspot_method_entry *method_entry(struct hotspot_tracker *t,
						 struct hotspot_process *hp,
						 uint64_t method, uint64_t now)
{
	const void *ctx[2] = {hp, &method};
	struct hotspot_method_entry *e;
	uint32_t idx;

	if (idxmap_find(&hp->index, hash_u64(method), method_eq, ctx, &idx)) {
		uint64_t cm = 0;

		e = &hp->v[idx];
		if (now - e->checked_ns < HS_RECHECK_NS)
			return e->ok ? e : NULL;
		/* Still the same method? (freed with its class, reused) */
		if (t->read_mem(&hp->pid, method + hp->jvm.l.method_const, &cm,
				8) ||
		    cm != e->const_method) {
			resolve(t, hp, e, now);
			return e->ok ? e : NULL;
		}
		e->checked_ns = now;
		return e->ok ? e : NULL;
	}
	if (hp->bytes > HS_CACHE_BUDGET) {
		for (uint32_t i = 0; i < hp->n; i++) {
			free(hp->v[i].name);
			free(hp->v[i].system);
			free(hp->v[i].file);
		}
		hp->n = 0;
		hp->bytes = 0;
		hp->flushes++;
		idxmap_clear(&hp->index);
		mem_account_release(&hp->account);
	}
	if (hp->n == hp->cap) {
		uint32_t ncap = hp->cap ? hp->cap * 2 : 64;
		struct hotspot_method_entry *nv =
			realloc(hp->v, ncap * sizeof(*nv));

		if (!nv)
			return NULL;
		hp->v = nv;
		hp->cap = ncap;
	}
	e = &hp->v[hp->n];
	memset(e, 0, sizeof(*e));
	e->method = method;
	if (idxmap_insert(&hp->index, hash_u64(method), hp->n))
		return NULL;
	hp->n++;
	resolve(t, hp, e, now);
	return e->ok ? e : NULL;
}

/* The blob at ptr, read at most once per HS_BLOB_TRUST_NS. */
static int blob_read(struct hotspot_process *hp, uint64_t ptr, uint64_t now,
		     struct hotspot_blob *b)
{
	uint32_t h = (uint32_t)(hash_u64(ptr) % HS_BLOB_CACHE);
	int err;

	if (hp->blobs[h].b.addr == ptr && ptr &&
	    now - hp->blobs[h].read_ns < HS_BLOB_TRUST_NS) {
		*b = hp->blobs[h].b;
		return 0;
	}
	err = hotspot_blob_read(&hp->jvm, ptr, b);
	if (!err) {
		hp->blobs[h].b = *b;
		hp->blobs[h].read_ns = now;
	}
	return err;
}

/* A stub's name, "[name]", by the address of its blob's name. */
static const char *stub_name(struct hotspot_tracker *t,
			     struct hotspot_process *hp, uint64_t name,
			     uint64_t now)
{
	uint32_t h = (uint32_t)(hash_u64(name) % HS_STUB_CACHE);
	char text[64];

	if (!name)
		return NULL;
	if (hp->stubs[h].name == name &&
	    now - hp->stubs[h].read_ns < HS_RECHECK_NS)
		return hp->stubs[h].text;
	hp->stubs[h].name = 0;
	if (t->read_mem(&hp->pid, name, text, sizeof(text)) ||
	    !memchr(text, '\0', sizeof(text)))
		return NULL;
	snprintf(hp->stubs[h].text, sizeof(hp->stubs[h].text), "[%s]", text);
	hp->stubs[h].name = name;
	hp->stubs[h].read_ns = now;
	return hp->stubs[h].text;
}

/* The line of bci in e's method, from the cache or its line table. */
static uint32_t line_of(struct hotspot_process *hp,
			const struct hotspot_method_entry *e, int32_t bci)
{
	uint32_t h;

	if (bci < 0 || !e->linetable)
		return 0;
	h = (uint32_t)(hash_u64(e->const_method ^ ((uint64_t)bci << 48)) %
		       HS_LINE_CACHE);
	if (hp->lines[h].const_method != e->const_method ||
	    hp->lines[h].bci != bci) {
		hp->lines[h].const_method = e->const_method;
		hp->lines[h].bci = bci;
		hp->lines[h].line =
			hotspot_line_at(&hp->jvm, e->linetable, (uint32_t)bci);
	}
	return hp->lines[h].line;
}

/* Name a compiled frame's inlined scopes (sc[0..n-2], innermost first)
 * into out->inl: from the outermost inward, up to the first whose Method
 * cannot be named (counted; the frame then shows what called it). */
static void inlined(struct hotspot_tracker *t, struct hotspot_process *hp,
		    const struct hotspot_scope *sc, int32_t n, uint64_t now,
		    struct hotspot_frame_info *out)
{
	uint32_t keep = 0;

	out->ninlined = 0;
	for (int32_t k = n - 2; k >= 0; k--) {
		struct hotspot_method_entry *e =
			sc[k].method ? method_entry(t, hp, sc[k].method, now)
				     : NULL;
		struct hotspot_inlined *x = &out->inl[k];

		if (!e) {
			t->counters.inline_errors++;
			break;
		}
		x->name = e->name;
		x->system = e->system;
		x->file = e->file;
		x->line = line_of(hp, e, sc[k].bci);
		keep++;
	}
	/* the innermost kept first */
	if (keep && keep < (uint32_t)(n - 1))
		memmove(out->inl, out->inl + (n - 1 - keep),
			keep * sizeof(out->inl[0]));
	out->ninlined = keep;
}

bool hotspot_frame(struct hotspot_tracker *t, struct process *p, uint64_t word0,
		   uint64_t word1, uint64_t now_ns,
		   struct hotspot_frame_info *out)
{
	struct hotspot_process *hp = p->jvm;
	uint64_t ptr = word0 & OTELPROF_JVM_PTR_MASK, method, flushes;
	struct hotspot_method_entry *e;
	const struct hotspot_scope *sc = NULL;
	uint32_t line = 0;
	int32_t bci = -1, nsc = 0;

	if (!hp || !hp->ready || !ptr)
		return false;
	out->ninlined = 0;
	if (word0 & OTELPROF_JVM_F_INTERP) {
		method = ptr;
	} else {
		/* The blob must still be a compiled method holding this
		 * pc: code is freed and its memory reused. Above the leaf
		 * the pc is a return address, judged by the call before it
		 * as the kernel's walk did (a call can end a blob's code). */
		struct hotspot_blob b;
		uint64_t in = (word0 & ~OTELPROF_JVM_F_INTERP) >>
					      OTELPROF_JVM_INDEX_SHIFT
				      ? word1 - 1
				      : word1;

		if (blob_read(hp, ptr, now_ns, &b) || in < b.code_begin ||
		    in >= b.code_end) {
			t->counters.stale_frames++;
			return false;
		}
		if (!b.nmethod) {
			/* A stub: named by its blob */
			const char *stub = stub_name(t, hp, b.name, now_ns);

			if (!stub)
				return false;
			out->name = out->system = stub;
			out->file = NULL;
			out->line = 0;
			return true;
		}
		method = b.method;
		{
			uint32_t h = (uint32_t)(hash_u64(ptr ^ (word1 << 16)) %
						HS_BCI_CACHE);

			if (hp->bcis[h].blob != ptr ||
			    hp->bcis[h].pc != word1 ||
			    hp->bcis[h].compile_id != b.compile_id) {
				hp->bcis[h].blob = ptr;
				hp->bcis[h].pc = word1;
				hp->bcis[h].compile_id = b.compile_id;
				hp->bcis[h].n = hotspot_nmethod_scopes(
					&hp->jvm, &b, word1, hp->bcis[h].sc,
					HS_MAX_INLINE);
			}
			nsc = hp->bcis[h].n;
			sc = hp->bcis[h].sc;
			if (nsc > 0)
				bci = sc[nsc - 1].bci;
		}
	}
	/* naming them may empty the method cache (its budget), freeing
	 * names already given: then once more, the cache now small */
	for (int tries = 0;; tries++) {
		flushes = hp->flushes;
		if (nsc > 1)
			inlined(t, hp, sc, nsc, now_ns, out);
		e = method_entry(t, hp, method, now_ns);
		if (hp->flushes == flushes)
			break;
		if (tries) {
			out->ninlined = 0;
			break;
		}
	}
	if (!e)
		return false;
	if ((word0 & OTELPROF_JVM_F_INTERP) && word1 >= e->code_base &&
	    word1 - e->code_base < 65536)
		bci = (int32_t)(word1 - e->code_base);
	line = line_of(hp, e, bci);
	out->name = e->name;
	out->system = e->system;
	out->file = e->file;
	out->line = line;
	return true;
}
