// SPDX-License-Identifier: Apache-2.0
#include "runtimes/v8/v8_tracker.h"
#include "elf/elf_dynsym.h"
#include "filestore/file_cache.h"
#include "process/mapped_file.h"
#include "profiler_types.h"
#include "rt_v8.skel.h"
#include "util/debug_log.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void v8_process_free(struct v8_process *vp)
{
	if (!vp)
		return;
	for (int k = 0; k < V8_SCRIPT_CACHE; k++)
		free(vp->scripts[k].starts);
	mem_account_release(&vp->account);
	free(vp);
}

static struct v8_process *state(struct v8_tracker *t, struct process *p)
{
	if (!p->v8) {
		p->v8 = calloc(1, sizeof(*p->v8));
		if (p->v8) {
			p->v8->pid = p->pid;
			mem_account_init(&p->v8->account,
					 t->files ? &t->files->budget : NULL);
		}
	}
	return p->v8;
}

/* Could this file be V8's? (The binary or library embedding it: node,
 * libnode.so.) */
static bool is_v8_candidate(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "node", 4) || !strncmp(b, "libnode.so", 10);
}

/* The embedded builtins in the binary: the span of its Builtins_*
 * functions (the blob is in .symtab only). */
static bool find_blob(const struct elf_symbols *s, uint64_t *vaddr,
		      uint64_t *size)
{
	struct elf_symbols_names_iter it;
	uint64_t lo = UINT64_MAX, hi = 0;
	const char *n;

	elf_symbols_names_start(&it);
	while ((n = elf_symbols_names_next(s, &it))) {
		size_t i = it.i - 1;

		if (strncmp(n, "Builtins_", 9))
			continue;
		if (s->syms[i].addr < lo)
			lo = s->syms[i].addr;
		if (s->syms[i].addr + s->syms[i].size > hi)
			hi = s->syms[i].addr + s->syms[i].size;
	}
	if (hi <= lo || hi - lo > (256u << 20))
		return false;
	*vaddr = lo;
	*size = hi - lo;
	return true;
}

/* Where V8's code is now: the blob wherever a mapping of the binary
 * holds it (V8 may remap it next to its JIT code), and the anonymous
 * executable mappings, a run of them with no other code between them
 * as one range (maps lists executable mappings only, sorted). A span
 * over all of them could hold the binary's own C++ code, which V8 often
 * sits next to, and take its frames for V8's. Runs beyond the ranges
 * the kernel keeps are left out (their frames: the frame pointer). */
static void code_ranges(struct v8_tracker *t, struct process *p,
			struct v8_process *vp, const struct file *bin)
{
	uint32_t nb = 0, nj = 0;
	uint64_t jit[V8_MAX_CODE][2];
	bool in_run = false;

	for (size_t i = 0; i < p->maps.n; i++) {
		const struct proc_mapping *m = &p->maps.v[i];
		const struct elf_file *ef;
		uint64_t bias, lo, hi;

		if (m->kind == PROC_MAPPING_ANON) {
			if (in_run) {
				jit[nj - 1][1] = m->end;
			} else if (nj < V8_MAX_CODE) {
				jit[nj][0] = m->start;
				jit[nj++][1] = m->end;
				in_run = true;
			}
			continue;
		}
		in_run = false;
		if (m->kind != PROC_MAPPING_FILE || m->file != bin || nb >= 2)
			continue;
		ef = file_cache_of(t->files, m->file);
		if (!ef || !file_mapping_bias(m, ef, &bias))
			continue;
		lo = vp->blob_vaddr + bias;
		hi = lo + vp->blob_size;
		if (hi <= m->start || lo >= m->end)
			continue;
		vp->code[nb][0] = lo > m->start ? lo : m->start;
		vp->code[nb][1] = hi < m->end ? hi : m->end;
		nb++;
	}
	vp->nbuiltin = nb;
	vp->ncode = nb;
	for (uint32_t k = 0; k < nj && vp->ncode < V8_MAX_CODE; k++) {
		vp->code[vp->ncode][0] = jit[k][0];
		vp->code[vp->ncode++][1] = jit[k][1];
	}
}

