// SPDX-License-Identifier: Apache-2.0
#include "runtimes/ruby/ruby_tracker.h"

#include <bpf/bpf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_dynsym.h"
#include "elf/elf_file.h"
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

static void clear_iseqs(struct ruby_process *rp)
{
	for (uint32_t i = 0; i < rp->niseqs; i++) {
		free(rp->iseqs[i].name);
		free(rp->iseqs[i].file);
	}
	rp->niseqs = 0;
	rp->bytes = 0;
	idxmap_clear(&rp->index);
	mem_account_release(&rp->account);
	memset(rp->lines, 0, sizeof(rp->lines));
}

static void process_free(struct ruby_process *rp)
{
	if (!rp)
		return;
	clear_iseqs(rp);
	free(rp->iseqs);
	idxmap_free(&rp->index);
	free(rp);
}

struct ruby_process *ruby_process_add(struct ruby_tracker *t, uint32_t pid,
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
	rp = calloc(1, sizeof(*rp));
	if (!rp)
		return NULL;
	rp->pid = pid;
	rp->layout = l;
	idxmap_init(&rp->index);
	mem_account_init(&rp->account, t->files ? &t->files->budget : NULL);
	if (idxmap_insert(&t->by_pid, hash_u64(pid), t->nrp)) {
		process_free(rp);
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
	process_free(t->rp[idx]);
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
	int fd;

	if (!rp || !rp->layout || rp->in_kernel || !t->progs)
		return;
	switch (runtime_programs_want(t->progs, OTELPROF_RT_RUBY,
				      &ruby_runtime.program)) {
	case RUNTIME_PROGRAM_READY:
		break;
	case RUNTIME_PROGRAM_LOADING:
		t->counters.waited++;
		return;
	default:
		return; /* no kernel walk here: native frames */
	}
	fd = runtime_programs_map_fd(t->progs, OTELPROF_RT_RUBY, "ruby_procs");
	if (fd < 0 || bpf_map_update_elem(fd, &p->pid, &rp->walk, BPF_ANY) ||
	    runtime_programs_attach(t->progs, p->pid, OTELPROF_RT_RUBY,
				    OTELPROF_RT_MODE_AFTER, RUBY_COPY_KB)) {
		t->counters.map_errors++;
		return;
	}
	rp->in_kernel = true;
}

struct ruby_symbols {
	uint64_t version, thread_current, current_ec; /* ELF values */
	uint64_t vm_exec, iseq_eval, iseq_eval_main;
};

static void dynsym_lookup(int fd, struct ruby_symbols *out)
{
	static const char *const names[] = {
		"ruby_version", "rb_thread_current", "ruby_current_ec",
		"rb_vm_exec",	"rb_iseq_eval",	     "rb_iseq_eval_main"};
	uint64_t v[6];

	(void)elf_dynsym_lookup(fd, NULL, names, 6, v);
	out->version = v[0];
	out->thread_current = v[1];
	out->current_ec = v[2];
	out->vm_exec = v[3];
	out->iseq_eval = v[4];
	out->iseq_eval_main = v[5];
}

#define RUBY_EH_HDR_MAX (1u << 20)

/* The end of the function at ELF address func, from the .eh_frame_hdr
 * the process mapped (its ELF and program headers are in the first
 * mapped page: bias + 0). 0: unknown. */
static uint64_t function_end(struct ruby_tracker *t, uint32_t pid,
			     uint64_t bias, uint64_t func)
{
	uint8_t eh[64], ph[56];
	uint64_t phoff, vaddr = 0, size = 0, end = 0;
	uint16_t phnum;
	uint8_t *hdr;

	if (t->read_mem(&pid, bias, eh, sizeof(eh)) ||
	    memcmp(eh, "\177ELF", 4) || eh[4] != 2)
		return 0;
	memcpy(&phoff, eh + 32, 8);
	memcpy(&phnum, eh + 56, 2);
	for (uint16_t i = 0; i < phnum && i < 64; i++) {
		uint32_t type;

		if (t->read_mem(&pid, bias + phoff + 56ull * i, ph, sizeof(ph)))
			return 0;
		memcpy(&type, ph, 4);
		if (type == 0x6474e550) { /* PT_GNU_EH_FRAME */
			memcpy(&vaddr, ph + 16, 8);
			memcpy(&size, ph + 40, 8);
			break;
		}
	}
	if (!vaddr || !size || size > RUBY_EH_HDR_MAX)
		return 0;
	hdr = malloc(size);
	if (hdr && !t->read_mem(&pid, bias + vaddr, hdr, size) &&
	    ruby_function_end(hdr, size, vaddr, func, &end))
		end = 0;
	free(hdr);
	return end;
}

/* rb_vm_exec: exported up to 3.1; later the function rb_iseq_eval and
 * rb_iseq_eval_main both tail-jump to. */
static void find_loop(struct ruby_tracker *t, uint32_t pid,
		      struct ruby_process *rp, const struct ruby_symbols *s,
		      uint64_t bias)
{
	uint64_t start = s->vm_exec, end, a[16], b[16];
	uint8_t code[256];
	size_t na = 0, nb = 0;

	if (!start && s->iseq_eval && s->iseq_eval_main) {
		if (!t->read_mem(&pid, s->iseq_eval + bias, code, sizeof(code)))
			na = ruby_tail_jumps(code, sizeof(code), s->iseq_eval,
					     a, 16);
		if (!t->read_mem(&pid, s->iseq_eval_main + bias, code,
				 sizeof(code)))
			nb = ruby_tail_jumps(code, sizeof(code),
					     s->iseq_eval_main, b, 16);
		/* a target both share, and that starts a function */
		for (size_t i = 0; i < na && !start; i++)
			for (size_t j = 0; j < nb && !start; j++)
				if (a[i] == b[j] &&
				    function_end(t, pid, bias, a[i]) > a[i])
					start = a[i];
	}
	if (!start)
		return;
	end = function_end(t, pid, bias, start);
	if (end <= start || end - start > (1u << 20))
		return;
	rp->loop_lo = start + bias;
	rp->loop_hi = end + bias;
}

/* Layout and TLS location of the Ruby in mapping m (bias: its load bias);
 * false if it is not usable (reported once). */
static bool identify(struct ruby_tracker *t, struct process *p,
		     struct ruby_process *rp, const struct ruby_symbols *s,
		     uint64_t bias)
{
	char ver[16] = {0};
	uint8_t code[96];
	unsigned major = 0, minor = 0;
	uint64_t got, off = 0;

	if (t->read_mem(&p->pid, s->version + bias, ver, sizeof(ver) - 1) ||
	    ruby_version_parse(ver, strnlen(ver, sizeof(ver)), &major,
			       &minor)) {
		debug_log("pid %u: Ruby without a readable version; "
			  "native frames only",
			  p->pid);
		return false;
	}
	rp->layout = ruby_layout_find(major, minor);
	if (!rp->layout) {
		debug_log("pid %u: Ruby %u.%u has no known layout; native "
			  "frames only",
			  p->pid, major, minor);
		return false;
	}
	if (t->read_mem(&p->pid, s->thread_current + bias, code,
			sizeof(code)) ||
	    ruby_tls_from_code(code, sizeof(code), s->thread_current, &got)) {
		debug_log("pid %u: Ruby %u.%u: its thread-local execution "
			  "context was not found; native frames only",
			  p->pid, major, minor);
		rp->layout = NULL;
		return false;
	}
	/* The variable's offset in its TLS block: the exported symbol's
	 * value where there is one (3.1), else the GOT's second word, which
	 * the linker filled for a local symbol (3.3). */
	if (s->current_ec)
		off = s->current_ec;
	else if (t->read_mem(&p->pid, got + bias + 8, &off, 8))
		off = (uint64_t)-1;
	if (off >= (1u << 20)) {
		rp->layout = NULL;
		return false;
	}
	find_loop(t, p->pid, rp, s, bias);
	if (!rp->loop_lo)
		debug_log("pid %u: Ruby %u.%u: rb_vm_exec not found; its "
			  "frames go after the native ones",
			  p->pid, major, minor);
	rp->walk = rp->layout->walk;
	rp->walk.tls_module_got = got + bias;
	rp->walk.tls_offset = off;
	return true;
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
		close(fd);
		if (!s.version || !s.thread_current)
			continue;
		rp = ruby_process_add(t, p->pid, NULL);
		if (!rp)
			return;
		if (!identify(t, p, rp, &s, bias)) {
			/* Reported once; its stacks stay native. */
			rp->unknown_reported = true;
			t->counters.unknown++;
			return;
		}
		t->counters.found++;
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
	t->read_mem = process_memory_read;
	idxmap_init(&t->by_pid);
}

void ruby_tracker_free(struct ruby_tracker *t)
{
	for (uint32_t i = 0; i < t->nrp; i++)
		process_free(t->rp[i]);
	free(t->rp);
	idxmap_free(&t->by_pid);
	memset(t, 0, sizeof(*t));
}

/* ---- iseqs ---- */

/* A String object's text (malloc'd), or NULL. */
static char *read_str(struct ruby_tracker *t, uint32_t pid,
		      const struct ruby_layout *l, uint64_t addr)
{
	uint8_t hdr[RUBY_STR_HDR];
	uint64_t heap = 0, len = 0;
	char *out;

	if (!addr || (addr & 7) || t->read_mem(&pid, addr, hdr, sizeof(hdr)))
		return NULL;
	out = malloc(RUBY_NAME_MAX + 1);
	if (!out)
		return NULL;
	if (ruby_str_decode(l, hdr, sizeof(hdr), out, RUBY_NAME_MAX + 1, &heap,
			    &len)) {
		free(out);
		return NULL;
	}
	if (heap) {
		if (t->read_mem(&pid, heap, out, len)) {
			free(out);
			return NULL;
		}
		out[len] = '\0';
	}
	return out;
}

/* The path of an iseq's pathobj: a String, or an Array [path, realpath]. */
static char *read_path(struct ruby_tracker *t, uint32_t pid,
		       const struct ruby_layout *l, uint64_t pathobj)
{
	uint64_t hdr[5], first;

	if (!pathobj || (pathobj & 7) ||
	    t->read_mem(&pid, pathobj, hdr, sizeof(hdr)))
		return NULL;
	if ((hdr[0] & RUBY_T_MASK) == RUBY_T_STRING)
		return read_str(t, pid, l, pathobj);
	if ((hdr[0] & RUBY_T_MASK) != RUBY_T_ARRAY)
		return NULL;
	if (hdr[0] & RUBY_ARY_EMBED)
		first = hdr[2];
	else if (!hdr[4] || t->read_mem(&pid, hdr[4], &first, 8))
		return NULL;
	return read_str(t, pid, l, first);
}

struct iseq_hdr {
	uint64_t body, label_ptr, path_ptr, encoded, insn_info, succ;
	uint32_t iseq_size, insn_info_size, first_line;
};

static bool read_iseq_hdr(struct ruby_tracker *t, uint32_t pid,
			  const struct ruby_layout *l, uint64_t iseq,
			  struct iseq_hdr *h)
{
	uint64_t head[3], lineno;
	uint8_t body[160];
	uint16_t loc = l->body_location;

	if ((iseq & 7) || t->read_mem(&pid, iseq, head, sizeof(head)))
		return false;
	/* an imemo of type iseq, or not an iseq (any more) */
	if ((head[0] & RUBY_T_MASK) != RUBY_T_IMEMO ||
	    ((head[0] >> 12) & 0xf) != RUBY_IMEMO_ISEQ)
		return false;
	h->body = head[l->iseq_body / 8];
	if (!h->body || l->body_read > sizeof(body) ||
	    t->read_mem(&pid, h->body, body, l->body_read))
		return false;
	memcpy(&h->iseq_size, body + l->body_iseq_size, 4);
	memcpy(&h->encoded, body + l->body_encoded, 8);
	memcpy(&h->path_ptr, body + loc, 8);
	memcpy(&h->label_ptr, body + loc + 16, 8);
	memcpy(&lineno, body + loc + 24, 8);
	memcpy(&h->insn_info, body + l->body_insn_info, 8);
	memcpy(&h->insn_info_size, body + l->body_insn_info_size, 4);
	memcpy(&h->succ, body + l->body_succ_table, 8);
	if (l->first_lineno_fixnum)
		lineno = lineno & 1 ? lineno >> 1 : 0;
	else
		lineno = (uint32_t)lineno;
	h->first_line = lineno < (1u << 24) ? (uint32_t)lineno : 0;
	return true;
}

static bool iseq_eq(const void *ctx, uint32_t idx)
{
	const void *const *c = ctx;
	const struct ruby_process *rp = c[0];

	return rp->iseqs[idx].addr == *(const uint64_t *)c[1];
}

static void iseq_drop(struct ruby_process *rp, struct ruby_iseq *q)
{
	free(q->name);
	free(q->file);
	q->name = q->file = NULL;
	mem_account_uncharge(&rp->account, q->bytes);
	rp->bytes -= q->bytes;
	q->bytes = 0;
	q->ok = false;
}

static void resolve(struct ruby_tracker *t, struct ruby_process *rp,
		    struct ruby_iseq *q, const struct iseq_hdr *h, uint64_t now)
{
	iseq_drop(rp, q);
	q->body = h->body;
	q->label_ptr = h->label_ptr;
	q->path_ptr = h->path_ptr;
	q->encoded = h->encoded;
	q->insn_info = h->insn_info;
	q->succ = h->succ;
	q->iseq_size = h->iseq_size;
	q->insn_info_size = h->insn_info_size;
	q->first_line = h->first_line;
	q->checked_ns = now;
	q->name = read_str(t, rp->pid, rp->layout, h->label_ptr);
	q->file = read_path(t, rp->pid, rp->layout, h->path_ptr);
	q->ok = q->name != NULL;
	if (!q->ok || !q->file)
		t->counters.read_errors++;
	q->bytes = (uint32_t)(sizeof(*q) + (q->name ? strlen(q->name) : 0) +
			      (q->file ? strlen(q->file) : 0));
	if (!mem_account_charge(&rp->account, q->bytes)) {
		/* over the budget: keep nothing (the frame is left out),
		 * look again at the next recheck */
		t->counters.over_budget++;
		q->bytes = 0;
		iseq_drop(rp, q);
		return;
	}
	rp->bytes += q->bytes;
}

static struct ruby_iseq *iseq_entry(struct ruby_tracker *t,
				    struct ruby_process *rp, uint64_t iseq,
				    uint64_t now)
{
	const void *ctx[2] = {rp, &iseq};
	struct iseq_hdr h;
	struct ruby_iseq *q;
	uint32_t idx;

	if (idxmap_find(&rp->index, hash_u64(iseq), iseq_eq, ctx, &idx)) {
		q = &rp->iseqs[idx];
		if (now - q->checked_ns < RUBY_RECHECK_NS)
			return q->ok ? q : NULL;
		/* still the same iseq? (collected ones are reused) */
		if (!read_iseq_hdr(t, rp->pid, rp->layout, iseq, &h)) {
			iseq_drop(rp, q);
			q->checked_ns = now;
			t->counters.read_errors++;
			return NULL;
		}
		if (h.body == q->body && h.label_ptr == q->label_ptr &&
		    h.path_ptr == q->path_ptr && h.encoded == q->encoded &&
		    h.insn_info == q->insn_info && q->ok) {
			q->checked_ns = now;
			return q;
		}
		memset(rp->lines, 0, sizeof(rp->lines));
		resolve(t, rp, q, &h, now);
		return q->ok ? q : NULL;
	}
	if (!read_iseq_hdr(t, rp->pid, rp->layout, iseq, &h)) {
		t->counters.read_errors++;
		return NULL;
	}
	if (rp->bytes > RUBY_CACHE_BUDGET)
		clear_iseqs(rp);
	if (rp->niseqs == rp->cap) {
		uint32_t ncap = rp->cap ? rp->cap * 2 : 64;
		struct ruby_iseq *n = realloc(rp->iseqs, ncap * sizeof(*n));

		if (!n)
			return NULL;
		rp->iseqs = n;
		rp->cap = ncap;
	}
	q = &rp->iseqs[rp->niseqs];
	memset(q, 0, sizeof(*q));
	q->addr = iseq;
	if (idxmap_insert(&rp->index, hash_u64(iseq), rp->niseqs))
		return NULL;
	rp->niseqs++;
	resolve(t, rp, q, &h, now);
	return q->ok ? q : NULL;
}

/* The line of instruction pc of iseq q (0: unknown): its entry in the
 * insn_info table, found through the succinct position index. */
static uint32_t line_at(struct ruby_tracker *t, struct ruby_process *rp,
			const struct ruby_iseq *q, uint64_t pc)
{
	const struct ruby_layout *l = rp->layout;
	struct ruby_line *c =
		&rp->lines[hash_u64(pc ^ q->addr) % RUBY_LINE_CACHE];
	uint8_t imm[RUBY_SUCC_IMM_BYTES], block[RUBY_SUCC_BLOCK_BYTES];
	uint64_t pos, boff;
	int64_t entry = 0;
	int32_t line;

	if (c->iseq == q->addr && c->pc == pc)
		return c->line;
	if (pc < q->encoded || (pc - q->encoded) % 8 ||
	    (pc - q->encoded) / 8 > q->iseq_size || !q->insn_info ||
	    !q->insn_info_size)
		return 0;
	/* pc is past the instruction running (calc_lineno) */
	pos = (pc - q->encoded) / 8;
	if (pos)
		pos--;
	if (q->insn_info_size > 1) {
		if (!q->succ ||
		    t->read_mem(&rp->pid, q->succ, imm, sizeof(imm)))
			return 0;
		boff = ruby_succ_block(pos);
		if (boff &&
		    t->read_mem(&rp->pid, q->succ + boff, block, sizeof(block)))
			return 0;
		entry = ruby_succ_lookup(imm, boff ? block : NULL, pos);
		if (entry < 0 || entry >= q->insn_info_size)
			return 0;
	}
	if (t->read_mem(&rp->pid,
			q->insn_info + (uint64_t)entry * l->insn_info_entry,
			&line, 4) ||
	    line <= 0)
		return 0;
	*c = (struct ruby_line){q->addr, pc, (uint32_t)line};
	return (uint32_t)line;
}

bool ruby_frame(struct ruby_tracker *t, uint32_t pid, uint64_t iseq,
		uint64_t pc, uint64_t now_ns, struct runtime_frame *out)
{
	struct ruby_process *rp = find(t, pid);
	struct ruby_iseq *q;
	uint32_t line;

	if (!rp || !rp->layout || !iseq)
		return false;
	q = iseq_entry(t, rp, iseq, now_ns);
	if (!q)
		return false;
	line = line_at(t, rp, q, pc);
	*out = (struct runtime_frame){
		.name = q->name,
		.file = q->file,
		.start_line = q->first_line,
		.line = line ? line : q->first_line,
	};
	return true;
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
	return ruby_frame(rt, p->pid, iseq, pc, now_ns, out);
}

static bool rt_is_loop(void *rt, struct process *p, uint64_t pc)
{
	const struct ruby_process *rp = find(rt, p->pid);

	return rp && rp->loop_lo && pc > rp->loop_lo && pc <= rp->loop_hi;
}

static void rt_counters(const void *rt, struct runtime_counters *out)
{
	const struct ruby_counters *c =
		&((const struct ruby_tracker *)rt)->counters;

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
};
