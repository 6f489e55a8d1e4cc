// SPDX-License-Identifier: Apache-2.0
#include "runtimes/cpython/interp_tracker.h"
#include "util/debug_log.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_dynsym.h"
#include "elf/elf_file.h"
#include "filestore/file_cache.h"
#include "process/mapped_file.h"
#include "runtimes/cpython/glibc_thread_self.h"
#include "rt_cpython.skel.h"

/* The evaluation loop: every CPython build defines it (and exports it:
 * PEP 523), stripped or not. */
#define CPY_EVAL_SYMBOL "_PyEval_EvalFrameDefault"

static void interp_process_free(struct interp_process *ip)
{
	if (!ip)
		return;
	for (uint32_t i = 0; i < ip->ncodes; i++) {
		free(ip->codes[i].name);
		free(ip->codes[i].file);
		free(ip->codes[i].table);
	}
	free(ip->codes);
	idxmap_free(&ip->index);
	mem_account_release(&ip->account);
	free(ip);
}

struct cpy_symbols {
	uint64_t runtime, version, code_type; /* ELF vaddrs, 0 if absent */
};

/* _PyRuntime, Py_Version and PyCode_Type from .dynsym (data symbols,
 * which the symbolizer does not keep). */
static void dynsym_lookup(int fd, struct cpy_symbols *out)
{
	static const char *const names[] = {"_PyRuntime", "Py_Version",
					    "PyCode_Type"};
	uint64_t v[3];

	(void)elf_dynsym_lookup(fd, NULL, names, 3, v);
	out->runtime = v[0];
	out->version = v[1];
	out->code_type = v[2];
}

/* 3.minor from a path like .../libpython3.9.so.1.0 or .../python3.10. */
static unsigned minor_from_path(const char *path)
{
	const char *b = strrchr(path, '/'), *q;

	b = b ? b + 1 : path;
	q = strstr(b, "python3.");
	if (!q)
		return 0;
	q += 8;
	if (q[0] < '0' || q[0] > '9')
		return 0;
	if (q[1] >= '0' && q[1] <= '9')
		return (unsigned)(q[0] - '0') * 10 + (unsigned)(q[1] - '0');
	return (unsigned)(q[0] - '0');
}

static struct interp_process *state(struct interp_tracker *it,
				    struct process *p)
{
	if (!p->interp) {
		p->interp = calloc(1, sizeof(*p->interp));
		if (p->interp) {
			idxmap_init(&p->interp->index);
			mem_account_init(&p->interp->account,
					 it->files ? &it->files->budget : NULL);
		}
	}
	return p->interp;
}

/* Stack copy of a CPython process: 7 KiB, so 64 of its frames (2 words
 * each, appended by its walk) still fit after it. */
#define CPY_COPY_KB 7

/*
 * Put process p's interpreter in the kernel: its entry in interp_procs,
 * then runtime_procs, which sends its samples through the walk. The
 * first CPython asks for the walk program; until it is loaded (another
 * thread) p waits, native stacks only, and kernel_ready writes it.
 */
static void kernel_write(struct interp_tracker *it, struct process *p)
{
	struct interp_process *ip = p->interp;
	struct otelprof_interp_proc v;
	int fd;

	if (!ip || !ip->layout || ip->in_kernel)
		return;
	switch (runtime_programs_want(it->progs, OTELPROF_RT_CPYTHON,
				      &cpython_runtime.program)) {
	case RUNTIME_PROGRAM_READY:
		break;
	case RUNTIME_PROGRAM_LOADING:
		it->counters.waited++;
		return;
	default:
		return; /* no kernel walk here: native frames */
	}
	fd = runtime_programs_map_fd(it->progs, OTELPROF_RT_CPYTHON,
				     "interp_procs");
	v = ip->lay.walk;
	v.runtime = ip->runtime;
	v.thread_self_below_tp = (u16)ip->thread_self_below_tp;
	if (fd < 0 || bpf_map_update_elem(fd, &p->pid, &v, BPF_ANY) ||
	    runtime_programs_attach(it->progs, p->pid, OTELPROF_RT_CPYTHON,
				    OTELPROF_RT_MODE_AFTER, CPY_COPY_KB)) {
		it->counters.map_errors++;
		return;
	}
	ip->in_kernel = true;
}