/* The words V8's entry frame (Builtins_JSEntry) saves above its frame
 * record: the caller's sp is past them. v8dbg does not export it; it is
 * the architecture's callee-saved registers, fixed by its ABI (V8's
 * EntryFrameConstants::kCalleeSavedRegisterBytesPushedBeforeFpLrPair):
 * x19-x28 and d8-d15 on aarch64, none on x86_64 (rbp is pushed first). */
#if defined(__aarch64__)
#define V8_ENTRY_SAVED_WORDS 18
#else
#define V8_ENTRY_SAVED_WORDS 0
#endif

/* A frame type's marker as the walk compares it (a Smi-tagged type,
 * type << 1; an odd value matches no marker). */
static uint8_t marker_of(int32_t type)
{
	return type > 0 && type < 128 ? (uint8_t)(type << 1) : 0xff;
}

static void kernel_view(const struct v8_process *vp, struct otelprof_v8_proc *v)
{
	memset(v, 0, sizeof(*v));
	for (uint32_t k = 0; k < vp->ncode && k < OTELPROF_V8_RANGES; k++) {
		v->low[k] = vp->code[k][0];
		v->high[k] = vp->code[k][1];
		v->nranges = k + 1;
	}
	v->nbuiltin = vp->nbuiltin;
	v->off_fp_context = (int8_t)vp->l.off_fp_context;
	v->off_fp_function = (int8_t)vp->l.off_fp_function;
	v->off_fp_bytecode_offset = (int8_t)vp->l.off_fp_bytecode_offset;
	v->off_fp_bytecode_array = (int8_t)vp->l.off_fp_bytecode_array;
	v->smi_tag_mask = (uint8_t)vp->l.smi_tag_mask;
	v->smi_tag = (uint8_t)vp->l.smi_tag;
	v->heap_tag_mask = (uint8_t)vp->l.heap_tag_mask;
	v->heap_tag = (uint8_t)vp->l.heap_tag;
	v->entry_saved_words = V8_ENTRY_SAVED_WORDS;
	v->entry_marker = marker_of(vp->l.type_entry_frame);
	v->construct_entry_marker = marker_of(vp->l.type_construct_entry_frame);
}

/* Put (or update) p's entry in v8_procs, then runtime_procs. The first
 * V8 process asks for the walk program; until it is loaded p waits,
 * native stacks only, and kernel_ready writes it. */
static void kernel_write(struct v8_tracker *t, struct process *p)
{
	struct v8_process *vp = p->v8;
	struct otelprof_v8_proc v;
	int fd;

	if (!vp || !vp->ready)
		return;
	switch (runtime_programs_want(t->progs, OTELPROF_RT_V8,
				      &v8_runtime.program)) {
	case RUNTIME_PROGRAM_READY:
		break;
	case RUNTIME_PROGRAM_LOADING:
		if (!vp->in_kernel)
			t->counters.waited++;
		return;
	default:
		return;
	}
	fd = runtime_programs_map_fd(t->progs, OTELPROF_RT_V8, "v8_procs");
	kernel_view(vp, &v);
	if (fd < 0 || bpf_map_update_elem(fd, &p->pid, &v, BPF_ANY)) {
		t->counters.map_errors++;
		return;
	}
	if (vp->in_kernel)
		return;
	/* its builtins are in the binary, without CFI rows; node keeps
	 * frame pointers, which carry its stacks while its big table is
	 * being built */
	if (runtime_programs_attach(t->progs, p->pid, OTELPROF_RT_V8,
				    OTELPROF_RT_MODE_STEP |
					    OTELPROF_RT_F_FILE_CODE |
					    OTELPROF_RT_F_PENDING_FP,
				    0)) {
		t->counters.map_errors++;
		return;
	}
	vp->in_kernel = true;
}

