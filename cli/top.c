// SPDX-License-Identifier: Apache-2.0
/*
 * `otelprof top`: the functions with the largest self and total share of
 * samples in an OTLP profiles file (protobuf or the file exporter's JSON).
 * Linear in the input: locations are named once and functions found by
 * hash, never by scanning.
 */
#include "cli.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_walk.h"
#include "top.h"
#include "util/idxmap.h"

struct fn_count {
	char *name;
	uint64_t self, total;
	uint64_t seen_in_sample; /* sample serial: count total once per stack */
};

struct top_state {
	struct fn_count *fns;
	size_t nfn, cap;
	struct idxmap by_name;
	uint32_t **loc_fn; /* per document: location index -> fns index */
	size_t ndocs;
	uint64_t total, serial, processes;
	int64_t last_pid;
};

struct name_key {
	const struct top_state *t;
	const char *name;
};

static bool name_eq(const void *ctx, uint32_t i)
{
	const struct name_key *k = ctx;

	return !strcmp(k->t->fns[i].name, k->name);
}

static int intern_fn(struct top_state *t, const char *name, uint32_t *out)
{
	struct name_key k = {t, name};
	uint64_t h = hash_bytes(name, strlen(name), 0x746f70);

	if (idxmap_find(&t->by_name, h, name_eq, &k, out))
		return 0;
	if (t->nfn == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 1024;
		struct fn_count *nv = realloc(t->fns, ncap * sizeof(*nv));

		if (!nv || ncap > UINT32_MAX)
			return -ENOMEM;
		t->fns = nv;
		t->cap = ncap;
	}
	memset(&t->fns[t->nfn], 0, sizeof(t->fns[0]));
	t->fns[t->nfn].name = strdup(name);
	if (!t->fns[t->nfn].name ||
	    idxmap_insert(&t->by_name, h, (uint32_t)t->nfn)) {
		free(t->fns[t->nfn].name);
		return -ENOMEM;
	}
	*out = (uint32_t)t->nfn++;
	return 0;
}

/* Name every location of every document once. */
static int name_locations(struct top_state *t, const struct otlp_docs *docs)
{
	static char buf[FRAME_NAME_MAX];

	t->loc_fn = calloc(docs->n ? docs->n : 1, sizeof(*t->loc_fn));
	if (!t->loc_fn)
		return -ENOMEM;
	t->ndocs = docs->n;
	for (size_t di = 0; di < docs->n; di++) {
		const Otelprof__Otlp__ProfilesDictionary *d =
			docs->v[di]->dictionary;
		size_t n = d ? d->n_location_table : 0;

		if (!n)
			continue;
		t->loc_fn[di] = calloc(n, sizeof(uint32_t));
		if (!t->loc_fn[di])
			return -ENOMEM;
		for (size_t i = 1; i < n; i++) {
			const Otelprof__Otlp__Location *l =
				d->location_table[i];
			/* outermost function of an inlined chain */
			size_t k = l->n_lines ? l->n_lines - 1 : 0;
			int e = intern_fn(
				t,
				frame_name(d, (int32_t)i, k, buf, sizeof(buf)),
				&t->loc_fn[di][i]);

			if (e)
				return e;
		}
	}
	return 0;
}

static int count_sample(const struct walk_sample *s, void *ctx)
{
	struct top_state *t = ctx;
	const uint32_t *loc_fn = t->loc_fn[s->doc];

	if (s->pid != t->last_pid) {
		t->processes++;
		t->last_pid = s->pid;
	}
	t->total += s->weight;
	t->serial++;
	for (size_t k = 0; k < s->stack->n_location_indices; k++) {
		int32_t li = s->stack->location_indices[k];
		struct fn_count *f;

		if (!walk_location_ok(s->d, li) || !loc_fn)
			continue;
		f = &t->fns[loc_fn[li]];
		if (k == 0)
			f->self += s->weight;
		if (f->seen_in_sample != t->serial) {
			f->seen_in_sample = t->serial;
			f->total += s->weight;
		}
	}
	return 0;
}

static int cmp_self(const void *a, const void *b)
{
	const struct fn_count *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int cmp_total(const void *a, const void *b)
{
	const struct fn_count *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void print_ranking(FILE *out, struct fn_count *fns, size_t nfn,
			  unsigned limit, uint64_t total, bool by_total)
{
	if (nfn)
		qsort(fns, nfn, sizeof(*fns), by_total ? cmp_total : cmp_self);
	fprintf(out, "\n%8s %7s  %s\n", by_total ? "total" : "self",
		by_total ? "total%" : "self%", "function");
	for (size_t i = 0; i < nfn && i < limit; i++) {
		uint64_t v = by_total ? fns[i].total : fns[i].self;

		if (!v)
			break;
		fprintf(out, "%8llu %6.2f%%  %s\n", (unsigned long long)v,
			100.0 * (double)v / (double)total, fns[i].name);
	}
}

static void top_free(struct top_state *t)
{
	for (size_t i = 0; i < t->nfn; i++)
		free(t->fns[i].name);
	free(t->fns);
	for (size_t i = 0; t->loc_fn && i < t->ndocs; i++)
		free(t->loc_fn[i]);
	free(t->loc_fn);
	idxmap_free(&t->by_name);
}

int top_report(const struct otlp_docs *docs, unsigned limit, int pid, FILE *out)
{
	struct top_state t;
	int e;

	memset(&t, 0, sizeof(t));
	t.last_pid = INT64_MIN;
	idxmap_init(&t.by_name);
	e = name_locations(&t, docs);
	if (!e)
		e = profile_walk(docs, pid, count_sample, &t);
	if (e) {
		top_free(&t);
		return e;
	}
	fprintf(out, "%llu samples\n", (unsigned long long)t.total);
	if (t.total) {
		print_ranking(out, t.fns, t.nfn, limit, t.total, false);
		print_ranking(out, t.fns, t.nfn, limit, t.total, true);
	}
	top_free(&t);
	return 0;
}

int cmd_top(const struct top_args *a)
{
	struct otlp_docs docs;
	char err[512];
	int e = otlp_docs_read(a->input, &docs, err, sizeof(err));

	if (e) {
		fprintf(stderr, "otelprof: cannot read %s: %s\n", a->input,
			err);
		return 1;
	}
	e = top_report(&docs, a->limit, a->pid, stdout);
	otlp_docs_free(&docs);
	if (e) {
		fprintf(stderr, "otelprof: %s\n", strerror(-e));
		return 1;
	}
	return 0;
}
