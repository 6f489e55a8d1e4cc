// SPDX-License-Identifier: Apache-2.0
#include "symbolize/kallsyms.h"
#include "process/proc_file.h"
#include "util/bsearch_le.h"
#include "util/grow.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Names are bounded by the text they come from (KALLSYMS_MAX_BYTES). */
static const struct str_arena_growth names_growth = {1 << 16, NULL, NULL, NULL};

static int push_name(struct kallsyms *k, const char *s, size_t n, uint32_t *off)
{
	return str_arena_push(&k->names, s, n, &names_growth, off);
}

int kallsyms_parse(const char *text, size_t len, struct kallsyms *k)
{
	const char *p = text, *end = text + len;
	size_t cap = 0;
	/* Module names repeat for thousands of symbols: intern the last one. */
	uint32_t last_mod = 0;
	size_t last_mod_len = 0;
	const char *last_mod_str = NULL;
	bool any_nonzero = false;
	int err;

	memset(k, 0, sizeof(*k));
	err = push_name(k, "", 0, &last_mod);
	if (err)
		return err;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *q = p, *name, *mod = NULL;
		size_t name_len, mod_len = 0;
		uint64_t addr = 0;
		int digits = 0;
		char type;
		struct ksym s;

		p = nl ? nl + 1 : end;
		while (q < le && digits <= 16) {
			char c = *q;
			int d = (c >= '0' && c <= '9')	 ? c - '0'
				: (c >= 'a' && c <= 'f') ? c - 'a' + 10
							 : -1;
			if (d < 0)
				break;
			addr = (addr << 4) | (uint64_t)d;
			digits++;
			q++;
		}
		if (!digits || digits > 16 || le - q < 4 || q[0] != ' ' ||
		    q[2] != ' ') {
			k->bad_lines++;
			continue;
		}
		type = q[1];
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		name = q + 3;
		for (q = name; q < le && *q != '\t' && *q != ' '; q++)
			;
		name_len = (size_t)(q - name);
		if (!name_len || name_len > 1024) {
			k->bad_lines++;
			continue;
		}
		if (q < le) {
			const char *m = memchr(q, '[', (size_t)(le - q));
			const char *me =
				m ? memchr(m, ']', (size_t)(le - m)) : NULL;

			if (m && me && me - m - 1 > 0 && me - m - 1 < 256) {
				mod = m + 1;
				mod_len = (size_t)(me - mod);
			}
		}
		if (k->n >= KALLSYMS_MAX_SYMBOLS)
			break;
		s.addr = addr;
		if (addr)
			any_nonzero = true;
		err = push_name(k, name, name_len, &s.name);
		if (err)
			goto fail;
		s.module = 0;
		if (mod) {
			if (!(last_mod_str && last_mod_len == mod_len &&
			      !memcmp(last_mod_str, mod, mod_len))) {
				err = push_name(k, mod, mod_len, &last_mod);
				if (err)
					goto fail;
				last_mod_str = mod;
				last_mod_len = mod_len;
			}
			s.module = last_mod;
		}
		err = grow_array(&k->syms, &cap, k->n + 1, sizeof(*k->syms),
				 1 << 14, KALLSYMS_MAX_SYMBOLS, NULL);
		if (err)
			goto fail;
		k->syms[k->n++] = s;
	}
	if (k->n && !any_nonzero) {
		kallsyms_free(k);
		return -EPERM;
	}
	if (k->n)
		qsort(k->syms, k->n, sizeof(*k->syms), cmp_ksym);
	/* Held for the whole run: give back what doubling left unused. */
	if (cap > k->n && k->n) {
		struct ksym *v = realloc(k->syms, k->n * sizeof(*v));

		if (v)
			k->syms = v;
	}
	if (k->names.cap > k->names.len) {
		char *b = realloc(k->names.buf, k->names.len);

		if (b) {
			k->names.buf = b;
			k->names.cap = k->names.len;
		}
	}
	return 0;
fail:
	kallsyms_free(k);
	return err;
}

int kallsyms_load(struct kallsyms *k)
{
	char *text;
	long n = proc_read_file("/proc/kallsyms", &text, KALLSYMS_MAX_BYTES);
	int err;

	if (n < 0) {
		memset(k, 0, sizeof(*k));
		return (int)n;
	}
	err = kallsyms_parse(text, (size_t)n, k);
	free(text);
	return err;
}

void kallsyms_free(struct kallsyms *k)
{
	free(k->syms);
	str_arena_free(&k->names);
	memset(k, 0, sizeof(*k));
}

const struct ksym *kallsyms_lookup(const struct kallsyms *k, uint64_t addr)
{
	size_t n = bsearch_le_count(k->syms, k->n, sizeof(*k->syms),
				    offsetof(struct ksym, addr), addr);

	return n ? &k->syms[n - 1] : NULL;
}

size_t kallsyms_memory(const struct kallsyms *k)
{
	return k->n * sizeof(struct ksym) + k->names.len;
}
