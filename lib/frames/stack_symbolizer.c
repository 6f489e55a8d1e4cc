// SPDX-License-Identifier: Apache-2.0
#include "frames/stack_symbolizer.h"
#include "filestore/file_cache.h"
#include "util/debug_log.h"
#include "elf/go_pclntab.h"

#include "process/mapped_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The native frame that runs Python frames (every CPython 3.9+). */

void stack_symbolizer_init(struct stack_symbolizer *s,
			   const struct kallsyms *ksyms,
			   struct process_table *procs,
			   struct file_cache *files)
{
	memset(s, 0, sizeof(*s));
	s->ksyms = ksyms;
	s->procs = procs;
	s->files = files;
	frame_memo_init(&s->memo);
}

void stack_symbolizer_new_window(struct stack_symbolizer *s)
{
	frame_memo_clear(&s->memo);
}

void stack_symbolizer_encoded(struct stack_symbolizer *s,
			      const struct frame *frames, uint32_t n,
			      const int32_t *values)
{
	for (uint32_t i = 0; i < n; i++)
		if (frames[i].memo_id)
			frame_memo_set(&s->memo, frames[i].memo_id, values[i]);
}

void stack_symbolizer_forget(struct stack_symbolizer *s, struct process *p)
{
	(void)s;
	jit_process_free(p->jit);
	p->jit = NULL;
}

void stack_symbolizer_free(struct stack_symbolizer *s)
{
	struct process_table *t = s->procs;

	for (uint32_t i = 0; t && i < t->nslots; i++)
		if (t->procs[i])
			stack_symbolizer_forget(s, t->procs[i]);
	frame_memo_free(&s->memo);
	memset(s, 0, sizeof(*s));
}

/* Adds a frame the memo holds for key k (only its value: the caller
 * encoded it before); false if it holds none. */
static bool memo_frame(struct stack_symbolizer *s, struct symbolized_stack *out,
		       const struct frame_memo_key *k, uint8_t kind,
		       uint32_t *loop_mask)
{
	const struct frame_memo_entry *e = frame_memo_find(&s->memo, k);
	struct frame f;

	if (!e)
		return false;
	memset(&f, 0, sizeof(f));
	f.kind = kind;
	f.address = k->pc;
	f.memo_value = e->value;
	if (loop_mask)
		*loop_mask = e->loop_mask;
	symbolized_stack_add(out, &f);
	return true;
}

/* The frame just added is named for good (nothing it needs may still
 * come): the memo waits for its encoding. */
static void memo_added(struct stack_symbolizer *s, struct symbolized_stack *out,
		       const struct frame_memo_key *k, uint32_t loop_mask)
{
	if (!out->n || out->strings_dropped)
		return;
	out->frames[out->n - 1].memo_id =
		frame_memo_reserve(&s->memo, k, loop_mask);
}

static void kernel_frame(struct stack_symbolizer *s,
			 struct symbolized_stack *out, uint64_t pc,
			 bool return_address)
{
	struct frame_memo_key key = {.pc = pc,
				     .return_address = return_address};
	const struct ksym *k;
	struct frame f;

	if (memo_frame(s, out, &key, FRAME_KERNEL, NULL))
		return;
	k = s->ksyms ? kallsyms_lookup(s->ksyms, pc - return_address) : NULL;
	memset(&f, 0, sizeof(f));
	f.kind = FRAME_KERNEL;
	f.address = pc;
	f.mapping_file = "[kernel.kallsyms]";
	if (k) {
		f.function = kallsyms_name(s->ksyms, k->name);
		if (k->module)
			f.function_file = kallsyms_name(s->ksyms, k->module);
	}
	symbolized_stack_add(out, &f);
	memo_added(s, out, &key, 0);
}

/* A frame in code without a file (JIT): named from the process's own JIT
 * symbol files if it publishes them. False if it does not name pc. */
static bool jit_frame(struct stack_symbolizer *s, struct process *p,
		      uint64_t pc, bool return_address, uint64_t now_ns,
		      struct frame *f)
{
	const char *name;
	struct jit_frame_name fn;

	if (p->ghost)
		return false;
	name = jit_process_lookup(&p->jit, s->procs->proc_root, p->pid,
				  &p->maps, pc - return_address, now_ns,
				  &s->files->budget, &s->counters.jit);
	if (!name)
		return false;
	jit_name_split(name, s->jit_name, &fn);
	f->function = fn.function;
	f->function_file = fn.file;
	f->start_line = fn.line;
	if (fn.v8js)
		f->kind = FRAME_V8JS;
	s->counters.jit_frames++;
	return true;
}