/*
 * What V8 keeps in .symtab only, read once when the layout is (a .symtab
 * of 100k symbols takes its time on a busy host: one pass, not at every
 * try): V8 13 on, where its functions' code is found (v8_heap.h, struct
 * v8_dispatch), when the layout lacks the JSFunction's code field; and
 * each bytecode's size, which baseline code's lines need (V8 10-13 export
 * the table, interpreter::Bytecodes::kBytecodeSizes[3][count]; V8 14 made
 * it a constexpr: none).
 */
static void read_symtab(struct process *p, struct v8_process *vp,
			struct proc_mapping *m, uint64_t bias)
{
	static const char *const names[] = {
		"_ZN2v88internal12IsolateGroup22default_isolate_group_E",
		"_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE"};
	static uint8_t sizes[3 * V8_BYTECODES_MAX];
	uint64_t v[2] = {0}, n[2] = {0}, count;
	struct v8_layout *l = &vp->l;
	int fd = mapped_file_open((pid_t)p->pid, m);

	if (fd < 0)
		return;
	if (elf_symtab_lookup_sized(fd, "_ZN2v88internal", names, 2, v, n) <=
	    0) {
		close(fd);
		return;
	}
	if (v[0] && l->fn_code < 0)
		vp->dispatch.group_sym = v[0] + bias;
	count = n[1] / 3;
	/* the table: three rows of one byte per bytecode, the four operand
	 * scaling prefixes first (Wide, ExtraWide and their DebugBreak
	 * forms: one byte each at every scale) */
	if (v[1] && n[1] % 3 == 0 && count > 4 && count <= V8_BYTECODES_MAX &&
	    !elf_dynsym_file_bytes(fd, v[1], sizes, n[1])) {
		bool ok = true;

		for (uint64_t k = 0; k < 3 * count; k++)
			if (!sizes[k] || sizes[k] > 64 ||
			    (k % count < 4 && sizes[k] != 1))
				ok = false;
		if (ok) {
			for (unsigned s = 0; s < 3; s++)
				memcpy(l->bytecode_size[s], sizes + s * count,
				       count);
			l->nbytecodes = (uint16_t)count;
		}
	}
	if (!l->nbytecodes)
		debug_log(
			"pid %u: no bytecode sizes in the V8 binary's .symtab: "
			"baseline frames without lines",
			p->pid);
	close(fd);
}

/*
 * The binary's V8 major version (v8::internal::Version::major_, an int
 * in its data, exported by Node's binaries), -1 if absent: what says how
 * its source position tables are encoded, which v8dbg does not.
 */
static int v8_major(int fd)
{
	static const char *const name[] = {"_ZN2v88internal7Version6major_E"};
	uint64_t vaddr = 0;
	int32_t major;

	if (elf_dynsym_lookup(fd, "_ZN2v88internal7Version", name, 1, &vaddr) !=
		    1 ||
	    !vaddr || elf_dynsym_file_bytes(fd, vaddr, &major, sizeof(major)))
		return -1;
	return major;
}

static void try_open(struct v8_tracker *t, struct process *p,
		     struct v8_process *vp, struct proc_mapping *m)
{
	const char *const *names = v8_layout_names();
	uint64_t addr[256], bias;
	const char *missing = NULL;
	struct elf_file *f;
	int fd, found, err, major = -1;

