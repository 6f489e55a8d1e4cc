// SPDX-License-Identifier: Apache-2.0
#include "symbolize/jit_symbols.h"
#include "util/bsearch_le.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A JIT blob larger than this is not code: the entry is refused. */
#define JIT_CODE_MAX (1ull << 32)
/* jitdump: a header is 40 bytes; records start with {id, size, time}. */
#define JITDUMP_HEADER_MIN 40u
#define JITDUMP_HEADER_MAX 4096u
#define JITDUMP_REC_HDR	   16u
#define JITDUMP_LOAD_FIXED 56u /* record header + pid..code_index */
#define JITDUMP_MOVE_SIZE  64u
/* Records other than loads are waited for whole up to this size;
 * larger ones (debug info, unwinding info) are skipped unread. */
#define JITDUMP_WAIT_MAX (64u << 10)

enum { JIT_CODE_LOAD = 0, JIT_CODE_MOVE = 1 };

void jit_symbols_init(struct jit_symbols *s, size_t budget)
{
	memset(s, 0, sizeof(*s));
	s->budget = budget;
}

void jit_symbols_free(struct jit_symbols *s)
{
	if (s->account)
		mem_account_uncharge(s->account, jit_symbols_memory(s));
	free(s->v);
	str_arena_free(&s->names);
	memset(s, 0, sizeof(*s));
}

void jit_symbols_clear(struct jit_symbols *s)
{
	size_t budget = s->budget;
	struct mem_account *account = s->account;

	jit_symbols_free(s);
	jit_symbols_init(s, budget);
	s->account = account;
}

/* Growing an array from old to new bytes: within the global budget? */
static bool charge(struct jit_symbols *s, size_t old, size_t new_bytes)
{
	return !s->account || mem_account_charge(s->account, new_bytes - old);
}

size_t jit_symbols_memory(const struct jit_symbols *s)
{
	return (size_t)s->cap * sizeof(*s->v) + s->names.cap;
}

/* Growing the names to new_cap: within the file's budget beside the
 * entries, and the global one. */
static bool names_charge(void *ctx, size_t new_cap, size_t grow)
{
	struct jit_symbols *s = ctx;

	(void)grow;
	return new_cap <= UINT32_MAX &&
	       (size_t)s->cap * sizeof(*s->v) + new_cap <= s->budget &&
	       charge(s, s->names.cap, new_cap);
}

static void names_uncharge(void *ctx, size_t grow)
{
	struct jit_symbols *s = ctx;

	if (s->account)
		mem_account_uncharge(s->account, grow);
}

/* Room for one more entry and `extra` name bytes, within the budget. */
static bool reserve(struct jit_symbols *s, size_t extra)
{
	const struct str_arena_growth names_growth = {16384, names_charge,
						      names_uncharge, s};

	if (s->n == s->cap) {
		uint32_t ncap = s->cap ? s->cap * 2 : 256;
		struct jit_sym *nv;

		if (ncap > UINT32_MAX / 2 ||
		    (size_t)ncap * sizeof(*nv) + s->names.cap > s->budget ||
		    !charge(s, (size_t)s->cap * sizeof(*nv),
			    (size_t)ncap * sizeof(*nv)))
			return false;
		nv = realloc(s->v, (size_t)ncap * sizeof(*nv));
		if (!nv) {
			if (s->account)
				mem_account_uncharge(s->account,
						     (size_t)(ncap - s->cap) *
							     sizeof(*nv));
			return false;
		}
		s->v = nv;
		s->cap = ncap;
	}
	return !str_arena_reserve(&s->names, extra, &names_growth);
}

static void add_entry(struct jit_symbols *s, uint64_t start, uint64_t size,
		      uint32_t name)
{
	struct jit_sym *e = &s->v[s->n++];

	e->start = start;
	e->end = start + size;
	e->name = name;
	e->seq = s->next_seq++;
	s->sorted = false;
}

static void add(struct jit_symbols *s, uint64_t start, uint64_t size,
		const char *name, size_t len)
{
	if (!size || size > JIT_CODE_MAX || start > UINT64_MAX - size || !len ||
	    len > JIT_NAME_MAX || memchr(name, 0, len)) {
		s->bad++;
		return;
	}
	if (!reserve(s, len + 1)) {
		s->over_budget++;
		return;
	}
	add_entry(s, start, size, str_arena_append(&s->names, name, len));
}

