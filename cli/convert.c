// SPDX-License-Identifier: Apache-2.0
/*
 * `otelprof convert`: an OTLP profiles file (protobuf or the file exporter's
 * JSON) as pprof (go tool pprof, Pyroscope, Parca), folded stacks
 * (flamegraph.pl, speedscope) or OTLP/JSON (what the Collector's file
 * exporter writes).
 */
#include "cli.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "otlp_json.h"
#include "pprof.pb-c.h"
#include "profile_walk.h"
#include "util/idxmap.h"

/* ---- folded: "root;...;leaf count" per sample, process name as root ---- */

struct folded {
	FILE *out;
	char *line;
	size_t cap;
	int err;
};

static int append(struct folded *f, size_t *len, const char *s)
{
	size_t n = strlen(s);

	if (*len + n + 2 > f->cap) {
		size_t ncap = f->cap ? f->cap : 4096;
		char *nl;

		while (*len + n + 2 > ncap)
			ncap *= 2;
		if (ncap > (64u << 20))
			return -E2BIG;
		nl = realloc(f->line, ncap);
		if (!nl)
			return -ENOMEM;
		f->line = nl;
		f->cap = ncap;
	}
	if (*len)
		f->line[(*len)++] = ';';
	/* ';' separates frames and a newline ends the record */
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		f->line[(*len)++] = c == ';' ? ':' : (c == '\n' ? ' ' : c);
	}
	f->line[*len] = '\0';
	return 0;
}

static int folded_sample(const struct walk_sample *s, void *ctx)
{
	struct folded *f = ctx;
	static char buf[FRAME_NAME_MAX];
	size_t len = 0;
	int e = 0;

	if (*s->exe)
		e = append(f, &len, s->exe);
	/* stack is leaf first; each location's lines innermost first */
	for (size_t k = s->stack->n_location_indices; !e && k-- > 0;) {
		int32_t li = s->stack->location_indices[k];
		const Otelprof__Otlp__Location *l;

		if (!walk_location_ok(s->d, li))
			continue;
		l = s->d->location_table[li];
		if (!l->n_lines) {
			e = append(f, &len,
				   frame_name(s->d, li, 0, buf, sizeof(buf)));
			continue;
		}
		for (size_t j = l->n_lines; !e && j-- > 0;)
			e = append(f, &len,
				   frame_name(s->d, li, j, buf, sizeof(buf)));
	}
	if (e)
		return e;
	if (!len)
		return 0;
	if (fprintf(f->out, "%s %llu\n", f->line,
		    (unsigned long long)s->weight) < 0)
		return -EIO;
	return 0;
}

/* ---- pprof ---- */

typedef Otelprof__Pprof__Profile PProfile;

struct pp {
	PProfile p;
	/* strings */
	char **strs;
	size_t nstr, capstr;
	struct idxmap str_index;
	/* per input document: its table index -> pprof id (0 = not yet) */
	uint64_t **map_id, **fn_id, **loc_id;
	size_t ndocs;
	uint64_t period;
	uint64_t tmin, tmax;
	int64_t s_pid, s_tid, s_thread, s_trace, s_span, s_exe;
};

struct str_key {
	const struct pp *pp;
	const char *s;
};

static bool str_eq(const void *ctx, uint32_t i)
{
	const struct str_key *k = ctx;

	return !strcmp(k->pp->strs[i], k->s);
}

static int64_t pstr(struct pp *pp, const char *s)
{
	struct str_key k = {pp, s};
	uint64_t h = hash_bytes(s, strlen(s), 0x70707266);
	uint32_t i;

	if (idxmap_find(&pp->str_index, h, str_eq, &k, &i))
		return i;
	if (pp->nstr == pp->capstr) {
		size_t ncap = pp->capstr ? pp->capstr * 2 : 1024;
		char **nv = realloc(pp->strs, ncap * sizeof(*nv));

		if (!nv || ncap > UINT32_MAX)
			return -ENOMEM;
		pp->strs = nv;
		pp->capstr = ncap;
	}
	pp->strs[pp->nstr] = strdup(s);
	if (!pp->strs[pp->nstr] ||
	    idxmap_insert(&pp->str_index, h, (uint32_t)pp->nstr)) {
		free(pp->strs[pp->nstr]);
		return -ENOMEM;
	}
	return (int64_t)pp->nstr++;
}