	f = file_cache_of(t->files, m->file);
	if (!f || !file_mapping_bias(m, f, &bias))
		return;
	fd = mapped_file_open((pid_t)p->pid, m);
	if (fd < 0)
		return;
	memset(addr, 0, sizeof(addr));
	found = elf_dynsym_lookup(fd, "v8dbg_", names, v8_layout_nsyms, addr);
	if (found > 0)
		major = v8_major(fd);
	close(fd);
	if (found <= 0)
		return; /* not V8 */
	for (unsigned k = 0; k < v8_layout_nsyms; k++)
		if (addr[k])
			addr[k] += bias;
	err = v8_layout_read(&vp->l, addr, t->read_mem, &vp->pid, &missing);
	vp->l.spt_encoding = v8_spt_encoding_of(major);
	if (!err && vp->l.spt_encoding == V8_SPT_UNKNOWN)
		debug_log("pid %u: V8 %d: source position tables not known, "
			  "frames without lines",
			  p->pid, major);
	if (!err && V8_ENTRY_SAVED_WORDS && vp->l.type_entry_frame < 0) {
		/* without it the native frames below JSEntry would be
		 * unwound from the wrong sp */
		err = -ENOENT;
		missing = "v8dbg_frametype_EntryFrame";
	}
	if (!err && !find_blob(&f->sym, &vp->blob_vaddr, &vp->blob_size)) {
		/* its symbols not read yet: at a later sync */
		err = -ENOENT;
		missing = f->sym.n ? "Builtins_* in .symtab" : NULL;
	}
	if (err) {
		if (++vp->tries < V8_OPEN_TRIES && !missing && err != -EINVAL)
			return;
		vp->reported = true;
		t->counters.unknown++;
		debug_log("pid %u: V8 layout not usable (%s, %d); "
			  "native frames only",
			  p->pid, missing ? missing : "values", err);
		return;
	}
	vp->ready = true;
	t->counters.found++;
	code_ranges(t, p, vp, m->file);
	kernel_write(t, p);
	read_symtab(p, vp, m, bias);
}

/* The mapping of p's V8 binary, or NULL. */
static struct proc_mapping *v8_binary(struct process *p, bool fresh_only)
{
	for (size_t i = 0; i < p->maps.n; i++) {
		struct proc_mapping *m = &p->maps.v[i];

		if (m->kind == PROC_MAPPING_FILE && m->path &&
		    (!fresh_only || m->fresh) && is_v8_candidate(m->path))
			return m;
	}
	return NULL;
}

static void rt_sync(void *rt, struct process *p, const struct process_change *c)
{
	struct v8_tracker *t = rt;
	bool fresh_only = c->why == PROCESS_RESCANNED && !p->v8;
	struct proc_mapping *m;

	if (p->v8 && p->v8->reported)
		return;
	if (p->v8 && p->v8->ready) {
		/* Its JIT code grows: the ranges again. */
		m = v8_binary(p, false);
		if (m) {
			code_ranges(t, p, p->v8, m->file);
			kernel_write(t, p);
		}
		return;
	}
	if (fresh_only && !c->added)
		return;
	m = v8_binary(p, fresh_only);
	if (m && state(t, p))
		try_open(t, p, p->v8, m);
}

static void rt_forget(void *rt, struct process *p)
{
	struct v8_tracker *t = rt;

	if (p->v8 && p->v8->in_kernel) {
		int fd = runtime_programs_map_fd(t->progs, OTELPROF_RT_V8,
						 "v8_procs");

		runtime_programs_detach(t->progs, p->pid);
		if (fd >= 0)
			bpf_map_delete_elem(fd, &p->pid);
	}
	v8_process_free(p->v8);
	p->v8 = NULL;
}

static void rt_free(void *rt)
{
	struct v8_tracker *t = rt;

	for (uint32_t i = 0; t->procs && i < t->procs->nslots; i++) {
		struct process *p = t->procs->procs[i];

		if (p) {
			v8_process_free(p->v8);
			p->v8 = NULL;
		}
	}
	memset(t, 0, sizeof(*t));
}

static void rt_init(void *rt, struct process_table *procs,
		    struct file_cache *files, struct runtime_programs *progs)
{
	struct v8_tracker *t = rt;

	memset(t, 0, sizeof(*t));
	t->procs = procs;
	t->files = files;
	t->progs = progs;
	t->read_mem = process_memory_read;
}

static void kernel_ready(void *rt, struct process *p)
{
	kernel_write(rt, p);
}

/* ---- naming ---- */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* The line starts of script (its source read once; a script whose
 * source changed is read again). */