/* File, line and inlined functions of a Go pc from the file's
 * .gopclntab and inline trees. */
static void add_go_line(struct stack_symbolizer *s, const struct elf_file *file,
			uint64_t vaddr, struct frame *f)
{
	struct go_inlined inl[DWARF_LINES_MAX_DEPTH];
	struct go_pclntab t;
	const char *src;
	uint64_t i;
	uint32_t line;
	int n;

	if (go_pclntab_open(&t, file->sym.go_tab, file->sym.go_tab_len,
			    file->sym.go_text) ||
	    !go_pclntab_find(&t, vaddr, &i))
		return;
	n = go_pclntab_inlined(&t, i, vaddr, file->sym.go_func,
			       file->sym.go_func_len, inl,
			       DWARF_LINES_MAX_DEPTH, &src, &line);
	if (n < 0)
		return;
	for (int k = 0; k < n; k++) {
		s->inl[k] = (struct frame_inline){inl[k].name, NULL,
						  inl[k].file, inl[k].line, 0};
	}
	f->inlined = s->inl;
	f->ninlined = (uint32_t)n;
	f->function_file = src;
	f->line = line;
}

/* File, line and inlined functions at vaddr from the file's DWARF. */
static void add_source_lines(struct stack_symbolizer *s,
			     const struct elf_file *file, uint64_t vaddr,
			     struct frame *f)
{
	struct dwarf_where *w = &s->where;

	if (dwarf_lines_lookup(file->dwarf, vaddr, w))
		return;
	for (uint32_t i = 0; i < w->ninlined; i++) {
		struct frame_inline *x = &s->inl[i];
		const char *raw = w->inl[i].linkage_name;

		x->function = w->inl[i].name;
		x->function_system = raw;
		if (raw && i < 4 && symbol_demangle(raw, s->inl_names[i]))
			x->function = s->inl_names[i];
		else if (!x->function)
			x->function = raw;
		x->function_file = w->inl[i].file;
		x->line = w->inl[i].line;
	}
	f->inlined = s->inl;
	f->ninlined = w->ninlined;
	f->function_file = w->file;
	f->line = w->line;
}

/* The runtimes whose evaluation loop is the function named fn. */
static uint32_t loop_mask_of(const struct stack_symbolizer *s, const char *fn)
{
	uint32_t mask = 0;

	for (uint32_t r = 1; fn && r < OTELPROF_RT_MAX; r++) {
		const struct runtime_ops *ops = s->runtimes[r].ops;

		if (ops && ops->loop_function &&
		    !strcmp(fn, ops->loop_function))
			mask |= 1u << r;
	}
	return mask;
}

/* Where a frame at pc in mapping m of process p was, for the memo. */
static void memo_key_of(struct frame_memo_key *k, const struct process *p,
			uint64_t raw_pc, const struct proc_mapping *m,
			bool return_address)
{
	memset(k, 0, sizeof(*k));
	k->serial = p->serial;
	k->pc = raw_pc;
	k->map_start = m->start;
	k->map_end = m->end;
	k->map_offset = m->offset;
	k->inode = m->inode;
	k->dev = m->dev_major << 20 | m->dev_minor;
	k->return_address = return_address;
}

/* One native frame. *loop_mask: the runtimes whose evaluation loop it
 * is (loop_mask_of). */
