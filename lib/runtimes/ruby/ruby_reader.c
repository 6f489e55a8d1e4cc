// SPDX-License-Identifier: Apache-2.0
#include "runtimes/ruby/ruby_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/debug_log.h"

struct ruby_process *ruby_process_new(uint32_t pid, struct mem_budget *budget)
{
	struct ruby_process *rp = calloc(1, sizeof(*rp));

	if (!rp)
		return NULL;
	rp->pid = pid;
	idxmap_init(&rp->index);
	mem_account_init(&rp->account, budget);
	return rp;
}

static void clear_iseqs(struct ruby_process *rp)
{
	for (uint32_t i = 0; i < rp->niseqs; i++) {
		free(rp->iseqs[i].name);
		free(rp->iseqs[i].file);
		free(rp->iseqs[i].qual);
	}
	rp->niseqs = 0;
	rp->bytes = 0;
	idxmap_clear(&rp->index);
	mem_account_release(&rp->account);
	memset(rp->lines, 0, sizeof(rp->lines));
}

void ruby_process_free(struct ruby_process *rp)
{
	if (!rp)
		return;
	clear_iseqs(rp);
	free(rp->iseqs);
	idxmap_free(&rp->index);
	free(rp);
}

#define RUBY_EH_HDR_MAX (1u << 20)

/* The machine code read for the loop and the symbol table is the
 * library's own architecture's (the reader runs on the machine it
 * profiles). */
#if defined(__aarch64__)
#define tail_jumps	  ruby_tail_jumps_a64
#define symbols_from_code ruby_symbols_from_code_a64
#else
#define tail_jumps	  ruby_tail_jumps
#define symbols_from_code ruby_symbols_from_code
#endif

const char *const ruby_call_names[RUBY_CALLS] = {"rb_funcall",
						 "rb_funcallv",
						 "rb_funcallv_kw",
						 "rb_funcallv_public",
						 "rb_funcall_passing_block",
						 "rb_funcall_with_block",
						 "rb_funcall_with_block_kw",
						 "rb_call_super",
						 "rb_check_funcall"};

/* The .eh_frame_hdr the process mapped (its ELF and program headers are
 * in the first mapped page: bias + 0), malloc'd, its ELF address and
 * size; NULL: not found. */
static uint8_t *read_eh_hdr(struct ruby_reader *t, uint32_t pid, uint64_t bias,
			    uint64_t *hvaddr, uint64_t *hsize)
{
	uint8_t eh[64], ph[56];
	uint64_t phoff, vaddr = 0, size = 0;
	uint16_t phnum;
	uint8_t *hdr;

	if (t->read_mem(&pid, bias, eh, sizeof(eh)) ||
	    memcmp(eh, "\177ELF", 4) || eh[4] != 2)
		return NULL;
	memcpy(&phoff, eh + 32, 8);
	memcpy(&phnum, eh + 56, 2);
	for (uint16_t i = 0; i < phnum && i < 64; i++) {
		uint32_t type;

		if (t->read_mem(&pid, bias + phoff + 56ull * i, ph, sizeof(ph)))
			return NULL;
		memcpy(&type, ph, 4);
		if (type == 0x6474e550) { /* PT_GNU_EH_FRAME */
			memcpy(&vaddr, ph + 16, 8);
			memcpy(&size, ph + 40, 8);
			break;
		}
	}
	if (!vaddr || !size || size > RUBY_EH_HDR_MAX)
		return NULL;
	hdr = malloc(size);
	if (hdr && t->read_mem(&pid, bias + vaddr, hdr, size)) {
		free(hdr);
		return NULL;
	}
	*hvaddr = vaddr;
	*hsize = size;
	return hdr;
}

/* The end of the function at ELF address func, from the process's
 * .eh_frame_hdr. 0: unknown. */
static uint64_t function_end(struct ruby_reader *t, uint32_t pid, uint64_t bias,
			     uint64_t func)
{
	uint64_t vaddr, size, end = 0;
	uint8_t *hdr = read_eh_hdr(t, pid, bias, &vaddr, &size);

	if (hdr && ruby_function_end(hdr, size, vaddr, func, &end))
		end = 0;
	free(hdr);
	return end;
}