static struct v8_script_entry *
script_lines(struct v8_tracker *t, struct v8_process *vp, struct v8_reader *r,
	     uint64_t script, uint64_t source, uint64_t now)
{
	/* Two ways: two scripts on one slot (a hot one and one of node's
	 * modules whose interpreted frames are on every stack) would
	 * otherwise read their sources again at every frame. */
	uint32_t h = mix(script) % V8_SCRIPT_CACHE;
	struct v8_script_entry *s = &vp->scripts[h], *o = &vp->scripts[h ^ 1];

	if (o->script == script && o->source == source)
		s = o;
	if (s->script == script && s->source == source) {
		if (s->ok) {
			s->used_ns = now;
			return s;
		}
		/* a failed read (a source being replaced, the frame's read
		 * budget spent) is tried again after a second */
		if (now - s->used_ns < V8_RECHECK_NS)
			return NULL;
	} else if (o->used_ns < s->used_ns) {
		s = o;
	}
	free(s->starts);
	mem_account_uncharge(&vp->account, (uint64_t)s->n * 4);
	memset(s, 0, sizeof(*s));
	s->script = script;
	s->source = source;
	s->used_ns = now;
	s->starts = v8_line_starts(r, source, &s->n);
	if (!s->starts) {
		t->counters.read_errors++;
		return NULL;
	}
	if (!mem_account_charge(&vp->account, (uint64_t)s->n * 4)) {
		free(s->starts);
		s->starts = NULL;
		s->n = 0;
		return NULL;
	}
	s->ok = true;
	return s;
}

static void resolve(struct v8_tracker *t, struct v8_process *vp,
		    struct v8_fn_entry *e, uint64_t sfi, uint64_t nsi,
		    uint64_t now)
{
	static struct v8_function fn; /* 0.5 KiB: not on the stack */
	struct v8_reader r = {.l = &vp->l,
			      .read = t->read_mem,
			      .ctx = &vp->pid,
			      .budget = V8_READ_BUDGET};
	struct v8_script_entry *s;

	memset(e, 0, sizeof(*e));
	e->sfi = sfi;
	e->name_or_scope_info = nsi;
	e->checked_ns = now;
	if (!v8_function_read(&r, sfi, &fn)) {
		t->counters.read_errors++;
		return;
	}
	snprintf(e->name, sizeof(e->name), "%s",
		 fn.name[0] ? fn.name : "(anonymous)");
	memcpy(e->file, fn.file, sizeof(e->file));
	e->script = fn.script;
	e->source = fn.source;
	e->start = fn.start;
	e->end = fn.end;
	if (fn.script && fn.source && fn.start >= 0) {
		s = script_lines(t, vp, &r, fn.script, fn.source, now);
		if (s)
			e->start_line =
				v8_line_of(s->starts, s->n, (uint32_t)fn.start);
	}
	e->ok = true;
}

/* The cache entry naming SharedFunctionInfo sfi, checked again after
 * V8_RECHECK_NS (resolved again if it no longer is the function it was:
 * a collected one's memory holds another object, or another function,
 * now). */
static struct v8_fn_entry *function_entry(struct v8_tracker *t,
					  struct v8_process *vp, uint64_t sfi,
					  uint64_t now)
{
	struct v8_fn_entry *e = &vp->fns[mix(sfi) % V8_FN_CACHE];
	uint64_t nsi = 0;

	if (e->sfi == sfi && now - e->checked_ns < V8_RECHECK_NS)
		return e;
	if (t->read_mem(&vp->pid,
			(sfi & ~vp->l.heap_tag_mask) +
				vp->l.sfi_name_or_scope_info,
			&nsi, vp->l.tagged_size) ||
	    e->sfi != sfi || nsi != e->name_or_scope_info || !e->ok)
		resolve(t, vp, e, sfi, nsi, now);
	else
		e->checked_ns = now;
	return e;
}

/* The line of source position pos in function e, 0 if unknown (a
 * position outside the function's own source is no line of it). */
static uint32_t line_in(struct v8_tracker *t, struct v8_process *vp,
			struct v8_reader *r, const struct v8_fn_entry *e,
			int32_t pos, uint64_t now)
{
	struct v8_script_entry *s;

	if (e->start < 0 || pos < e->start || (e->end >= 0 && pos > e->end) ||
	    !e->source)
		return 0;
	s = script_lines(t, vp, r, e->script, e->source, now);
	return s ? v8_line_of(s->starts, s->n, (uint32_t)pos) : 0;
}