static void user_frame(struct stack_symbolizer *s, struct symbolized_stack *out,
		       struct process *p, uint64_t raw_pc, bool return_address,
		       bool *jit_unnamed, uint32_t *loop_mask, uint64_t now_ns)
{
	uint64_t pc = raw_pc & ~OTELPROF_USTACK_FLAGS;
	struct proc_mapping *m = proc_maps_find_mut(&p->maps, pc);
	/* This frame's name may still change (a want of its file, symbols
	 * gone or not read yet): not for the memo. Per frame: a stack notes
	 * a want once per file. */
	bool unnamed = false, wanting = false;
	struct frame_memo_key key;
	struct elf_file *file;
	struct frame f;
	uint64_t vaddr;

	*loop_mask = 0;
	/* Maybe new code since the last scan (dlopen, JIT): the caller may
	 * have the process rescanned and symbolize the stack again. */
	if (!m)
		out->unmapped = true;
	memset(&f, 0, sizeof(f));
	f.kind = FRAME_NATIVE;
	f.address = pc;
	f.fp_unwound = (raw_pc & OTELPROF_USTACK_FP_FRAME) != 0;
	if (!m || m->kind == PROC_MAPPING_ANON) {
		if (jit_frame(s, p, pc, return_address, now_ns, &f)) {
			if (m) {
				f.map_start = m->start;
				f.map_limit = m->end;
				f.mapping_file = "[anon]";
			}
			symbolized_stack_add(out, &f);
			return;
		}
		/* Its name may still come: do not cache the stack. */
		*jit_unnamed = true;
	}
	if (!m) {
		debug_log("pid %u (serial %llu, %zu "
			  "mappings%s, "
			  "%s): no mapping for %#llx",
			  p->pid, (unsigned long long)p->serial, p->maps.n,
			  p->exited ? ", exited" : "", p->exe_name,
			  (unsigned long long)pc);
		symbolized_stack_add(out, &f);
		return;
	}
	f.map_start = m->start;
	f.map_limit = m->end;
	f.map_offset = m->offset;
	f.mapping_file = m->path && *m->path ? m->path : "[anon]";
	/* A file not resolved yet (its process's loads left for a later
	 * slice), evicted symbols, a debuginfod server: the caller's to do,
	 * then it names the stack again. */
	if (!m->file_tried &&
	    (m->kind == PROC_MAPPING_FILE || m->kind == PROC_MAPPING_VDSO))
		symbolized_stack_want(out, SYMBOLIZED_WANT_RESOLVE, m, NULL);
	file = file_cache_of(s->files, m->file);
	if (!file) {
		symbolized_stack_add(out, &f);
		return;
	}
	/* Eviction order: the one thing naming writes. */
	file_cache_touch(file->file, now_ns);
	/* Named before in this window: what it was encoded as. */
	memo_key_of(&key, p, raw_pc, m, return_address);
	if (memo_frame(s, out, &key, FRAME_NATIVE, loop_mask))
		return;
	if (file_cache_reload_due(file)) {
		symbolized_stack_want(out, SYMBOLIZED_WANT_RELOAD, m, file);
		wanting = true;
	}
	/* Its symbols are gone until a reload, or still being read: the
	 * stack is named again next time (cached, it stayed unnamed for the
	 * rest of the window after they came). */
	if (file->evicted || file->loading)
		unnamed = true;
	if (file_cache_debuginfod_due(s->files, file)) {
		symbolized_stack_want(out, SYMBOLIZED_WANT_DEBUGINFOD, m, file);
		wanting = true;
	}
	/* Its names may still come from a server: do not cache the stack. */
	if (file->dbgd_state == FILE_DBGD_PENDING)
		unnamed = true;
	f.build_id = file->sym.build_id;
	f.htlhash = file->htlhash;
	f.build_id_go = file->sym.go_build_id;
	if (file_mapping_vaddr(m, file, &vaddr)) {
		const struct elf_sym *sym;

		vaddr += pc - m->start;
		f.address = vaddr;
		sym = elf_symbols_lookup(&file->sym, vaddr - return_address);
		if (sym) {
			bool go = sym->flags & ELF_SYM_GO;

			if (go)
				f.kind = FRAME_GO;
			if (file_cache_lines_due(file, go)) {
				symbolized_stack_want(
					out,
					go ? SYMBOLIZED_WANT_GO_LINES
					   : SYMBOLIZED_WANT_LINES,
					m, file);
				wanting = true;
			}
			f.function_system =
				elf_symbols_name(&file->sym, sym, s->name_buf);
			f.function = symbol_names_get(
				&file->names, (uint32_t)(sym - file->sym.syms),
				f.function_system, s->demangle_buf);
			if (file_cache_go_lines_used(file, go)) {
				if (file->sym.go_tab)
					add_go_line(s, file,
						    vaddr - return_address, &f);
			} else if (file->dwarf) {
				add_source_lines(s, file,
						 vaddr - return_address, &f);
			}
		}
	}
	*loop_mask = loop_mask_of(s, f.function);
	symbolized_stack_add(out, &f);
	if (unnamed)
		*jit_unnamed = true;
	else if (!wanting)
		memo_added(s, out, &key, *loop_mask);
}

