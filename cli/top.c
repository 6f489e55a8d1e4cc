// SPDX-License-Identifier: Apache-2.0
/*
 * `otelprof top`: decode an OTLP ProfilesData file with protobuf-c and
 * print the functions with the largest self and total share of samples.
 * Every index read from the file is range-checked: the file may be
 * anybody's.
 */
#include "cli.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp_profiles.pb-c.h"

#define TOP_MAX_INPUT_BYTES (1u << 30)

typedef Otelprof__Otlp__ProfilesData ProfilesData;
typedef Otelprof__Otlp__ProfilesDictionary Dictionary;

struct fn_count {
	const char
		*name; /* display name, owned by names[] or the string table */
	uint64_t self, total;
	uint64_t seen_in_sample; /* sample serial: count total once per stack */
};

static int read_all(const char *path, uint8_t **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = NULL;

	if (!f)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	for (;;) {
		size_t r;

		if (n == cap) {
			uint8_t *nb;

			if (cap >= TOP_MAX_INPUT_BYTES) {
				free(buf);
				fclose(f);
				return -EFBIG;
			}
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	fclose(f);
	*out = buf;
	*len = n;
	return 0;
}

static const char *str_at(const Dictionary *d, int64_t i)
{
	return (i >= 0 && (size_t)i < d->n_string_table) ? d->string_table[i]
							 : "";
}

/* Display name of location li: its outermost function, else "file+0xaddr". */
static char *location_name(const Dictionary *d, size_t li)
{
	const Otelprof__Otlp__Location *l = d->location_table[li];
	char buf[512];

	if (l->n_lines) {
		const Otelprof__Otlp__Line *ln = l->lines[l->n_lines - 1];

		if (ln->function_index > 0 &&
		    (size_t)ln->function_index < d->n_function_table) {
			const char *n =
				str_at(d, d->function_table[ln->function_index]
						  ->name_strindex);
			if (*n)
				return strdup(n);
		}
	}
	if (l->mapping_index > 0 &&
	    (size_t)l->mapping_index < d->n_mapping_table) {
		const char *fn = str_at(
			d,
			d->mapping_table[l->mapping_index]->filename_strindex);
		const char *base = strrchr(fn, '/');

		snprintf(buf, sizeof(buf), "%s+0x%llx", base ? base + 1 : fn,
			 (unsigned long long)l->address);
	} else {
		snprintf(buf, sizeof(buf), "0x%llx",
			 (unsigned long long)l->address);
	}
	return strdup(buf);
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

/* The top `limit` functions by self (or total) samples. */
static void print_ranking(struct fn_count *fns, size_t nfn, unsigned limit,
			  uint64_t total, bool by_total)
{
	qsort(fns, nfn, sizeof(*fns), by_total ? cmp_total : cmp_self);
	printf("\n%8s %7s  %s\n", by_total ? "total" : "self",
	       by_total ? "total%" : "self%", "function");
	for (size_t i = 0; i < nfn && i < limit; i++) {
		uint64_t v = by_total ? fns[i].total : fns[i].self;

		if (!v)
			break;
		printf("%8llu %6.2f%%  %s\n", (unsigned long long)v,
		       100.0 * (double)v / (double)total, fns[i].name);
	}
}

static int64_t resource_pid(const Otelprof__Otlp__ResourceProfiles *rp)
{
	if (!rp->resource)
		return -1;
	for (size_t i = 0; i < rp->resource->n_attributes; i++) {
		const Otelprof__Otlp__KeyValue *kv =
			rp->resource->attributes[i];

		if (kv->key && !strcmp(kv->key, "process.pid") && kv->value &&
		    kv->value->value_case ==
			    OTELPROF__OTLP__ANY_VALUE__VALUE_INT_VALUE)
			return kv->value->int_value;
	}
	return -1;
}

int cmd_top(const struct top_args *a)
{
	uint8_t *buf = NULL;
	size_t len = 0, nfn = 0;
	ProfilesData *pd;
	const Dictionary *d;
	struct fn_count *fns = NULL;
	size_t *loc_fn = NULL; /* location index -> fns index */
	uint64_t total = 0, serial = 0;
	char **names = NULL;
	int e = read_all(a->input, &buf, &len);

	if (e) {
		fprintf(stderr, "otelprof: cannot read %s: %s\n", a->input,
			strerror(-e));
		return 1;
	}
	pd = otelprof__otlp__profiles_data__unpack(NULL, len, buf);
	free(buf);
	if (!pd) {
		fprintf(stderr,
			"otelprof: %s is not an OTLP ProfilesData message\n",
			a->input);
		return 1;
	}
	d = pd->dictionary;
	if (!d || !d->n_location_table) {
		printf("no samples\n");
		otelprof__otlp__profiles_data__free_unpacked(pd, NULL);
		return 0;
	}
	/* Locations with the same display name share one counter. */
	loc_fn = calloc(d->n_location_table, sizeof(*loc_fn));
	fns = calloc(d->n_location_table, sizeof(*fns));
	names = calloc(d->n_location_table, sizeof(*names));
	if (!loc_fn || !fns || !names)
		goto oom;
	for (size_t i = 0; i < d->n_location_table; i++) {
		size_t k;

		names[i] = location_name(d, i);
		if (!names[i])
			goto oom;
		for (k = 0; k < nfn; k++)
			if (!strcmp(fns[k].name, names[i]))
				break;
		if (k == nfn)
			fns[nfn++].name = names[i];
		loc_fn[i] = k;
	}
	for (size_t r = 0; r < pd->n_resource_profiles; r++) {
		const Otelprof__Otlp__ResourceProfiles *rp =
			pd->resource_profiles[r];

		if (a->pid && resource_pid(rp) != a->pid)
			continue;
		for (size_t s = 0; s < rp->n_scope_profiles; s++) {
			const Otelprof__Otlp__ScopeProfiles *sp =
				rp->scope_profiles[s];

			for (size_t p = 0; p < sp->n_profiles; p++) {
				const Otelprof__Otlp__Profile *prof =
					sp->profiles[p];

				for (size_t i = 0; i < prof->n_samples; i++) {
					const Otelprof__Otlp__Sample *smp =
						prof->samples[i];
					const Otelprof__Otlp__Stack *st;
					uint64_t w =
						smp->n_timestamps_unix_nano
							? smp->n_timestamps_unix_nano
							: 1;

					if (smp->n_values && smp->values[0] > 0)
						w = (uint64_t)smp->values[0];
					if (smp->stack_index <= 0 ||
					    (size_t)smp->stack_index >=
						    d->n_stack_table)
						continue;
					st = d->stack_table[smp->stack_index];
					total += w;
					serial++;
					for (size_t k = 0;
					     k < st->n_location_indices; k++) {
						int32_t li =
							st->location_indices[k];
						struct fn_count *f;

						if (li <= 0 ||
						    (size_t)li >=
							    d->n_location_table)
							continue;
						f = &fns[loc_fn[li]];
						if (k == 0)
							f->self += w;
						if (f->seen_in_sample !=
						    serial) {
							f->seen_in_sample =
								serial;
							f->total += w;
						}
					}
				}
			}
		}
	}
	printf("%llu samples in %zu processes\n", (unsigned long long)total,
	       pd->n_resource_profiles);
	if (total) {
		print_ranking(fns, nfn, a->limit, total, false);
		print_ranking(fns, nfn, a->limit, total, true);
	}
	for (size_t i = 0; i < d->n_location_table; i++)
		free(names[i]);
	free(names);
	free(fns);
	free(loc_fn);
	otelprof__otlp__profiles_data__free_unpacked(pd, NULL);
	return 0;
oom:
	fprintf(stderr, "otelprof: out of memory\n");
	if (names)
		for (size_t i = 0; i < d->n_location_table; i++)
			free(names[i]);
	free(names);
	free(fns);
	free(loc_fn);
	otelprof__otlp__profiles_data__free_unpacked(pd, NULL);
	return 1;
}