/*
 * The line frame {word0, word1} of function e is at, 0 if unknown: an
 * optimized frame's from its pc, an interpreted one's from its bytecode
 * offset. The innermost interpreted frame's offset is not taken:
 * Ignition saves it to the frame only before calls, so in a bytecode
 * handler it may be an earlier bytecode's. Where the optimized code is
 * in functions it inlined, the line is e's at the outermost inlined
 * call and *chain those functions (NULL: none). e may be evicted from
 * the function cache here.
 */
static uint32_t frame_line(struct v8_tracker *t, struct v8_process *vp,
			   const struct v8_fn_entry *e, uint64_t word0,
			   uint64_t word1, uint64_t now,
			   const struct v8_inline_entry **chain)
{
	uint64_t fn = word0 & OTELPROF_JVM_PTR_MASK;
	/* above the innermost frame the pc is a return address, as is one
	 * the kernel found for the innermost (OTELPROF_V8_F_RETURN_PC) */
	bool ret =
		(word0 >> OTELPROF_JVM_INDEX_SHIFT & OTELPROF_RT_INDEX_MAX) ||
		(word0 & OTELPROF_V8_F_RETURN_PC);
	/* a return address and the same pc run are not at one position
	 * (a pc is below 1 << 63) */
	uint64_t key = word1 ^ (ret ? 1ull << 63 : 0);
	uint64_t h = mix(fn ^ mix(key));
	struct v8_pos_entry *c = &vp->pos[h % V8_POS_CACHE];
	struct v8_inline_entry *ic = &vp->inl[h % V8_INLINE_CACHE];
	static struct v8_inlined inl; /* 0.2 KiB: not on the stack */
	struct v8_reader r;
	int32_t pos;

	*chain = NULL;
	if (e->start < 0 || ((word0 & OTELPROF_V8_F_BUILTIN_PC) && !ret))
		return 0;
	if (c->fn == fn && c->pc == key &&
	    now - c->checked_ns < V8_RECHECK_NS) {
		if (!c->inlined)
			return c->line;
		if (ic->fn == fn && ic->pc == key &&
		    ic->checked_ns == c->checked_ns) {
			*chain = ic;
			return c->line;
		}
		/* its inlined functions' entry went to another frame: read
		 * again */
	}
	r = (struct v8_reader){.l = &vp->l,
			       .read = t->read_mem,
			       .ctx = &vp->pid,
			       .budget = V8_READ_BUDGET,
			       .dispatch = &vp->dispatch,
			       .memo = &vp->memo,
			       .now_ns = now};
	*c = (struct v8_pos_entry){fn, key, now, 0, false};
	inl.n = 0;
	pos = (word0 & OTELPROF_V8_F_BUILTIN_PC)
		      ? v8_bytecode_position(&r, e->sfi, word1)
		      : v8_code_position(&r, fn, word1, ret, &inl);
	c->line = line_in(t, vp, &r, e, pos, now);
	if (pos < 0 || !inl.n)
		return c->line;
	/* e is not used below: naming the inlined functions may evict it */
	*ic = (struct v8_inline_entry){.fn = fn, .pc = key, .checked_ns = now};
	for (uint32_t k = 0; k < inl.n; k++) {
		const struct v8_fn_entry *ie =
			function_entry(t, vp, inl.sfi[k], now);

		/* a function without a script (one of V8's builtins the
		 * code inlined) has no frame: its time is its caller's, at
		 * the call */
		if (!ie->ok || !ie->script)
			continue;
		ic->sfi[ic->n] = inl.sfi[k];
		ic->line[ic->n++] = line_in(t, vp, &r, ie, inl.pos[k], now);
	}
	c->inlined = true;
	*chain = ic;
	return c->line;
}

/* Name the functions of chain into t->named_inl, innermost first; how
 * many. */