void interp_tracker_sync(struct interp_tracker *it, struct process *p,
			 const struct process_change *c)
{
	/* A rescan shows no interpreter the last look missed but among the
	 * mappings it added; one whose file could not be opened (state kept
	 * without a layout) is looked for again. */
	bool fresh_only = c->why == PROCESS_RESCANNED && !p->interp;

	if (p->interp && (p->interp->layout || p->interp->unknown_reported))
		return; /* an interpreter does not move */
	if (fresh_only && !c->added)
		return;
	for (size_t i = 0; i < p->maps.n; i++) {
		struct proc_mapping *m = &p->maps.v[i];
		const struct cpython_layout *l;
		const struct elf_sym *eval;
		struct interp_process *ip;
		struct cpy_symbols cs;
		struct elf_file *f;
		uint64_t bias;
		unsigned minor = 0;
		int fd;

		if (m->kind != PROC_MAPPING_FILE || !m->path ||
		    (fresh_only && !m->fresh) || !strstr(m->path, "python"))
			continue;
		f = file_cache_of(it->files, m->file);
		if (!f ||
		    !(eval = elf_symbols_find(&f->sym, CPY_EVAL_SYMBOL)) ||
		    !file_mapping_bias(m, f, &bias))
			continue;
		fd = mapped_file_open((pid_t)p->pid, m);
		if (fd < 0) {
			(void)state(it, p); /* looked for again */
			continue;
		}
		dynsym_lookup(fd, &cs);
		close(fd);
		if (!cs.runtime)
			continue;
		if (cs.version) {
			uint32_t hex;

			if (!it->read_mem(&p->pid, cs.version + bias, &hex,
					  sizeof(hex)) &&
			    hex >> 24 == 3)
				minor = (hex >> 16) & 0xff;
		}
		if (!minor)
			minor = minor_from_path(m->path);
		ip = state(it, p);
		if (!ip)
			return;
		switch (glibc_thread_self_below_tp(p,
						   &ip->thread_self_below_tp)) {
		case GLIBC_THREAD_SELF_KNOWN:
			break;
		case GLIBC_THREAD_SELF_LATER:
			return; /* state kept without a layout: looked again */
		default:
			/* No thread state could be matched (arm64 without
			 * glibc's size): reported once, native stacks. */
			ip->unknown_reported = true;
			it->counters.unknown_versions++;
			debug_log("pid %u: CPython 3.%u without glibc's struct "
				  "pthread size; native frames only",
				  p->pid, minor);
			return;
		}
		l = cpython_layout_find(minor);
		if (!l) {
			/* Reported once; its stacks stay native. */
			ip->unknown_reported = true;
			it->counters.unknown_versions++;
			debug_log("pid %u: CPython 3.%u has "
				  "no known layout; native frames only",
				  p->pid, minor);
			return;
		}
		ip->lay = *l;
		ip->layout = &ip->lay;
		ip->runtime = cs.runtime + bias;
		/* Where Python's frames go, by address: the file's names may
		 * be evicted, or not read yet, when a sample is named. */
		ip->loop_lo = eval->addr + bias;
		ip->loop_hi = eval->addr + (eval->size ? eval->size : 1) + bias;
		ip->code_type = cs.code_type ? cs.code_type + bias : 0;
		if (minor >= 13) {
			/* 3.13+ publishes its offsets: trust them over the
			 * table where they hold up. */
			uint8_t dbg[CPY_DEBUG_OFFSETS_BYTES];

			if (!it->read_mem(&p->pid, ip->runtime, dbg,
					  sizeof(dbg)) &&
			    !cpython_debug_offsets(dbg, sizeof(dbg),
						   &ip->lay)) {
				ip->debug_offsets = true;
				it->counters.debug_offsets++;
			}
		}
		it->counters.found++;
		kernel_write(it, p);
		return;
	}
}