void stack_symbolizer_add_runtime(struct stack_symbolizer *s,
				  const struct runtime_ops *ops, void *rt,
				  uint8_t frame_kind)
{
	if (ops->id >= OTELPROF_RT_MAX)
		return;
	s->runtimes[ops->id].ops = ops;
	s->runtimes[ops->id].state = rt;
	s->runtimes[ops->id].frame_kind = frame_kind;
}

bool stack_symbolizer_has_runtime(const struct stack_symbolizer *s,
				  uint32_t interp_kind)
{
	return interp_kind < OTELPROF_RT_MAX && s->runtimes[interp_kind].ops;
}

/* The frame runtime rt names for the pair {w0, w1} into *f; false: it
 * cannot be named. */
static bool runtime_frame(struct stack_symbolizer *s, uint32_t rt,
			  struct process *p, uint64_t w0, uint64_t w1,
			  uint64_t now_ns, struct frame *f)
{
	struct runtime_frame rf;

	if (!s->runtimes[rt].ops->name_frame(s->runtimes[rt].state, p, w0, w1,
					     now_ns, &rf))
		return false;
	memset(f, 0, sizeof(*f));
	f->kind = s->runtimes[rt].frame_kind;
	f->function = rf.name;
	f->function_system = rf.system;
	f->function_file = rf.file;
	f->start_line = rf.start_line;
	f->line = rf.line;
	/* what compiled code inlined: one Line each, innermost first, as
	 * DWARF inlines of native code */
	for (uint32_t k = 0; k < rf.ninlined && k < DWARF_LINES_MAX_DEPTH; k++)
		s->inl[k] = (struct frame_inline){
			rf.inl[k].name, rf.inl[k].system, rf.inl[k].file,
			rf.inl[k].line, rf.inl[k].start_line};
	if (rf.ninlined) {
		f->inlined = s->inl;
		f->ninlined = rf.ninlined < DWARF_LINES_MAX_DEPTH
				      ? rf.ninlined
				      : DWARF_LINES_MAX_DEPTH;
	}
	return true;
}

/* MODE_AFTER: the runtime's frames from *next up to the one its loop's
 * call started with (OTELPROF_INTERP_F_LAST), or all that are left. */
static void put_after_frames(struct stack_symbolizer *s,
			     struct symbolized_stack *out, uint32_t rt,
			     struct process *p, const uint64_t *pairs,
			     uint32_t npairs, uint32_t *next, bool all,
			     uint64_t now_ns)
{
	while (*next < npairs) {
		uint64_t w0 = pairs[2 * *next], w1 = pairs[2 * *next + 1];
		struct frame f;

		(*next)++;
		if (runtime_frame(s, rt, p, w0 & ~OTELPROF_INTERP_F_LAST, w1,
				  now_ns, &f))
			symbolized_stack_add(out, &f);
		if (!all && (w0 & OTELPROF_INTERP_F_LAST))
			break;
	}
}

/* Whether the run of pairs from next was called from the runtime's
 * native code (its last pair says so: runtime_ops.call_run). */
static bool next_is_call_run(const struct runtime_ops *ops,
			     const uint64_t *pairs, uint32_t npairs,
			     uint32_t next)
{
	if (!ops->call_run)
		return false;
	for (uint32_t j = next; j < npairs; j++)
		if (pairs[2 * j] & OTELPROF_INTERP_F_LAST)
			return ops->call_run(pairs[2 * j] &
						     ~OTELPROF_INTERP_F_LAST,
					     pairs[2 * j + 1]);
	return false;
}

/* MODE_STEP: the runtime's frame for native frame i, if the next pair
 * names it; -ENOENT: none (or it cannot be named: the native frame
 * stays). */
static int put_step_frame(struct stack_symbolizer *s,
			  struct symbolized_stack *out, uint32_t rt,
			  struct process *p, const uint64_t *pairs,
			  uint32_t npairs, uint32_t *next, uint32_t i,
			  uint64_t now_ns)
{
	struct frame f;
	uint64_t w0, w1;

	for (;;) {
		uint64_t at;

		if (*next >= npairs)
			return -ENOENT;
		w0 = pairs[2 * *next];
		w1 = pairs[2 * *next + 1];
		at = (w0 & ~OTELPROF_RT_WORD0_FLAGS) >>
		     OTELPROF_JVM_INDEX_SHIFT;
		if (at > i)
			return -ENOENT;
		if (at == i)
			break;
		(*next)++; /* out of order: not believed */
	}
	(*next)++;
	if (!runtime_frame(s, rt, p, w0, w1, now_ns, &f))
		return -ENOENT;
	symbolized_stack_add(out, &f);
	return 0;
}