static uint32_t name_inlined(struct v8_tracker *t, struct v8_process *vp,
			     const struct v8_inline_entry *chain, uint64_t now)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < chain->n; k++) {
		const struct v8_fn_entry *ie =
			function_entry(t, vp, chain->sfi[k], now);

		if (!ie->ok || !ie->script)
			continue;
		memcpy(t->inl_name[n], ie->name, V8_NAME_MAX);
		memcpy(t->inl_file[n], ie->file, V8_NAME_MAX);
		t->named_inl[n] = (struct runtime_inline){
			.name = t->inl_name[n],
			.file = t->inl_file[n][0] ? t->inl_file[n] : NULL,
			.line = chain->line[k],
			.start_line = ie->start_line};
		n++;
	}
	t->counters.inlined += n;
	return n;
}

bool v8_frame(struct v8_tracker *t, struct process *p, uint64_t word0,
	      uint64_t word1, uint64_t now_ns, struct runtime_frame *out)
{
	struct v8_process *vp = p->v8;
	uint64_t fn = word0 & OTELPROF_JVM_PTR_MASK, sfi;
	const struct v8_inline_entry *chain;
	struct v8_reader r;
	struct v8_fn_entry *e;
	uint32_t line, ninlined = 0;

	if (!vp || !vp->ready || !fn)
		return false;
	r = (struct v8_reader){.l = &vp->l,
			       .read = t->read_mem,
			       .ctx = &vp->pid,
			       .budget = 4096};
	/* The function may have moved or died since the sample: its
	 * SharedFunctionInfo now, checked below to be one. */
	sfi = v8_function_shared(&r, fn);
	if (!sfi) {
		t->counters.stale_frames++;
		return false;
	}
	e = function_entry(t, vp, sfi, now_ns);
	/* A function without a script is one of V8's builtins (Math.sqrt
	 * ...): its native frame, Builtins_MathSqrt, stays. */
	if (!e->ok || !e->script)
		return false;
	line = frame_line(t, vp, e, word0, word1, now_ns, &chain);
	if (chain) {
		ninlined = name_inlined(t, vp, chain, now_ns);
		/* the frame's own function again: naming those may have
		 * taken its cache entry */
		e = function_entry(t, vp, sfi, now_ns);
		if (!e->ok || !e->script)
			return false;
	}
	*out = (struct runtime_frame){.name = e->name,
				      .file = e->file[0] ? e->file : NULL,
				      .start_line = e->start_line,
				      .line = line,
				      .inl = ninlined ? t->named_inl : NULL,
				      .ninlined = ninlined};
	if (out->line)
		t->counters.lines++;
	else
		t->counters.lines_unknown++;
	return true;
}

static bool rt_name_frame(void *rt, struct process *p, uint64_t word0,
			  uint64_t word1, uint64_t now_ns,
			  struct runtime_frame *out)
{
	return v8_frame(rt, p, word0, word1, now_ns, out);
}

static void rt_counters(const void *rt, struct runtime_counters *out)
{
	const struct v8_counters *c =
		&((const struct v8_tracker *)rt)->counters;

	*out = (struct runtime_counters){
		.found = c->found,
		.debug_offsets = c->found,
		.unknown = c->unknown,
		.map_errors = c->map_errors,
		.frame_errors = c->read_errors + c->stale_frames,
		.waited = c->waited,
	};
}

static const void *program_elf(size_t *size)
{
	return v8_bpf__elf_bytes(size);
}

const struct runtime_ops v8_runtime = {
	.name = "v8",
	.id = OTELPROF_RT_V8,
	.mode = OTELPROF_RT_MODE_STEP,
	.copy_kb = 0,
	.state_size = sizeof(struct v8_tracker),
	.program = {"v8", program_elf},
	.init = rt_init,
	.sync = rt_sync,
	.kernel_ready = kernel_ready,
	.forget = rt_forget,
	.name_frame = rt_name_frame,
	.counters = rt_counters,
	.free = rt_free,
};