void interp_tracker_forget(struct interp_tracker *it, struct process *p)
{
	if (p->interp && p->interp->in_kernel) {
		int fd = runtime_programs_map_fd(it->progs, OTELPROF_RT_CPYTHON,
						 "interp_procs");

		runtime_programs_detach(it->progs, p->pid);
		if (fd >= 0)
			bpf_map_delete_elem(fd, &p->pid);
	}
	interp_process_free(p->interp);
	p->interp = NULL;
}

void interp_tracker_init(struct interp_tracker *it, struct process_table *t,
			 struct file_cache *files,
			 struct runtime_programs *progs)
{
	memset(it, 0, sizeof(*it));
	it->procs = t;
	it->files = files;
	it->progs = progs;
	it->read_mem = process_memory_read;
}

/* The walk program loaded: the processes found meanwhile go in. */
static void kernel_ready(void *rt, struct process *p)
{
	kernel_write(rt, p);
}

static void rt_init(void *rt, struct process_table *procs,
		    struct file_cache *files, struct runtime_programs *progs)
{
	interp_tracker_init(rt, procs, files, progs);
}

static void rt_sync(void *rt, struct process *p, const struct process_change *c)
{
	interp_tracker_sync(rt, p, c);
}

static void rt_forget(void *rt, struct process *p)
{
	interp_tracker_forget(rt, p);
}

static void rt_free(void *rt)
{
	interp_tracker_free(rt);
}

static bool rt_name_frame(void *rt, struct process *p, uint64_t code,
			  uint64_t instr, uint64_t now_ns,
			  struct runtime_frame *out)
{
	struct interp_frame_info fi;

	if (!interp_frame(rt, p, code, instr, now_ns, &fi))
		return false;
	*out = (struct runtime_frame){.name = fi.name,
				      .file = fi.file,
				      .start_line = fi.start_line,
				      .line = fi.line};
	return true;
}

/* pc is a return address: the call in the loop is just before it. */
static bool rt_is_loop(void *rt, struct process *p, uint64_t pc)
{
	const struct interp_process *ip = p->interp;

	(void)rt;
	return ip && ip->layout && pc > ip->loop_lo && pc <= ip->loop_hi;
}

static void rt_counters(const void *rt, struct runtime_counters *out)
{
	const struct interp_counters *c =
		&((const struct interp_tracker *)rt)->counters;

	*out = (struct runtime_counters){
		.found = c->found,
		.debug_offsets = c->debug_offsets,
		.unknown = c->unknown_versions,
		.map_errors = c->map_errors,
		.frame_errors = c->read_errors + c->over_budget,
		.waited = c->waited,
	};
}

static const void *program_elf(size_t *size)
{
	return cpython_bpf__elf_bytes(size);
}

const struct runtime_ops cpython_runtime = {
	.name = "cpython",
	.id = OTELPROF_RT_CPYTHON,
	.mode = OTELPROF_RT_MODE_AFTER,
	.copy_kb = CPY_COPY_KB,
	.loop_function = CPY_EVAL_SYMBOL,
	.is_loop = rt_is_loop,
	.state_size = sizeof(struct interp_tracker),
	.program = {"cpython", program_elf},
	.init = rt_init,
	.sync = rt_sync,
	.kernel_ready = kernel_ready,
	.forget = rt_forget,
	.name_frame = rt_name_frame,
	.counters = rt_counters,
	.free = rt_free,
};

void interp_tracker_free(struct interp_tracker *it)
{
	struct process_table *t = it->procs;

	/* The processes still in the table: their kernel entries go with
	 * the map. */
	for (uint32_t i = 0; t && i < t->nslots; i++) {
		struct process *p = t->procs[i];

		if (p) {
			interp_process_free(p->interp);
			p->interp = NULL;
		}
	}
	memset(it, 0, sizeof(*it));
}

/* ---- code objects ---- */