/* Grow a pointer array by one element, calloc'ing the element. */
#define PUSH_NEW(arr, n, T, init, out)                                         \
	do {                                                                   \
		T **nv_ = realloc((arr), ((n) + 1) * sizeof(T *));             \
		(out) = NULL;                                                  \
		if (!nv_)                                                      \
			break;                                                 \
		(arr) = nv_;                                                   \
		(out) = calloc(1, sizeof(T));                                  \
		if (!(out))                                                    \
			break;                                                 \
		init(out);                                                     \
		(arr)[(n)++] = (out);                                          \
	} while (0)

static const char *build_id(const Otelprof__Otlp__ProfilesDictionary *d,
			    const Otelprof__Otlp__Mapping *m)
{
	for (size_t i = 0; i < m->n_attribute_indices; i++) {
		int32_t a = m->attribute_indices[i];
		const Otelprof__Otlp__KeyValueAndUnit *kv;

		if (a <= 0 || (size_t)a >= d->n_attribute_table)
			continue;
		kv = d->attribute_table[a];
		if (!strcmp(otlp_str(d, kv->key_strindex),
			    "process.executable.build_id.gnu") &&
		    kv->value &&
		    kv->value->value_case ==
			    OTELPROF__OTLP__ANY_VALUE__VALUE_STRING_VALUE &&
		    kv->value->string_value)
			return kv->value->string_value;
	}
	return "";
}

static int64_t pp_mapping(struct pp *pp, const struct walk_sample *s,
			  int32_t mi)
{
	const Otelprof__Otlp__ProfilesDictionary *d = s->d;
	uint64_t *ids = pp->map_id[s->doc];
	Otelprof__Pprof__Mapping *m;
	const Otelprof__Otlp__Mapping *om;
	int64_t fn, bid;

	if (mi <= 0 || (size_t)mi >= d->n_mapping_table)
		return 0;
	if (ids[mi])
		return (int64_t)ids[mi];
	om = d->mapping_table[mi];
	fn = pstr(pp, otlp_str(d, om->filename_strindex));
	bid = pstr(pp, build_id(d, om));
	if (fn < 0 || bid < 0)
		return -ENOMEM;
	PUSH_NEW(pp->p.mapping, pp->p.n_mapping, Otelprof__Pprof__Mapping,
		 otelprof__pprof__mapping__init, m);
	if (!m)
		return -ENOMEM;
	m->id = pp->p.n_mapping;
	/* pprof wants start < limit or both 0 */
	if (om->memory_start < om->memory_limit) {
		m->memory_start = om->memory_start;
		m->memory_limit = om->memory_limit;
	}
	m->file_offset = om->file_offset;
	m->filename = fn;
	m->build_id = bid;
	m->has_functions = true;
	ids[mi] = m->id;
	return (int64_t)m->id;
}

static int64_t pp_function(struct pp *pp, const struct walk_sample *s,
			   int32_t li, size_t k)
{
	static char buf[FRAME_NAME_MAX];
	const Otelprof__Otlp__ProfilesDictionary *d = s->d;
	const Otelprof__Otlp__Location *l = d->location_table[li];
	int32_t fi = k < l->n_lines ? l->lines[k]->function_index : 0;
	bool real = fi > 0 && (size_t)fi < d->n_function_table;
	uint64_t *ids = pp->fn_id[s->doc];
	Otelprof__Pprof__Function *f;
	int64_t name, sys, file;

	if (real && ids[fi])
		return (int64_t)ids[fi];
	name = pstr(pp, frame_name(d, li, k, buf, sizeof(buf)));
	sys = real ? pstr(pp,
			  otlp_str(d,
				   d->function_table[fi]->system_name_strindex))
		   : name;
	file = real ? pstr(pp,
			   otlp_str(d,
				    d->function_table[fi]->filename_strindex))
		    : 0;
	if (name < 0 || sys < 0 || file < 0)
		return -ENOMEM;
	PUSH_NEW(pp->p.function, pp->p.n_function, Otelprof__Pprof__Function,
		 otelprof__pprof__function__init, f);
	if (!f)
		return -ENOMEM;
	f->id = pp->p.n_function;
	f->name = name;
	f->system_name = sys ? sys : name;
	f->filename = file;
	if (real) {
		f->start_line = d->function_table[fi]->start_line;
		ids[fi] = f->id;
	}
	return (int64_t)f->id;
}