int stack_symbolize(struct stack_symbolizer *s, struct process *p,
		    const uint64_t *kstack, uint32_t nk, const uint64_t *ustack,
		    uint32_t nu, uint32_t n_interp, uint32_t interp_kind,
		    uint64_t now_ns, struct symbolized_stack *out)
{
	bool jit_unnamed = false;
	uint32_t native, next = 0;
	const uint64_t *pairs;
	/* The runtime whose walk reported the pairs, and how its frames
	 * go into the stack. */
	uint32_t rt =
		stack_symbolizer_has_runtime(s, interp_kind) ? interp_kind : 0;
	uint8_t mode = rt ? s->runtimes[rt].ops->mode : 0;

	symbolized_stack_clear(out);
	frame_memo_begin(&s->memo);
	if (nk > OTELPROF_MAX_KERNEL_FRAMES ||
	    n_interp > OTELPROF_MAX_INTERP_FRAMES || nu < 2 * n_interp ||
	    nu - 2 * n_interp > OTELPROF_MAX_USER_FRAMES)
		return -EINVAL;
	native = nu - 2 * n_interp;
	pairs = ustack + native;
	if (!rt)
		n_interp = 0; /* no runtime names them: dropped */
	for (uint32_t i = 0; i < nk; i++)
		kernel_frame(s, out, kstack[i], i > 0);
	for (uint32_t i = 0; i < native; i++) {
		uint32_t loop_mask;

		/* A frame the runtime's walk stepped over names the native
		 * frame it is (a stack with one is not cached: its code
		 * moves, as a JIT's) */
		if (mode == OTELPROF_RT_MODE_STEP &&
		    !put_step_frame(s, out, rt, p, pairs, n_interp, &next, i,
				    now_ns)) {
			jit_unnamed = true;
			continue;
		}
		/* The runtime's loop ran the frames above it: they go
		 * before it (leaf first). Its name is known only once it is
		 * symbolized, so it is added after them. The sampled user pc
		 * (i = 0, below the kernel's frames of a syscall or an
		 * interrupt, e.g. a sigreturn that has just loaded the
		 * interrupted pc) and a pc read from a signal frame are
		 * exact; every other is a return address. */
		user_frame(s, out, p, ustack[i],
			   i > 0 && !(ustack[i] & OTELPROF_USTACK_EXACT_PC),
			   &jit_unnamed, &loop_mask, now_ns);
		if (mode == OTELPROF_RT_MODE_AFTER && next < n_interp &&
		    out->n) {
			const struct runtime_ops *ops = s->runtimes[rt].ops;
			void *state = s->runtimes[rt].state;
			uint64_t pc = ustack[i] & ~OTELPROF_USTACK_FLAGS;
			bool at_call =
				ops->is_call &&
				next_is_call_run(ops, pairs, n_interp, next) &&
				ops->is_call(state, p, pc);
			bool at_loop =
				!at_call &&
				((loop_mask >> rt & 1) ||
				 (ops->is_loop && ops->is_loop(state, p, pc)));
			struct frame eval;

			if (!at_call && !at_loop)
				continue;
			eval = out->frames[--out->n];
			/* runs called from native code whose call was not
			 * seen go with the loop's */
			while (at_loop && next < n_interp &&
			       next_is_call_run(ops, pairs, n_interp, next))
				put_after_frames(s, out, rt, p, pairs, n_interp,
						 &next, false, now_ns);
			put_after_frames(s, out, rt, p, pairs, n_interp, &next,
					 false, now_ns);
			/* eval's strings are the stack's own: no copy. */
			if (out->n < SYMBOLIZED_MAX_FRAMES)
				out->frames[out->n++] = eval;
		}
	}
	if (mode == OTELPROF_RT_MODE_AFTER && next < n_interp)
		/* The native walk ended before their loops. */
		put_after_frames(s, out, rt, p, pairs, n_interp, &next, true,
				 now_ns);
	/* A frame whose file still wants something may be named later. */
	out->cacheable = !jit_unnamed && !out->nwant && !out->wants_dropped;
	return 0;
}