/* A str object's text (malloc'd), or NULL. */
static char *read_str(struct interp_tracker *it, struct process *p,
		      const struct cpython_layout *l, uint64_t addr)
{
	uint8_t hdr[80], *obj;
	uint64_t length;
	uint32_t state, kind;
	size_t data, need;
	char *out;

	if (!addr || it->read_mem(&p->pid, addr, hdr, l->unicode_compact_size))
		return NULL;
	memcpy(&length, hdr + 16, 8);
	memcpy(&state, hdr + 32, 4);
	kind = (state >> 6) & 1 ? 1 : (state >> 2) & 7;
	data = (state >> 6) & 1 ? l->unicode_ascii_size
				: l->unicode_compact_size;
	if (length > CPY_NAME_MAX || !kind || kind > 4)
		return NULL;
	need = data + length * kind;
	obj = malloc(need);
	out = malloc(CPY_NAME_MAX * 4 + 1);
	if (!obj || !out || it->read_mem(&p->pid, addr, obj, need) ||
	    cpython_str(l, obj, need, out, CPY_NAME_MAX * 4 + 1) < 0) {
		free(obj);
		free(out);
		return NULL;
	}
	free(obj);
	return out;
}

/* The bytes of a bytes object (the line table), or NULL. */
static uint8_t *read_bytes(struct interp_tracker *it, struct process *p,
			   const struct cpython_layout *l, uint64_t addr,
			   uint32_t *len)
{
	uint64_t size;
	uint8_t *b;

	if (!addr || it->read_mem(&p->pid, addr + 16, &size, 8) ||
	    size > CPY_LINETABLE_MAX)
		return NULL;
	b = malloc(size ? size : 1);
	if (!b ||
	    (size && it->read_mem(&p->pid, addr + l->bytes_data, b, size))) {
		free(b);
		return NULL;
	}
	*len = (uint32_t)size;
	return b;
}

struct code_hdr {
	uint64_t type, name_ptr, file_ptr, table_ptr;
	int32_t first_line;
};

static bool read_code_hdr(struct interp_tracker *it, struct process *p,
			  const struct interp_process *ip, uint64_t code,
			  struct code_hdr *h)
{
	const struct cpython_layout *l = ip->layout;
	uint8_t buf[256];
	uint16_t name_off = l->code_qualname != OTELPROF_OFF_NONE
				    ? l->code_qualname
				    : l->code_name;

	if (it->read_mem(&p->pid, code, buf, sizeof(buf)))
		return false;
	memcpy(&h->type, buf + 8, 8);
	memcpy(&h->name_ptr, buf + name_off, 8);
	memcpy(&h->file_ptr, buf + l->code_filename, 8);
	memcpy(&h->table_ptr, buf + l->code_linetable, 8);
	memcpy(&h->first_line, buf + l->code_firstlineno, 4);
	return !ip->code_type || h->type == ip->code_type;
}

static bool code_eq(const void *ctx, uint32_t idx)
{
	const void *const *c = ctx;
	const struct interp_process *ip = c[0];

	return ip->codes[idx].addr == *(const uint64_t *)c[1];
}

static void clear_cache(struct interp_process *ip)
{
	for (uint32_t i = 0; i < ip->ncodes; i++) {
		free(ip->codes[i].name);
		free(ip->codes[i].file);
		free(ip->codes[i].table);
	}
	ip->ncodes = 0;
	ip->bytes = 0;
	idxmap_clear(&ip->index);
	mem_account_release(&ip->account);
}

static void resolve(struct interp_tracker *it, struct process *p,
		    struct interp_process *ip, struct cpython_code *c,
		    const struct code_hdr *h, uint64_t now)
{
	free(c->name);
	free(c->file);
	free(c->table);
	mem_account_uncharge(&ip->account, c->bytes);
	ip->bytes -= c->bytes;
	c->bytes = 0;
	c->name = c->file = NULL;
	c->table = NULL;
	c->table_len = 0;
	c->name_ptr = h->name_ptr;
	c->file_ptr = h->file_ptr;
	c->table_ptr = h->table_ptr;
	c->first_line = h->first_line;
	c->checked_ns = now;
	c->name = read_str(it, p, ip->layout, h->name_ptr);
	c->file = read_str(it, p, ip->layout, h->file_ptr);
	c->table = read_bytes(it, p, ip->layout, h->table_ptr, &c->table_len);
	c->ok = c->name != NULL;
	if (!c->ok || !c->file || !c->table)
		it->counters.read_errors++;
	c->bytes = (uint32_t)(sizeof(*c) + c->table_len +
			      (c->name ? strlen(c->name) : 0) +
			      (c->file ? strlen(c->file) : 0));
	if (!mem_account_charge(&ip->account, c->bytes)) {
		/* Over the budget: keep nothing of it (the frame is left
		 * out) and look again at the next recheck. */
		it->counters.over_budget++;
		free(c->name);
		free(c->file);
		free(c->table);
		c->name = c->file = NULL;
		c->table = NULL;
		c->table_len = 0;
		c->bytes = 0;
		c->ok = false;
		return;
	}
	ip->bytes += c->bytes;
}