static int64_t pp_location(struct pp *pp, const struct walk_sample *s,
			   int32_t li)
{
	const Otelprof__Otlp__Location *l = s->d->location_table[li];
	uint64_t *ids = pp->loc_id[s->doc];
	Otelprof__Pprof__Location *pl;
	size_t nlines = l->n_lines ? l->n_lines : 1;
	int64_t mid;

	if (ids[li])
		return (int64_t)ids[li];
	mid = pp_mapping(pp, s, l->mapping_index);
	if (mid < 0)
		return mid;
	PUSH_NEW(pp->p.location, pp->p.n_location, Otelprof__Pprof__Location,
		 otelprof__pprof__location__init, pl);
	if (!pl)
		return -ENOMEM;
	pl->id = pp->p.n_location;
	pl->mapping_id = (uint64_t)mid;
	pl->address = l->address;
	pl->line = calloc(nlines, sizeof(*pl->line));
	if (!pl->line)
		return -ENOMEM;
	for (size_t k = 0; k < nlines; k++) {
		Otelprof__Pprof__Line *ln = calloc(1, sizeof(*ln));
		int64_t fid;

		if (!ln)
			return -ENOMEM;
		otelprof__pprof__line__init(ln);
		pl->line[pl->n_line++] = ln;
		fid = pp_function(pp, s, li, k);
		if (fid < 0)
			return fid;
		ln->function_id = (uint64_t)fid;
		ln->line = k < l->n_lines ? l->lines[k]->line : 0;
	}
	ids[li] = pl->id;
	return (int64_t)pl->id;
}

static int add_label(Otelprof__Pprof__Sample *ps, int64_t key, int64_t str,
		     int64_t num)
{
	Otelprof__Pprof__Label *lb;

	PUSH_NEW(ps->label, ps->n_label, Otelprof__Pprof__Label,
		 otelprof__pprof__label__init, lb);
	if (!lb)
		return -ENOMEM;
	lb->key = key;
	lb->str = str;
	lb->num = num;
	return 0;
}

