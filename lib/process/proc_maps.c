// SPDX-License-Identifier: Apache-2.0
#include "process/proc_maps.h"
#include "util/grow.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;

	while (*p < end) {
		char c = **p;
		int d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			break;
		if (++digits > 16)
			return false;
		v = (v << 4) | (uint64_t)d;
		(*p)++;
	}
	*out = v;
	return digits > 0;
}

static bool parse_dec(const char **p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;

	while (*p < end && **p >= '0' && **p <= '9') {
		if (++digits > 20 || v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(**p - '0');
		(*p)++;
	}
	*out = v;
	return digits > 0;
}

static bool expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return false;
	(*p)++;
	return true;
}

static void skip_spaces(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
}

/* The names OTEP 4719 gives the process-context mapping. */
static bool is_otel_ctx_name(const char *p, size_t n)
{
	static const char *const names[] = {
		"/memfd:OTEL_CTX",
		"/memfd:OTEL_CTX (deleted)",
		"[anon_shmem:OTEL_CTX]",
		"[anon:OTEL_CTX]",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && !memcmp(p, names[i], n))
			return true;
	return false;
}

/* One line: "start-end perms offset major:minor inode [path]". */
static int parse_line(const char *p, const char *end, struct proc_mapping *m,
		      bool *keep, bool *otel_ctx, bool *candidate)
{
	static const char deleted_sfx[] = " (deleted)";
	uint64_t maj, min;
	char perms[4];
	size_t plen;

	*keep = false;
	*otel_ctx = false;
	*candidate = false;
	memset(m, 0, sizeof(*m));
	if (!parse_hex(&p, end, &m->start) || !expect(&p, end, '-') ||
	    !parse_hex(&p, end, &m->end) || !expect(&p, end, ' '))
		return -EINVAL;
	if (end - p < 5)
		return -EINVAL;
	memcpy(perms, p, 4);
	p += 4;
	if (!expect(&p, end, ' ') || !parse_hex(&p, end, &m->offset) ||
	    !expect(&p, end, ' ') || !parse_hex(&p, end, &maj) ||
	    !expect(&p, end, ':') || !parse_hex(&p, end, &min) ||
	    !expect(&p, end, ' ') || !parse_dec(&p, end, &m->inode))
		return -EINVAL;
	if (m->end <= m->start || maj > UINT32_MAX || min > UINT32_MAX)
		return -EINVAL;
	m->dev_major = (uint32_t)maj;
	m->dev_minor = (uint32_t)min;
	skip_spaces(&p, end);
	if (perms[2] != 'x') {
		static const char zero[] = "/dev/zero (deleted)";
		size_t n = (size_t)(end - p);

		*otel_ctx = perms[0] == 'r' && is_otel_ctx_name(p, n);
		/* Unnamed private anonymous memory, or shared (which shows
		 * as a deleted /dev/zero). */
		*candidate =
			perms[0] == 'r' && perms[1] == 'w' && !m->offset &&
			m->end - m->start <= PROC_MAPS_CTX_CANDIDATE_MAX &&
			(!n || (n == sizeof(zero) - 1 && !memcmp(p, zero, n)));
		return 0;
	}
	plen = (size_t)(end - p);
	if (plen >= PROC_PATH_MAX)
		return -ENAMETOOLONG;
	if (plen >= sizeof(deleted_sfx) - 1 &&
	    !memcmp(end - (sizeof(deleted_sfx) - 1), deleted_sfx,
		    sizeof(deleted_sfx) - 1)) {
		m->deleted = 1;
		plen -= sizeof(deleted_sfx) - 1;
	}
	if (plen == 0)
		m->kind = PROC_MAPPING_ANON;
	else if (plen == 6 && !memcmp(p, "[vdso]", 6))
		m->kind = PROC_MAPPING_VDSO;
	else if (p[0] == '[')
		m->kind = PROC_MAPPING_SPECIAL;
	else if (p[0] != '/')
		m->kind = PROC_MAPPING_ANON; /* e.g. memfd names: no path */
	else if (m->deleted && plen == 9 && !memcmp(p, "/dev/zero", 9))
		/* Shared anonymous memory (PHP opcache's JIT buffer): no file
		 * to read, code without CFI, as private anonymous memory. */
		m->kind = PROC_MAPPING_ANON;
	else
		m->kind = PROC_MAPPING_FILE;
	m->path = malloc(plen + 1);
	if (!m->path)
		return -ENOMEM;
	memcpy(m->path, p, plen);
	m->path[plen] = '\0';
	*keep = true;
	return 0;
}

static int cmp_start(const void *a, const void *b)
{
	const struct proc_mapping *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int proc_maps_parse(const char *text, size_t len, struct proc_maps *out,
		    unsigned *bad_lines)
{
	const char *p = text, *end = text + len;
	size_t cap = 0;

	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		struct proc_mapping m;
		bool keep, otel_ctx, candidate;
		int err = parse_line(p, le, &m, &keep, &otel_ctx, &candidate);

		p = nl ? nl + 1 : end;
		if (err == -ENOMEM) {
			proc_maps_free(out);
			return err;
		}
		if (err) {
			if (bad_lines)
				(*bad_lines)++;
			continue;
		}
		if (otel_ctx && !out->otel_ctx_start) {
			out->otel_ctx_start = m.start;
			out->otel_ctx_end = m.end;
		}
		if (candidate && out->ncand < PROC_MAPS_CTX_CANDIDATES) {
			out->cand[out->ncand].start = m.start;
			out->cand[out->ncand].end = m.end;
			out->ncand++;
		}
		if (!keep)
			continue;
		if (out->n >= PROC_MAPS_MAX_ENTRIES) {
			free(m.path);
			if (bad_lines)
				(*bad_lines)++;
			continue;
		}
		if (grow_array(&out->v, &cap, out->n + 1, sizeof(*out->v), 32,
			       PROC_MAPS_MAX_ENTRIES, NULL)) {
			free(m.path);
			proc_maps_free(out);
			return -ENOMEM;
		}
		out->v[out->n++] = m;
	}
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), cmp_start);
	return 0;
}

void proc_maps_free(struct proc_maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

/* The index of the mapping holding addr, or m->n if none. */
static size_t find_index(const struct proc_maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < m->v[mid].start)
			hi = mid;
		else if (addr >= m->v[mid].end)
			lo = mid + 1;
		else
			return mid;
	}
	return m->n;
}

const struct proc_mapping *proc_maps_find(const struct proc_maps *m,
					  uint64_t addr)
{
	size_t i = find_index(m, addr);

	return i < m->n ? &m->v[i] : NULL;
}

struct proc_mapping *proc_maps_find_mut(struct proc_maps *m, uint64_t addr)
{
	size_t i = find_index(m, addr);

	return i < m->n ? &m->v[i] : NULL;
}