static struct cpython_code *code_entry(struct interp_tracker *it,
				       struct process *p,
				       struct interp_process *ip, uint64_t code,
				       uint64_t now)
{
	const void *ctx[2] = {ip, &code};
	struct code_hdr h;
	struct cpython_code *c;
	uint32_t idx;

	if (idxmap_find(&ip->index, hash_u64(code), code_eq, ctx, &idx)) {
		c = &ip->codes[idx];
		if (now - c->checked_ns < CPY_RECHECK_NS)
			return c->ok ? c : NULL;
		/* Still the same code object? (freed code is reused) */
		if (!read_code_hdr(it, p, ip, code, &h)) {
			c->ok = false;
			c->checked_ns = now;
			it->counters.read_errors++;
			return NULL;
		}
		if (h.name_ptr == c->name_ptr && h.file_ptr == c->file_ptr &&
		    h.table_ptr == c->table_ptr &&
		    h.first_line == c->first_line) {
			c->checked_ns = now;
			return c->ok ? c : NULL;
		}
		resolve(it, p, ip, c, &h, now);
		return c->ok ? c : NULL;
	}
	if (!read_code_hdr(it, p, ip, code, &h)) {
		it->counters.read_errors++;
		return NULL;
	}
	if (ip->bytes > CPY_CACHE_BUDGET)
		clear_cache(ip);
	if (ip->ncodes == ip->cap) {
		uint32_t ncap = ip->cap ? ip->cap * 2 : 64;
		struct cpython_code *nc =
			realloc(ip->codes, ncap * sizeof(*nc));

		if (!nc)
			return NULL;
		ip->codes = nc;
		ip->cap = ncap;
	}
	c = &ip->codes[ip->ncodes];
	memset(c, 0, sizeof(*c));
	c->addr = code;
	if (idxmap_insert(&ip->index, hash_u64(code), ip->ncodes))
		return NULL;
	ip->ncodes++;
	resolve(it, p, ip, c, &h, now);
	return c->ok ? c : NULL;
}

bool interp_frame(struct interp_tracker *it, struct process *p, uint64_t code,
		  uint64_t instr, uint64_t now_ns,
		  struct interp_frame_info *out)
{
	struct interp_process *ip = p->interp;
	const struct cpython_layout *l;
	struct cpython_code *c;
	uint64_t index;
	uint32_t line = 0;

	if (!ip || !ip->layout || !code)
		return false;
	l = ip->layout;
	c = code_entry(it, p, ip, code, now_ns);
	if (!c)
		return false;
	if (l->minor <= 10) {
		int32_t lasti = (int32_t)(uint32_t)instr;

		index = lasti < 0 ? 0
				  : (uint64_t)lasti * (l->minor == 10 ? 2 : 1);
		line = lasti < 0
			       ? 0
			       : cpython_line(l->minor, c->table, c->table_len,
					      c->first_line, index);
	} else {
		uint64_t base = code + l->code_code_adaptive;

		if (instr >= base) {
			index = (instr - base) / 2;
			line = cpython_line(l->minor, c->table, c->table_len,
					    c->first_line, index);
		}
	}
	out->name = c->name;
	out->file = c->file;
	out->start_line = c->first_line > 0 ? (uint32_t)c->first_line : 0;
	out->line = line ? line : out->start_line;
	return true;
}