static int64_t hex_label(struct pp *pp, ProtobufCBinaryData b)
{
	char s[65];
	size_t n = b.len > 32 ? 32 : b.len;

	for (size_t i = 0; i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", b.data[i]);
	s[2 * n] = '\0';
	return pstr(pp, s);
}

static int pprof_sample(const struct walk_sample *s, void *ctx)
{
	struct pp *pp = ctx;
	Otelprof__Pprof__Sample *ps;
	size_t n = s->stack->n_location_indices;
	int e = 0;

	if (!pp->period && s->prof->period > 0)
		pp->period = (uint64_t)s->prof->period;
	if (s->prof->time_unix_nano &&
	    (!pp->tmin || s->prof->time_unix_nano < pp->tmin))
		pp->tmin = s->prof->time_unix_nano;
	if (s->prof->time_unix_nano + s->prof->duration_nano > pp->tmax)
		pp->tmax = s->prof->time_unix_nano + s->prof->duration_nano;
	PUSH_NEW(pp->p.sample, pp->p.n_sample, Otelprof__Pprof__Sample,
		 otelprof__pprof__sample__init, ps);
	if (!ps)
		return -ENOMEM;
	ps->location_id = calloc(n ? n : 1, sizeof(uint64_t));
	ps->value = calloc(2, sizeof(int64_t));
	if (!ps->location_id || !ps->value)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		int32_t li = s->stack->location_indices[k];
		int64_t id;

		if (!walk_location_ok(s->d, li))
			continue;
		id = pp_location(pp, s, li);
		if (id < 0)
			return (int)id;
		ps->location_id[ps->n_location_id++] = (uint64_t)id;
	}
	ps->n_value = 2;
	ps->value[0] = (int64_t)s->weight;
	ps->value[1] =
		(int64_t)(s->weight * (s->prof->period > 0
					       ? (uint64_t)s->prof->period
					       : 1));
	if (s->pid >= 0)
		e = add_label(ps, pp->s_pid, 0, s->pid);
	if (!e && s->tid >= 0)
		e = add_label(ps, pp->s_tid, 0, s->tid);
	if (!e && *s->thread_name) {
		int64_t v = pstr(pp, s->thread_name);

		e = v < 0 ? (int)v : add_label(ps, pp->s_thread, v, 0);
	}
	if (!e && *s->exe) {
		int64_t v = pstr(pp, s->exe);

		e = v < 0 ? (int)v : add_label(ps, pp->s_exe, v, 0);
	}
	if (!e && s->link && s->link->trace_id.len) {
		int64_t t = hex_label(pp, s->link->trace_id),
			sp = hex_label(pp, s->link->span_id);

		if (t < 0 || sp < 0)
			return -ENOMEM;
		e = add_label(ps, pp->s_trace, t, 0);
		if (!e)
			e = add_label(ps, pp->s_span, sp, 0);
	}
	return e;
}

static int pprof_write(const struct otlp_docs *docs, int pid, FILE *out)
{
	struct pp pp;
	Otelprof__Pprof__ValueType *vt[2] = {NULL, NULL}, period_type;
	uint8_t *buf = NULL;
	size_t len;
	int e = -ENOMEM;

	memset(&pp, 0, sizeof(pp));
	otelprof__pprof__profile__init(&pp.p);
	otelprof__pprof__value_type__init(&period_type);
	idxmap_init(&pp.str_index);
	pp.ndocs = docs->n;
	pp.map_id = calloc(docs->n + 1, sizeof(*pp.map_id));
	pp.fn_id = calloc(docs->n + 1, sizeof(*pp.fn_id));
	pp.loc_id = calloc(docs->n + 1, sizeof(*pp.loc_id));
	if (!pp.map_id || !pp.fn_id || !pp.loc_id)
		goto out;
	for (size_t i = 0; i < docs->n; i++) {
		const Otelprof__Otlp__ProfilesDictionary *d =
			docs->v[i]->dictionary;

		pp.map_id[i] = calloc(d ? d->n_mapping_table + 1 : 1, 8);
		pp.fn_id[i] = calloc(d ? d->n_function_table + 1 : 1, 8);
		pp.loc_id[i] = calloc(d ? d->n_location_table + 1 : 1, 8);
		if (!pp.map_id[i] || !pp.fn_id[i] || !pp.loc_id[i])
			goto out;
	}
	if (pstr(&pp, "") != 0)
		goto out;
	pp.s_pid = pstr(&pp, "pid");
	pp.s_tid = pstr(&pp, "tid");
	pp.s_thread = pstr(&pp, "thread_name");
	pp.s_exe = pstr(&pp, "process");
	pp.s_trace = pstr(&pp, "trace_id");
	pp.s_span = pstr(&pp, "span_id");
	for (int i = 0; i < 2; i++) {
		vt[i] = calloc(1, sizeof(*vt[i]));
		if (!vt[i])
			goto out;
		otelprof__pprof__value_type__init(vt[i]);
	}
	vt[0]->type = pstr(&pp, "samples");
	vt[0]->unit = pstr(&pp, "count");
	vt[1]->type = pstr(&pp, "cpu");
	vt[1]->unit = pstr(&pp, "nanoseconds");
	period_type = *vt[1];
	if (pp.s_span < 0 || vt[1]->unit < 0)
		goto out;
	e = profile_walk(docs, pid, pprof_sample, &pp);
	if (e)
		goto out;
	pp.p.sample_type = vt;
	pp.p.n_sample_type = 2;
	pp.p.period_type = &period_type;
	pp.p.period = (int64_t)pp.period;
	pp.p.time_nanos = (int64_t)pp.tmin;
	pp.p.duration_nanos =
		(int64_t)(pp.tmax > pp.tmin ? pp.tmax - pp.tmin : 0);
	pp.p.string_table = pp.strs;
	pp.p.n_string_table = pp.nstr;
	len = otelprof__pprof__profile__get_packed_size(&pp.p);
	buf = malloc(len ? len : 1);
	e = -ENOMEM;
	if (!buf)
		goto out;
	otelprof__pprof__profile__pack(&pp.p, buf);
	e = fwrite(buf, 1, len, out) == len ? 0 : -EIO;
out:
	free(buf);
	/* the tree was built with malloc like an unpacked one, except the
	 * fields on the stack: detach those, then free the rest */
	pp.p.sample_type = NULL;
	pp.p.n_sample_type = 0;
	pp.p.period_type = NULL;
	pp.p.string_table = NULL;
	pp.p.n_string_table = 0;
	for (size_t i = 0; i < pp.p.n_sample; i++)
		otelprof__pprof__sample__free_unpacked(pp.p.sample[i], NULL);
	free(pp.p.sample);
	for (size_t i = 0; i < pp.p.n_location; i++)
		otelprof__pprof__location__free_unpacked(pp.p.location[i],
							 NULL);
	free(pp.p.location);
	for (size_t i = 0; i < pp.p.n_function; i++)
		free(pp.p.function[i]);
	free(pp.p.function);
	for (size_t i = 0; i < pp.p.n_mapping; i++)
		free(pp.p.mapping[i]);
	free(pp.p.mapping);
	for (int i = 0; i < 2; i++)
		free(vt[i]);
	for (size_t i = 0; i < pp.nstr; i++)
		free(pp.strs[i]);
	free(pp.strs);
	idxmap_free(&pp.str_index);
	for (size_t i = 0; i < pp.ndocs; i++) {
		if (pp.map_id)
			free(pp.map_id[i]);
		if (pp.fn_id)
			free(pp.fn_id[i]);
		if (pp.loc_id)
			free(pp.loc_id[i]);
	}
	free(pp.map_id);
	free(pp.fn_id);
	free(pp.loc_id);
	return e;
}