/* ---- perf map: "START SIZE name", hex numbers, 0x optional ---- */

static bool hex(const char **p, const char *end, uint64_t *out)
{
	const char *q = *p;
	uint64_t v = 0;
	int digits = 0;

	if (end - q > 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
		q += 2;
	for (; q < end; q++, digits++) {
		unsigned d;

		if (*q >= '0' && *q <= '9')
			d = (unsigned)(*q - '0');
		else if (*q >= 'a' && *q <= 'f')
			d = (unsigned)(*q - 'a' + 10);
		else if (*q >= 'A' && *q <= 'F')
			d = (unsigned)(*q - 'A' + 10);
		else
			break;
		if (digits >= 16)
			return false;
		v = v << 4 | d;
	}
	if (!digits)
		return false;
	*p = q;
	*out = v;
	return true;
}

static void perf_map_line(struct jit_symbols *s, const char *l, size_t len)
{
	const char *p = l, *end = l + len;
	uint64_t start, size;

	if (len && end[-1] == '\r')
		end--;
	if (p == end)
		return; /* blank lines are harmless */
	if (!hex(&p, end, &start) || p == end || *p++ != ' ' ||
	    !hex(&p, end, &size) || p == end || *p++ != ' ') {
		s->bad++;
		return;
	}
	add(s, start, size, p, (size_t)(end - p));
}

size_t perf_map_feed(struct jit_symbols *s, const char *text, size_t len,
		     bool at_end)
{
	size_t off = 0;

	while (off < len) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - (text + off)) : len - off;

		if (!nl && !at_end) {
			if (s->skip_line)
				return len;
			if (n > JIT_NAME_MAX + 64) {
				/* No line is this long: skip to its end. */
				s->skip_line = true;
				s->bad++;
				return len;
			}
			return off;
		}
		if (s->skip_line)
			s->skip_line = false;
		else
			perf_map_line(s, text + off, n);
		off += n + (nl ? 1 : 0);
	}
	return off;
}

/* ---- jitdump ---- */

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void sort(struct jit_symbols *s)
{
	if (!s->sorted && s->n)
		qsort(s->v, s->n, sizeof(*s->v), cmp_sym);
	s->sorted = true;
}

/* Index of the last entry starting at or below pc, or -1. */
static int64_t last_at_or_below(struct jit_symbols *s, uint64_t pc)
{
	size_t n;

	sort(s);
	n = bsearch_le_count(s->v, s->n, sizeof(*s->v),
			     offsetof(struct jit_sym, start), pc);
	return (int64_t)n - 1;
}

static void jitdump_move(struct jit_symbols *s, const uint8_t *r)
{
	uint64_t old = rd64(r + 32), new_addr = rd64(r + 40),
		 size = rd64(r + 48);
	int64_t i = last_at_or_below(s, old);

	if (i < 0 || s->v[i].start != old || !size || size > JIT_CODE_MAX ||
	    new_addr > UINT64_MAX - size) {
		s->bad++;
		return;
	}
	if (!reserve(s, 0)) {
		s->over_budget++;
		return;
	}
	/* The name is shared with the old entry. */
	add_entry(s, new_addr, size, s->v[i].name);
}

/* A load whose name is at r + 56 and ends before r + avail. */
static void jitdump_load(struct jit_symbols *s, const uint8_t *r, size_t avail)
{
	const uint8_t *name = r + JITDUMP_LOAD_FIXED;
	const uint8_t *nul = memchr(name, 0, avail - JITDUMP_LOAD_FIXED);

	if (!nul) {
		s->bad++;
		return;
	}
	add(s, rd64(r + 32), rd64(r + 40), (const char *)name,
	    (size_t)(nul - name));
}

