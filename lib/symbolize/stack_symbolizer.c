// SPDX-License-Identifier: Apache-2.0
#include "symbolize/stack_symbolizer.h"
#include "symbolize/file_cache.h"
#include "util/debug_log.h"
#include "symbolize/go_pclntab.h"

#include "process/mapped_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_FRAMES                                                             \
	(OTELPROF_MAX_KERNEL_FRAMES + OTELPROF_MAX_USER_FRAMES +               \
	 OTELPROF_MAX_INTERP_FRAMES)
/* The native frame that runs Python frames (every CPython 3.9+). */
#define CPY_EVAL_FUNCTION "_PyEval_EvalFrameDefault"

void stack_symbolizer_init(struct stack_symbolizer *s,
			   const struct kallsyms *ksyms,
			   struct process_table *procs,
			   struct file_cache *files)
{
	memset(s, 0, sizeof(*s));
	s->ksyms = ksyms;
	s->procs = procs;
	s->files = files;
	idxmap_init(&s->cache);
}

void stack_symbolizer_free(struct stack_symbolizer *s)
{
	idxmap_free(&s->cache);
	free(s->keys);
	free(s->entry_off);
	free(s->entry_stack);
	memset(s, 0, sizeof(*s));
}

void stack_symbolizer_reset(struct stack_symbolizer *s)
{
	idxmap_clear(&s->cache);
	s->keys_len = 0;
	s->nentries = 0;
}

/* A raw stack: what the kernel (or the copy unwinder) produced. */
struct raw_stack {
	const uint64_t *k, *u;
	uint32_t nk, nu;
};

struct raw_key {
	const struct stack_symbolizer *s;
	uint64_t serial;
	const struct raw_stack *e;
};

static bool raw_eq(const void *ctx, uint32_t idx)
{
	const struct raw_key *k = ctx;
	const uint64_t *v = k->s->keys + k->s->entry_off[idx];

	return v[0] == k->serial && v[1] == k->e->nk && v[2] == k->e->nu &&
	       (!k->e->nk || !memcmp(v + 3, k->e->k, k->e->nk * 8)) &&
	       (!k->e->nu || !memcmp(v + 3 + k->e->nk, k->e->u, k->e->nu * 8));
}

static uint64_t raw_hash(uint64_t serial, const struct raw_stack *e)
{
	uint64_t h =
		hash_combine(hash_u64(serial), ((uint64_t)e->nk << 32) | e->nu);

	h = hash_combine(h, hash_bytes(e->k, e->nk * 8, 1));
	return hash_combine(h, hash_bytes(e->u, e->nu * 8, 2));
}

static int cache_put(struct stack_symbolizer *s, uint64_t h, uint64_t serial,
		     const struct raw_stack *e, int32_t stack)
{
	size_t need = 3 + e->nk + e->nu;

	if (s->keys_len + need > s->keys_cap) {
		size_t ncap = s->keys_cap ? s->keys_cap * 2 : 4096;
		uint64_t *nk;

		while (ncap < s->keys_len + need)
			ncap *= 2;
		nk = realloc(s->keys, ncap * sizeof(*nk));
		if (!nk)
			return -ENOMEM;
		s->keys = nk;
		s->keys_cap = ncap;
	}
	if (s->nentries == s->entries_cap) {
		uint32_t ncap = s->entries_cap ? s->entries_cap * 2 : 256;
		uint32_t *no = realloc(s->entry_off, ncap * sizeof(*no));
		int32_t *ns;

		if (!no)
			return -ENOMEM;
		s->entry_off = no;
		ns = realloc(s->entry_stack, ncap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		s->entry_stack = ns;
		s->entries_cap = ncap;
	}
	if (s->keys_len > UINT32_MAX - need)
		return -E2BIG;
	s->entry_off[s->nentries] = (uint32_t)s->keys_len;
	s->entry_stack[s->nentries] = stack;
	s->keys[s->keys_len++] = serial;
	s->keys[s->keys_len++] = e->nk;
	s->keys[s->keys_len++] = e->nu;
	if (e->nk)
		memcpy(s->keys + s->keys_len, e->k, e->nk * 8);
	s->keys_len += e->nk;
	if (e->nu)
		memcpy(s->keys + s->keys_len, e->u, e->nu * 8);
	s->keys_len += e->nu;
	if (idxmap_insert(&s->cache, h, s->nentries))
		return -ENOMEM;
	s->nentries++;
	return 0;
}

static int32_t kernel_location(struct stack_symbolizer *s,
			       struct profile_builder *b, uint64_t pc,
			       bool return_address)
{
	const struct ksym *k =
		s->ksyms ? kallsyms_lookup(s->ksyms, pc - return_address)
			 : NULL;
	struct pb_frame f;

	memset(&f, 0, sizeof(f));
	f.kind = PB_FRAME_KERNEL;
	f.address = pc;
	f.mapping_file = "[kernel.kallsyms]";
	if (k) {
		f.function = kallsyms_name(s->ksyms, k->name);
		if (k->module)
			f.function_file = kallsyms_name(s->ksyms, k->module);
	}
	return pb_location(b, &f);
}

/* A frame in code without a file (JIT): named from the process's own JIT
 * symbol files if it publishes them. False if it does not name pc. */
static bool jit_frame(struct stack_symbolizer *s, struct process *p,
		      uint64_t pc, bool return_address, uint64_t now_ns,
		      struct pb_frame *f)
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
		f->kind = PB_FRAME_V8JS;
	s->counters.jit_frames++;
	return true;
}