int convert_docs(const struct otlp_docs *docs, enum convert_format f, int pid,
		 FILE *out)
{
	switch (f) {
	case CONVERT_PPROF:
		return pprof_write(docs, pid, out);
	case CONVERT_FOLDED: {
		struct folded fo = {out, NULL, 0, 0};
		int e = profile_walk(docs, pid, folded_sample, &fo);

		free(fo.line);
		return e;
	}
	case CONVERT_OTLP_JSON:
		for (size_t i = 0; i < docs->n; i++) {
			int e = otlp_json_write(docs->v[i], out);

			if (e)
				return e;
		}
		return 0;
	}
	return -EINVAL;
}

int cmd_convert(const struct convert_args *a)
{
	struct otlp_docs docs;
	char err[512];
	FILE *out = stdout;
	int e = otlp_docs_read(a->input, &docs, err, sizeof(err));

	if (e) {
		fprintf(stderr, "otelprof: cannot read %s: %s\n", a->input,
			err);
		return 1;
	}
	if (a->output) {
		out = fopen(a->output, "wbx");
		if (!out) {
			fprintf(stderr, "otelprof: cannot create %s: %s\n",
				a->output, strerror(errno));
			otlp_docs_free(&docs);
			return 1;
		}
	}
	e = convert_docs(&docs, a->format, a->pid, out);
	otlp_docs_free(&docs);
	if (out == stdout) {
		if (fflush(out) && !e)
			e = -EIO;
	} else if (fclose(out) && !e) {
		e = -errno;
	}
	if (e) {
		fprintf(stderr, "otelprof: convert: %s\n", strerror(-e));
		return 1;
	}
	return 0;
}