size_t jitdump_feed(struct jit_symbols *s, const uint8_t *data, size_t len)
{
	size_t off = 0;

	if (s->broken)
		return len;
	if (!s->header_seen) {
		uint32_t hsize;

		if (len < JITDUMP_HEADER_MIN)
			return 0;
		hsize = rd32(data + 8);
		if (rd32(data) != JITDUMP_MAGIC || hsize < JITDUMP_HEADER_MIN ||
		    hsize > JITDUMP_HEADER_MAX) {
			s->bad++;
			s->broken = true;
			return len;
		}
		if (hsize > len)
			return 0;
		s->header_seen = true;
		off = hsize;
	}
	if (s->skip) {
		size_t n = s->skip < len - off ? (size_t)s->skip : len - off;

		off += n;
		s->skip -= n;
	}
	while (!s->skip && len - off >= JITDUMP_REC_HDR) {
		const uint8_t *r = data + off;
		uint32_t id = rd32(r), size = rd32(r + 4);
		size_t avail = len - off;

		if (size < JITDUMP_REC_HDR) {
			s->bad++;
			s->broken = true;
			return len;
		}
		if (size <= avail) {
			if (id == JIT_CODE_LOAD) {
				if (size > JITDUMP_LOAD_FIXED)
					jitdump_load(s, r, size);
				else
					s->bad++;
			} else if (id == JIT_CODE_MOVE) {
				if (size >= JITDUMP_MOVE_SIZE)
					jitdump_move(s, r);
				else
					s->bad++;
			}
			off += size;
			continue;
		}
		/* Incomplete record. A load's code bytes are never needed:
		 * once its name is here, the rest is skipped unread. */
		if (id == JIT_CODE_LOAD && avail > JITDUMP_LOAD_FIXED &&
		    (memchr(r + JITDUMP_LOAD_FIXED, 0,
			    avail - JITDUMP_LOAD_FIXED) ||
		     avail - JITDUMP_LOAD_FIXED > JIT_NAME_MAX)) {
			jitdump_load(s, r, avail);
			s->skip = size - avail;
			return len;
		}
		if (id != JIT_CODE_LOAD && size > JITDUMP_WAIT_MAX) {
			s->skip = size - avail;
			return len;
		}
		break;
	}
	return off;
}

const struct jit_sym *jit_symbols_lookup(struct jit_symbols *s, uint64_t pc)
{
	int64_t i = last_at_or_below(s, pc);
	const struct jit_sym *best = NULL;

	/* Entries may overlap (code space reused after a GC): among the
	 * few nearest starts, the newest that holds pc wins. */
	for (int64_t k = i; k >= 0 && k > i - 16; k--)
		if (pc < s->v[k].end && (!best || s->v[k].seq > best->seq))
			best = &s->v[k];
	return best;
}

/* ---- names ---- */

static bool all_digits(const char *p, const char *end)
{
	if (p == end)
		return false;
	for (; p < end; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* The space before the script's location in "name location": names may
 * hold spaces ("get x"), paths too; a location is absolute, a URL or a
 * node: module, else it is the last word. */
static char *location_start(char *p)
{
	for (char *sp = strchr(p, ' '); sp; sp = strchr(sp + 1, ' '))
		if (sp[1] == '/' || !strncmp(sp + 1, "node:", 5) ||
		    strstr(sp + 1, "://"))
			return sp;
	return strrchr(p, ' ');
}

void jit_name_split(const char *name, char *buf, struct jit_frame_name *out)
{
	static const char *const v8_prefixes[] = {
		"JS:", "LazyCompile:", "Function:", "Script:"};
	size_t len = strnlen(name, JIT_NAME_MAX);
	char *p = NULL, *sp, *c1, *c2;

	memset(out, 0, sizeof(*out));
	memcpy(buf, name, len);
	buf[len] = 0;
	out->function = buf;
	for (size_t i = 0; i < sizeof(v8_prefixes) / sizeof(v8_prefixes[0]);
	     i++) {
		size_t pl = strlen(v8_prefixes[i]);

		if (!strncmp(buf, v8_prefixes[i], pl)) {
			out->v8js = true;
			p = buf + pl;
			break;
		}
	}
	if (!out->v8js)
		return;
	/* V8's tier marker: ~ interpreted, ^ baseline, + maglev, * optimized */
	if (*p && strchr("~^+*-", *p))
		p++;
	sp = location_start(p);
	out->function = p;
	if (!sp)
		return;
	*sp = 0;
	out->file = sp + 1;
	if (!*p)
		out->function = "(anonymous)";
	/* file:line:col or file:line */
	c2 = strrchr(sp + 1, ':');
	if (c2 && all_digits(c2 + 1, c2 + strlen(c2))) {
		*c2 = 0;
		c1 = strrchr(sp + 1, ':');
		if (c1 && all_digits(c1 + 1, c2)) {
			*c1 = 0;
			c2 = c1;
		}
		out->line = (uint32_t)strtoul(c2 + 1, NULL, 10);
	}
	if (!*out->file)
		out->file = NULL;
}