/* File, line and inlined functions of a Go pc from the file's
 * .gopclntab and inline trees. */
static void add_go_line(struct stack_symbolizer *s, const struct elf_file *file,
			uint64_t vaddr, struct pb_frame *f)
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
		s->inl[k] = (struct pb_inline){inl[k].name, NULL, inl[k].file,
					       inl[k].line};
	}
	f->inlined = s->inl;
	f->ninlined = (uint32_t)n;
	f->function_file = src;
	f->line = line;
}

/* File, line and inlined functions at vaddr from the file's DWARF. */
static void add_source_lines(struct stack_symbolizer *s,
			     const struct elf_file *file, uint64_t vaddr,
			     struct pb_frame *f)
{
	struct dwarf_where *w = &s->where;

	if (dwarf_lines_lookup(file->dwarf, vaddr, w))
		return;
	for (uint32_t i = 0; i < w->ninlined; i++) {
		struct pb_inline *x = &s->inl[i];
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

/* A sample needs the symbols of a file the budget evicted: read them
 * again through the process that maps it, as the first load did. */
static void reload_evicted(struct stack_symbolizer *s, struct process *p,
			   const struct proc_mapping *m, struct elf_file *file)
{
	char root[96];
	int fd, root_fd;

	fd = mapped_file_open((pid_t)p->pid, m);
	if (fd < 0)
		return;
	snprintf(root, sizeof(root), "%s/%u/root", s->procs->proc_root, p->pid);
	root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	file_cache_reload(s->files, file, fd, m->path, root_fd);
	if (root_fd >= 0)
		close(root_fd);
	close(fd);
}

static int32_t user_location(struct stack_symbolizer *s,
			     struct profile_builder *b, struct process *p,
			     uint64_t raw_pc, bool return_address,
			     bool *rescanned, bool *jit_unnamed,
			     const char **function, uint64_t now_ns)
{
	uint64_t pc = raw_pc & ~OTELPROF_USTACK_FP_FRAME;
	struct proc_mapping *m;

	*function = NULL;
	m = (struct proc_mapping *)proc_maps_find(&p->maps, pc);
	struct elf_file *file;
	struct pb_frame f;
	uint64_t vaddr;

	(void)now_ns;
	if (!m && !*rescanned) {
		/* New code since the last scan (dlopen, JIT): look again,
		 * at most once per sample and as the budgets allow. */
		*rescanned = true;
		if (process_table_rescan_asked(s->procs, p, 0))
			m = (struct proc_mapping *)proc_maps_find(&p->maps, pc);
	}
	memset(&f, 0, sizeof(f));
	f.kind = PB_FRAME_NATIVE;
	f.address = pc;
	f.fp_unwound = (raw_pc & OTELPROF_USTACK_FP_FRAME) != 0;
	if (!m || m->kind == PROC_MAPPING_ANON) {
		if (jit_frame(s, p, pc, return_address, now_ns, &f)) {
			if (m) {
				f.map_start = m->start;
				f.map_limit = m->end;
				f.mapping_file = "[anon]";
			}
			return pb_location(b, &f);
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
		return pb_location(b, &f);
	}
	f.map_start = m->start;
	f.map_limit = m->end;
	f.map_offset = m->offset;
	f.mapping_file = m->path && *m->path ? m->path : "[anon]";
	file = file_cache_of(s->files, process_mapping_file(s->procs, p, m));
	if (!file)
		return pb_location(b, &f);
	file_cache_touch(file->file, now_ns);
	if (file_cache_reload_due(file))
		reload_evicted(s, p, m, file);
	file_cache_debuginfod_check(s->files, file);
	/* Its names may still come from a server: do not cache the stack. */
	if (file->dbgd_state == FILE_DBGD_PENDING)
		*jit_unnamed = true;
	f.build_id = file->sym.build_id;
	f.htlhash = file->htlhash;
	f.build_id_go = file->sym.go_build_id;
	if (file_mapping_vaddr(m, file, &vaddr)) {
		const struct elf_sym *sym;

		vaddr += pc - m->start;
		f.address = vaddr;
		sym = elf_symbols_lookup(&file->sym, vaddr - return_address);
		if (sym) {
			if (sym->flags & ELF_SYM_GO)
				f.kind = PB_FRAME_GO;
			f.function_system = elf_symbols_name(&file->sym, sym);
			f.function = symbol_names_get(
				&file->names, (uint32_t)(sym - file->sym.syms),
				f.function_system, s->demangle_buf);
			if (file->dwarf)
				add_source_lines(s, file,
						 vaddr - return_address, &f);
			else if ((sym->flags & ELF_SYM_GO) && file->sym.go_tab)
				add_go_line(s, file, vaddr - return_address,
					    &f);
		}
	}
	*function = f.function;
	return pb_location(b, &f);
}

/* Interpreter frames from *py up to the one its evaluation-loop call
 * started with (OTELPROF_INTERP_F_LAST), or all that are left. */
static int put_interp_frames(struct stack_symbolizer *s,
			     struct profile_builder *b, struct process *p,
			     const uint64_t *py, uint32_t npy, uint32_t *next,
			     bool all, int32_t *locs, uint32_t *n,
			     uint64_t now_ns)
{
	while (*next < npy) {
		uint64_t code = py[2 * *next], instr = py[2 * *next + 1];
		struct interp_frame_info fi;
		struct pb_frame f;
		int32_t l;

		(*next)++;
		if (s->interp &&
		    interp_frame(s->interp, p, code & ~OTELPROF_INTERP_F_LAST,
				 instr, now_ns, &fi)) {
			memset(&f, 0, sizeof(f));
			f.kind = PB_FRAME_CPYTHON;
			f.function = fi.name;
			f.function_file = fi.file;
			f.start_line = fi.start_line;
			f.line = fi.line;
			l = pb_location(b, &f);
			if (l < 0)
				return l;
			if (*n < MAX_FRAMES)
				locs[(*n)++] = l;
		}
		if (!all && (code & OTELPROF_INTERP_F_LAST))
			break;
	}
	return 0;
}

/* The Java frame for native frame i, if the next pair names it; -ENOENT:
 * none (or it cannot be named: the native frame stays). */
static int32_t java_location(struct stack_symbolizer *s,
			     struct profile_builder *b, struct process *p,
			     const uint64_t *pairs, uint32_t npairs,
			     uint32_t *next, uint32_t i, uint64_t now_ns)
{
	struct hotspot_frame_info fi;
	struct pb_frame f;
	uint64_t w0, w1;

	for (;;) {
		uint64_t at;

		if (*next >= npairs)
			return -ENOENT;
		w0 = pairs[2 * *next];
		w1 = pairs[2 * *next + 1];
		at = (w0 & ~OTELPROF_JVM_F_INTERP) >> OTELPROF_JVM_INDEX_SHIFT;
		if (at > i)
			return -ENOENT;
		if (at == i)
			break;
		(*next)++; /* out of order: not believed */
	}
	(*next)++;
	if (!s->jvm || !hotspot_frame(s->jvm, p, w0, w1, now_ns, &fi))
		return -ENOENT;
	memset(&f, 0, sizeof(f));
	f.kind = PB_FRAME_JVM;
	f.function = fi.name;
	f.function_system = fi.system;
	f.function_file = fi.file;
	f.line = fi.line;
	/* what the compiled code inlined: one Line each, innermost first,
	 * as DWARF inlines of native code */
	for (uint32_t k = 0; k < fi.ninlined && k < DWARF_LINES_MAX_DEPTH; k++)
		s->inl[k] = (struct pb_inline){fi.inl[k].name, fi.inl[k].system,
					       fi.inl[k].file, fi.inl[k].line};
	if (fi.ninlined) {
		f.inlined = s->inl;
		f.ninlined = fi.ninlined < DWARF_LINES_MAX_DEPTH
				     ? fi.ninlined
				     : DWARF_LINES_MAX_DEPTH;
	}
	return pb_location(b, &f);
}

int32_t stack_symbolize(struct stack_symbolizer *s, struct profile_builder *b,
			struct process *p, const uint64_t *kstack, uint32_t nk,
			const uint64_t *ustack, uint32_t nu, uint32_t n_interp,
			uint32_t interp_kind, uint64_t now_ns)
{
	int32_t locs[MAX_FRAMES];
	struct raw_stack e = {kstack, ustack, nk, nu};
	uint64_t h;
	struct raw_key k = {s, p->serial, &e};
	bool rescanned = false, jit_unnamed = false;
	uint32_t idx, n = 0, native, next_py = 0;
	const uint64_t *py;
	int32_t stack;
	int err;

	if (nk > OTELPROF_MAX_KERNEL_FRAMES ||
	    n_interp > OTELPROF_MAX_INTERP_FRAMES || nu < 2 * n_interp ||
	    nu - 2 * n_interp > OTELPROF_MAX_USER_FRAMES)
		return -EINVAL;
	native = nu - 2 * n_interp;
	py = ustack + native;
	h = raw_hash(p->serial, &e);
	if (idxmap_find(&s->cache, h, raw_eq, &k, &idx))
		return s->entry_stack[idx];
	for (uint32_t i = 0; i < nk; i++, n++) {
		int32_t l = kernel_location(s, b, kstack[i], n > 0);

		if (l < 0)
			return l;
		locs[n] = l;
	}
	for (uint32_t i = 0; i < native; i++) {
		const char *fn;
		int32_t l;

		if (interp_kind == OTELPROF_INTERP_HOTSPOT) {
			/* Java frames name the native frame they are (a
			 * stack with them is not cached: code moves) */
			l = java_location(s, b, p, py, n_interp, &next_py, i,
					  now_ns);
			if (l == -ENOENT)
				goto native_frame;
			if (l < 0)
				return l;
			jit_unnamed = true;
			if (n < MAX_FRAMES)
				locs[n++] = l;
			continue;
		}
	native_frame:
		l = user_location(s, b, p, ustack[i], n > 0, &rescanned,
				  &jit_unnamed, &fn, now_ns);

		if (l < 0)
			return l;
		/* The evaluation loop ran the Python frames above it. */
		if (next_py < n_interp && fn &&
		    interp_kind != OTELPROF_INTERP_HOTSPOT &&
		    !strcmp(fn, CPY_EVAL_FUNCTION)) {
			err = put_interp_frames(s, b, p, py, n_interp, &next_py,
						false, locs, &n, now_ns);
			if (err)
				return err;
		}
		if (n < MAX_FRAMES)
			locs[n++] = l;
	}
	if (next_py < n_interp && interp_kind != OTELPROF_INTERP_HOTSPOT) {
		/* The native walk ended before their evaluation loops. */
		err = put_interp_frames(s, b, p, py, n_interp, &next_py, true,
					locs, &n, now_ns);
		if (err)
			return err;
	}
	stack = pb_stack(b, locs, n);
	if (stack < 0 || jit_unnamed)
		return stack;
	err = cache_put(s, h, p->serial, &e, stack);
	return err ? err : stack;
}