/* rb_funcall and its kin: where C code calls Ruby methods. */
static void find_calls(struct ruby_reader *t, struct ruby_process *rp,
		       const struct ruby_symbols *s, uint64_t bias)
{
	uint64_t vaddr, size, end;
	uint8_t *hdr = read_eh_hdr(t, rp->pid, bias, &vaddr, &size);

	for (size_t i = 0; hdr && i < RUBY_CALLS; i++)
		if (s->calls[i] &&
		    !ruby_function_end(hdr, size, vaddr, s->calls[i], &end) &&
		    end > s->calls[i] && end - s->calls[i] < (1u << 20)) {
			rp->call_lo[i] = s->calls[i] + bias;
			rp->call_hi[i] = end + bias;
		}
	free(hdr);
}

/* rb_vm_exec: exported up to 3.1; later the function rb_iseq_eval and
 * rb_iseq_eval_main both tail-jump to. */
static void find_loop(struct ruby_reader *t, uint32_t pid,
		      struct ruby_process *rp, const struct ruby_symbols *s,
		      uint64_t bias)
{
	uint64_t start = s->vm_exec, end, a[16], b[16];
	uint8_t code[256];
	size_t na = 0, nb = 0;

	if (!start && s->iseq_eval && s->iseq_eval_main) {
		if (!t->read_mem(&pid, s->iseq_eval + bias, code, sizeof(code)))
			na = tail_jumps(code, sizeof(code), s->iseq_eval, a,
					16);
		if (!t->read_mem(&pid, s->iseq_eval_main + bias, code,
				 sizeof(code)))
			nb = tail_jumps(code, sizeof(code), s->iseq_eval_main,
					b, 16);
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

/* The symbol table, from the code rb_id2str tail-jumps to, or from its
 * own where the lookup is inlined (C functions are named by their ID). */
static void find_symbols(struct ruby_reader *t, struct ruby_process *rp,
			 const struct ruby_symbols *s, uint64_t bias)
{
	uint8_t code[160], own[96];
	uint64_t to[4], last_id, ids;

	if (!s->id2str ||
	    t->read_mem(&rp->pid, s->id2str + bias, own, sizeof(own)))
		return;
	if ((tail_jumps(own, 64, s->id2str, to, 1) != 1 ||
	     t->read_mem(&rp->pid, to[0] + bias, code, sizeof(code)) ||
	     symbols_from_code(code, sizeof(code), to[0], &last_id, &ids)) &&
	    symbols_from_code(own, sizeof(own), s->id2str, &last_id, &ids))
		return;
	rp->sym_last_id = last_id + bias;
	rp->sym_ids = ids + bias;
}

static bool identified(struct ruby_reader *t, struct ruby_process *rp,
		       const struct ruby_symbols *s, uint64_t bias,
		       const struct otelprof_tls_loc *ec);

bool ruby_identify(struct ruby_reader *t, struct ruby_process *rp,
		   const struct ruby_symbols *s, uint64_t bias)
{
	struct otelprof_tls_loc ec = {0};
	char ver[16] = {0};
	uint8_t code[96];
	unsigned major = 0, minor = 0;
	uint64_t got, off = 0;

	if (t->read_mem(&rp->pid, s->version + bias, ver, sizeof(ver) - 1) ||
	    ruby_version_parse(ver, strnlen(ver, sizeof(ver)), &major,
			       &minor)) {
		debug_log("pid %u: Ruby without a readable version; "
			  "native frames only",
			  rp->pid);
		return false;
	}
	rp->layout = ruby_layout_find(major, minor);
	if (!rp->layout) {
		debug_log("pid %u: Ruby %u.%u has no known layout; native "
			  "frames only",
			  rp->pid, major, minor);
		return false;
	}
	if (t->read_mem(&rp->pid, s->thread_current + bias, code,
			sizeof(code)) ||
	    ruby_tls_from_code(code, sizeof(code), s->thread_current, &got)) {
		if (s->ec_loc.kind)
			return identified(t, rp, s, bias, &s->ec_loc);
		debug_log("pid %u: Ruby %u.%u: its thread-local execution "
			  "context was not found; native frames only",
			  rp->pid, major, minor);
		rp->layout = NULL;
		return false;
	}
	/* The variable's offset in its TLS block: the exported symbol's
	 * value where there is one (3.1), else the GOT's second word, which
	 * the linker filled for a local symbol (3.3). */
	if (s->current_ec)
		off = s->current_ec;
	else if (t->read_mem(&rp->pid, got + bias + 8, &off, 8))
		off = (uint64_t)-1;
	if (off >= (1u << 20)) {
		rp->layout = NULL;
		return false;
	}
	ec.kind = OTELPROF_TLS_DTPMOD_GOT;
	ec.addr = got + bias;
	ec.offset = off;
	return identified(t, rp, s, bias, &ec);
}

/* The rest of ruby_identify once ruby_current_ec is located (ec). */
static bool identified(struct ruby_reader *t, struct ruby_process *rp,
		       const struct ruby_symbols *s, uint64_t bias,
		       const struct otelprof_tls_loc *ec)
{
	unsigned major = rp->layout->major, minor = rp->layout->minor;

	find_loop(t, rp->pid, rp, s, bias);
	if (!rp->loop_lo)
		debug_log("pid %u: Ruby %u.%u: rb_vm_exec not found; its "
			  "frames go after the native ones",
			  rp->pid, major, minor);
	find_calls(t, rp, s, bias);
	find_symbols(t, rp, s, bias);
	if (!rp->sym_ids)
		debug_log("pid %u: Ruby %u.%u: its symbol table was not found; "
			  "C functions are left out",
			  rp->pid, major, minor);
	rp->walk = rp->layout->walk;
	/* class paths: read in place (3.3), or found by name among a
	 * class's instance variables (3.1) */
	if (rp->layout->class_path || (rp->layout->class_ext && rp->sym_ids))
		rp->walk.flags |= OTELPROF_RUBY_F_METHOD_ENTRY;
	rp->walk.ec = *ec;
	return true;
}

/* ---- iseqs ---- */

/* A String object's text (malloc'd), or NULL. */
static char *read_str(struct ruby_reader *t, uint32_t pid,
		      const struct ruby_layout *l, uint64_t addr)
{
	uint8_t hdr[RUBY_STR_HDR];
	uint64_t heap = 0, len = 0;
	char *out;
	int rc;

	if (!addr || (addr & 7) || t->read_mem(&pid, addr, hdr, sizeof(hdr)))
		return NULL;
	out = malloc(RUBY_NAME_MAX + 1);
	if (!out)
		return NULL;
	rc = ruby_str_decode(l, hdr, sizeof(hdr), out, RUBY_NAME_MAX + 1, &heap,
			     &len);
	if (rc < 0) {
		free(out);
		return NULL;
	}
	if (rc == 1) /* embedded past what hdr holds */
		heap = addr + l->str_embed_ary;
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
static char *read_path(struct ruby_reader *t, uint32_t pid,
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
	uint64_t local_iseq;
	uint32_t iseq_size, insn_info_size, first_line, type;
};

static bool read_iseq_hdr(struct ruby_reader *t, uint32_t pid,
			  const struct ruby_layout *l, uint64_t iseq,
			  struct iseq_hdr *h)
{
	uint64_t head[3], lineno;
	uint8_t body[192];
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
	memcpy(&h->type, body + l->body_type, 4);
	memcpy(&h->local_iseq, body + l->body_local_iseq, 8);
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
	free(q->qual);
	q->name = q->file = q->qual = NULL;
	q->qual_me = q->qual_at = 0;
	mem_account_uncharge(&rp->account, q->bytes);
	rp->bytes -= q->bytes;
	q->bytes = 0;
	q->ok = false;
}

static bool read_cfunc_hdr(struct ruby_reader *t, uint32_t pid, uint64_t me,
			   struct iseq_hdr *h);
static char *cfunc_name(struct ruby_reader *t, struct ruby_process *rp,
			const struct iseq_hdr *h);

static void resolve(struct ruby_reader *t, struct ruby_process *rp,
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
	q->type = h->type;
	q->local_iseq = h->local_iseq;
	q->checked_ns = now;
	if (q->cfunc) {
		q->name = cfunc_name(t, rp, h);
	} else {
		q->name = read_str(t, rp->pid, rp->layout, h->label_ptr);
		q->file = read_path(t, rp->pid, rp->layout, h->path_ptr);
	}
	q->ok = q->name != NULL;
	if (!q->ok || (!q->file && !q->cfunc))
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

/* The header of the iseq at addr, or of the C function whose method
 * entry is at addr. */
static bool read_hdr(struct ruby_reader *t, struct ruby_process *rp,
		     uint64_t addr, bool cfunc, struct iseq_hdr *h)
{
	return cfunc ? read_cfunc_hdr(t, rp->pid, addr, h)
		     : read_iseq_hdr(t, rp->pid, rp->layout, addr, h);
}

/* The cached entry of the iseq at addr (cfunc: of the C function whose
 * method entry is at addr, keyed addr | 1 apart from iseqs), read or
 * checked again as needed; NULL if it cannot be named. */
static struct ruby_iseq *iseq_entry(struct ruby_reader *t,
				    struct ruby_process *rp, uint64_t addr,
				    bool cfunc, uint64_t now)
{
	uint64_t iseq = cfunc ? addr | 1 : addr;
	const void *ctx[2] = {rp, &iseq};
	struct iseq_hdr h;
	struct ruby_iseq *q;
	uint32_t idx;

	if (idxmap_find(&rp->index, hash_u64(iseq), iseq_eq, ctx, &idx)) {
		q = &rp->iseqs[idx];
		if (now - q->checked_ns < RUBY_RECHECK_NS)
			return q->ok ? q : NULL;
		/* still the same iseq? (collected ones are reused) */
		if (!read_hdr(t, rp, addr, cfunc, &h)) {
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
	if (!read_hdr(t, rp, addr, cfunc, &h)) {
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
	q->cfunc = cfunc;
	if (idxmap_insert(&rp->index, hash_u64(iseq), rp->niseqs))
		return NULL;
	rp->niseqs++;
	resolve(t, rp, q, &h, now);
	return q->ok ? q : NULL;
}

/* The line of instruction pc of iseq q (0: unknown): its entry in the
 * insn_info table, found through the succinct position index. */
static uint32_t line_at(struct ruby_reader *t, struct ruby_process *rp,
			const struct ruby_iseq *q, uint64_t pc)
{
	const struct ruby_layout *l = rp->layout;
	struct ruby_line *c =
		&rp->lines[hash_u64(pc ^ q->addr) % RUBY_LINE_CACHE];
	uint8_t chunk[RUBY_SUCC_BLOCK_BYTES];
	uint64_t pos, off;
	size_t len;
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
		ruby_succ_chunk(pos, &off, &len);
		if (!q->succ ||
		    t->read_mem(&rp->pid, q->succ + off, chunk, len))
			return 0;
		entry = ruby_succ_lookup(chunk, len, pos);
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

static char *id_name(struct ruby_reader *t, struct ruby_process *rp,
		     uint64_t id);

/* Instance variable `want` (named so; its ID cached in *id once seen) of
 * class klass on 3.1, from the first RUBY_IVAR_SCAN entries of its
 * st_table; 0 if not found or not readable. */
static uint64_t class_ivar(struct ruby_reader *t, struct ruby_process *rp,
			   uint64_t klass, const char *want, uint64_t *id)
{
	const struct ruby_layout *l = rp->layout;
	uint64_t ext, tbl, st[RUBY_ST_HDR / 8], start, bound;
	uint64_t ent[RUBY_IVAR_SCAN * RUBY_ST_ENTRY / 8];

	if (t->read_mem(&rp->pid, klass + l->class_ext, &ext, 8) || !ext ||
	    (ext & 7) || t->read_mem(&rp->pid, ext + l->ext_iv_tbl, &tbl, 8) ||
	    !tbl || (tbl & 7) || t->read_mem(&rp->pid, tbl, st, sizeof(st)))
		return 0;
	start = st[RUBY_ST_ENTRIES_AT / 8];
	bound = st[RUBY_ST_ENTRIES_AT / 8 + 1];
	if (bound <= start || start > (1u << 20) || !st[6] || (st[6] & 7))
		return 0;
	if (bound - start > RUBY_IVAR_SCAN)
		bound = start + RUBY_IVAR_SCAN;
	if (t->read_mem(&rp->pid, st[6] + start * RUBY_ST_ENTRY, ent,
			(bound - start) * RUBY_ST_ENTRY))
		return 0;
	for (uint64_t i = 0; i < bound - start; i++) {
		uint64_t hash = ent[3 * i], key = ent[3 * i + 1];
		char *name;

		if (hash == ~0ull || !key)
			continue; /* deleted */
		if (*id) {
			if (key == *id)
				return ent[3 * i + 2];
			continue;
		}
		name = id_name(t, rp, key);
		if (name && !strcmp(name, want)) {
			free(name);
			*id = key;
			return ent[3 * i + 2];
		}
		free(name);
	}
	return 0;
}

/* The path of class or module klass ("Foo::Bar"; malloc'd) and the
 * separator its methods take ('#', or '.' for a singleton class, named
 * after the object it is attached to), or NULL: not readable, or a class
 * without a path (anonymous) or this version's paths are not read. */
static char *class_name(struct ruby_reader *t, struct ruby_process *rp,
			uint64_t klass, char *sep)
{
	const struct ruby_layout *l = rp->layout;
	uint64_t kflags, path;

	*sep = '#';
	if ((!l->class_path && !l->class_ext) || !klass || (klass & 7) ||
	    t->read_mem(&rp->pid, klass, &kflags, 8))
		return NULL;
	if (kflags & l->fl_singleton) {
		if (l->class_ext)
			klass = class_ivar(t, rp, klass, "__attached__",
					   &rp->id_attached);
		else if (t->read_mem(&rp->pid, klass + l->class_attached,
				     &klass, 8))
			return NULL;
		if (!klass || (klass & 7) ||
		    t->read_mem(&rp->pid, klass, &kflags, 8))
			return NULL;
		*sep = '.';
	}
	if ((kflags & RUBY_T_MASK) != RUBY_T_CLASS &&
	    (kflags & RUBY_T_MASK) != RUBY_T_MODULE)
		return NULL;
	if (l->class_ext)
		path = class_ivar(t, rp, klass, "__classpath__",
				  &rp->id_classpath);
	else if (t->read_mem(&rp->pid, klass + l->class_path, &path, 8))
		return NULL;
	return read_str(t, rp->pid, l, path);
}

/* "<the first np bytes of pre>cls<sep>name" (malloc'd), or NULL if it
 * would be longer than a name may be. */
static char *join_name(const char *pre, size_t np, const char *cls, char sep,
		       const char *name)
{
	size_t lc = strlen(cls), ln = strlen(name);
	char *out;

	if (np + lc + 1 + ln > RUBY_NAME_MAX)
		return NULL;
	out = malloc(np + lc + 1 + ln + 1);
	if (!out)
		return NULL;
	memcpy(out, pre, np);
	memcpy(out + np, cls, lc);
	out[np + lc] = sep;
	memcpy(out + np + lc + 1, name, ln + 1);
	return out;
}

/* The 5 words of an imemo_ment (flags, defined_class, def, called_id,
 * owner) at me, or false. A frame that set $~ or $_ keeps an imemo_svar
 * there instead, holding the method entry (its cref_or_me): followed
 * once. */
static bool read_ment_at(struct ruby_reader *t, uint32_t pid, uint64_t me,
			 uint64_t m[5], uint64_t *at)
{
	for (int hop = 0; hop < 2; hop++) {
		*at = me;
		if (!me || (me & 7) || t->read_mem(&pid, me, m, 5 * 8) ||
		    (m[0] & RUBY_T_MASK) != RUBY_T_IMEMO)
			return false;
		if (((m[0] >> 12) & 0xf) == RUBY_IMEMO_SVAR) {
			me = m[1];
			continue;
		}
		return ((m[0] >> 12) & 0xf) == RUBY_IMEMO_MENT && m[2] &&
		       !(m[2] & 7);
	}
	return false;
}

static bool read_ment(struct ruby_reader *t, uint32_t pid, uint64_t me,
		      uint64_t m[5])
{
	uint64_t at;

	return read_ment_at(t, pid, me, m, &at);
}

/* Forget q's qualified name, and what it was charged. */
static void drop_qual(struct ruby_process *rp, struct ruby_iseq *q)
{
	size_t n;

	if (!q->qual)
		return;
	n = strlen(q->qual) + 1;
	mem_account_uncharge(&rp->account, n);
	q->bytes -= (uint32_t)n;
	rp->bytes -= n;
	free(q->qual);
	q->qual = NULL;
}

/* The method name the label of block q ends in (as CRuby's
 * rb_profile_frame_full_label takes it: its method iseq's label), if
 * that method is method_iseq; malloc'd, or NULL. */
static char *block_method(struct ruby_reader *t, struct ruby_process *rp,
			  const struct ruby_iseq *q, uint64_t method_iseq)
{
	struct iseq_hdr h;
	size_t ln, lm;
	char *name;

	if (q->type != RUBY_ISEQ_TYPE_BLOCK || q->local_iseq != method_iseq ||
	    !read_iseq_hdr(t, rp->pid, rp->layout, method_iseq, &h))
		return NULL;
	name = read_str(t, rp->pid, rp->layout, h.label_ptr);
	if (!name)
		return NULL;
	ln = strlen(q->name);
	lm = strlen(name);
	if (!lm || lm >= ln || strcmp(q->name + ln - lm, name)) {
		free(name);
		return NULL;
	}
	return name;
}

/* "Foo::Bar#baz" or "Foo.baz" for method entry me of iseq q (a block's:
 * "block in Foo::Bar#baz", its label with the method qualified; cached on
 * q), or NULL: not a method entry of q (of its method, for a block), or
 * a class without a path (anonymous) or not readable. */
static const char *qualified(struct ruby_reader *t, struct ruby_process *rp,
			     struct ruby_iseq *q, uint64_t me)
{
	uint64_t m[5], def[2], at;
	char *cls, *qual, *method = NULL;
	size_t prefix = 0;
	char sep;

	if (q->qual_me == me)
		return q->qual;
	if (!read_ment_at(t, rp->pid, me, m, &at)) {
		drop_qual(rp, q);
		q->qual_me = me;
		return NULL;
	}
	/* each call that sets $~ holds the same method entry in a new
	 * svar: the name stays */
	q->qual_me = me;
	if (q->qual && at == q->qual_at)
		return q->qual;
	drop_qual(rp, q);
	q->qual_at = at;
	/* an imemo_ment whose definition runs this iseq, or the method
	 * this block is in */
	if (t->read_mem(&rp->pid, m[2], def, sizeof(def)) ||
	    (def[0] & 0xf) != RUBY_METHOD_ISEQ)
		return NULL;
	if (def[1] != q->addr) {
		method = block_method(t, rp, q, def[1]);
		if (!method)
			return NULL;
		prefix = strlen(q->name) - strlen(method);
	}
	cls = class_name(t, rp, m[4], &sep);
	if (!cls) {
		free(method);
		return NULL;
	}
	qual = join_name(q->name, prefix, cls, sep, method ? method : q->name);
	free(cls);
	free(method);
	if (qual && mem_account_charge(&rp->account, strlen(qual) + 1)) {
		q->qual = qual;
		q->bytes += (uint32_t)strlen(qual) + 1;
		rp->bytes += strlen(qual) + 1;
	} else {
		free(qual);
	}
	return q->qual;
}

/* Element idx of Array ary, or false (not an Array, out of its bounds,
 * not readable). */
static bool ary_at(struct ruby_reader *t, uint32_t pid, uint64_t ary,
		   uint64_t idx, uint64_t *out)
{
	uint64_t h[5], len, ptr;

	if (!ary || (ary & 7) || t->read_mem(&pid, ary, h, sizeof(h)) ||
	    (h[0] & RUBY_T_MASK) != RUBY_T_ARRAY)
		return false;
	if (h[0] & RUBY_ARY_EMBED) {
		len = (h[0] >> 15) & 0x7f; /* RARRAY_EMBED_LEN_MASK */
		ptr = ary + 16;
	} else {
		len = h[2];
		ptr = h[4];
	}
	if (idx >= len || !ptr || (ptr & 7))
		return false;
	return !t->read_mem(&pid, ptr + 8 * idx, out, 8);
}

/* The name of ID id (malloc'd), from the symbol table, or NULL. */
static char *id_name(struct ruby_reader *t, struct ruby_process *rp,
		     uint64_t id)
{
	uint64_t serial = ruby_id_serial(id), ids, entry, str;
	uint32_t last = 0;

	if (!rp->sym_ids || !serial ||
	    t->read_mem(&rp->pid, rp->sym_last_id, &last, 4) || serial > last ||
	    t->read_mem(&rp->pid, rp->sym_ids, &ids, 8) ||
	    !ary_at(t, rp->pid, ids, serial / RUBY_ID_ENTRY_UNIT, &entry) ||
	    !ary_at(t, rp->pid, entry, (serial % RUBY_ID_ENTRY_UNIT) * 2, &str))
		return NULL;
	return read_str(t, rp->pid, rp->layout, str);
}

/* What identifies a C function's method entry (its definition, ID and
 * owner), in iseq_hdr's fields; false if me is not a C function's. */
static bool read_cfunc_hdr(struct ruby_reader *t, uint32_t pid, uint64_t me,
			   struct iseq_hdr *h)
{
	uint64_t m[5], d[1], id;

	if (!read_ment(t, pid, me, m) || t->read_mem(&pid, m[2], d, 8) ||
	    (d[0] & 0xf) != RUBY_METHOD_CFUNC ||
	    t->read_mem(&pid, m[2] + RUBY_DEF_ORIGINAL_ID, &id, 8) || !id)
		return false;
	memset(h, 0, sizeof(*h));
	h->body = m[2];
	h->label_ptr = id;
	h->path_ptr = m[4];
	return true;
}

/* A C function's name ("Integer#times", or "times" where the class path
 * is not read), malloc'd, or NULL. */
static char *cfunc_name(struct ruby_reader *t, struct ruby_process *rp,
			const struct iseq_hdr *h)
{
	char *name = id_name(t, rp, h->label_ptr), *cls, *qual;
	char sep;

	if (!name)
		return NULL;
	cls = class_name(t, rp, h->path_ptr, &sep);
	if (!cls)
		return name;
	qual = join_name("", 0, cls, sep, name);
	free(cls);
	if (!qual)
		return name;
	free(name);
	return qual;
}

bool ruby_frame(struct ruby_reader *t, struct ruby_process *rp, uint64_t iseq,
		uint64_t pc, uint64_t now_ns, struct runtime_frame *out)
{
	struct ruby_iseq *q;
	const char *qual = NULL;
	uint64_t me = 0;
	uint32_t line;

	if (!rp || !rp->layout || !iseq)
		return false;
	if ((iseq & OTELPROF_RUBY_ME_TAG) && !pc) {
		/* a C function's frame: its method entry alone */
		rp->pending_me = rp->pending_iseq = 0;
		q = iseq_entry(t, rp, iseq & ~OTELPROF_RUBY_ME_TAG, true,
			       now_ns);
		if (!q)
			return false;
		/* no file; the line is unknown (0) */
		*out = (struct runtime_frame){.name = q->name};
		return true;
	}
	if (iseq & OTELPROF_RUBY_ME_TAG) {
		/* for the frame that follows */
		rp->pending_me = iseq & ~OTELPROF_RUBY_ME_TAG;
		rp->pending_iseq = pc;
		return false;
	}
	if (rp->pending_iseq == iseq)
		me = rp->pending_me;
	rp->pending_me = rp->pending_iseq = 0;
	q = iseq_entry(t, rp, iseq, false, now_ns);
	if (!q)
		return false;
	if (me)
		qual = qualified(t, rp, q, me);
	line = line_at(t, rp, q, pc);
	*out = (struct runtime_frame){
		.name = qual ? qual : q->name,
		.file = q->file,
		.start_line = q->first_line,
		.line = line, /* 0: unknown, never a guess */
	};
	return true;
}
