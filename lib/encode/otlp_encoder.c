// SPDX-License-Identifier: Apache-2.0
/*
 * Builds protobuf-c message structs that point into the builder's tables
 * (no copies of strings or index arrays) and packs them once.
 */
#include "encode/otlp_encoder.h"
#include "util/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "otlp_profiles.pb-c.h"

typedef Otelprof__Otlp__ProfilesData ProfilesData;
typedef Otelprof__Otlp__ProfilesDictionary Dictionary;
typedef Otelprof__Otlp__ResourceProfiles ResourceProfiles;
typedef Otelprof__Otlp__ScopeProfiles ScopeProfiles;
typedef Otelprof__Otlp__Profile Profile;
typedef Otelprof__Otlp__Sample Sample;
typedef Otelprof__Otlp__Mapping Mapping;
typedef Otelprof__Otlp__Location Location;
typedef Otelprof__Otlp__Line Line;
typedef Otelprof__Otlp__Function Function;
typedef Otelprof__Otlp__Link Link;
typedef Otelprof__Otlp__Stack Stack;
typedef Otelprof__Otlp__KeyValueAndUnit KeyValueAndUnit;
typedef Otelprof__Otlp__KeyValue KeyValue;
typedef Otelprof__Otlp__AnyValue AnyValue;
typedef Otelprof__Otlp__Resource Resource;
typedef Otelprof__Otlp__ValueType ValueType;
typedef Otelprof__Otlp__InstrumentationScope Scope;

/* Everything allocated for one encode, freed together. */
struct enc {
	void **allocs;
	size_t n, cap;
	int failed;
};

static void *enc_alloc(struct enc *e, size_t count, size_t size)
{
	void *p;

	if (e->failed)
		return NULL;
	if (!count)
		count = 1;
	p = calloc(count, size);
	if (p && grow_array(&e->allocs, &e->cap, e->n + 1, sizeof(*e->allocs),
			    64, SIZE_MAX / sizeof(*e->allocs), NULL)) {
		free(p);
		p = NULL;
	}
	if (!p) {
		e->failed = 1;
		return NULL;
	}
	e->allocs[e->n++] = p;
	return p;
}

static void enc_free(struct enc *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->allocs[i]);
	free(e->allocs);
}

#define ALLOC(e, T, n) ((T *)enc_alloc((e), (n), sizeof(T)))

/*
 * The builder interns every string and attribute it is handed, but some are
 * written elsewhere: string attribute values go inline in AnyValue, and the
 * well-known keys and frame-type attributes are interned at reset whether a
 * window uses them or not. Only referenced entries are encoded: old index ->
 * new index, -1 for unreferenced (index 0 always stays).
 */
struct remap {
	int32_t *str, *attr;
	uint32_t nstr, nattr; /* entries encoded */
};

static void mark_attr(const struct profile_builder *b, int32_t *attr,
		      int32_t *str, int32_t a)
{
	if (a > 0 && (uint32_t)a < b->attrs.n && attr[a] < 0) {
		attr[a] = 0;
		str[b->attrs.v[a].key] = 0;
	}
}

static void build_remap(struct enc *e, const struct profile_builder *b,
			const int32_t *value_strs, size_t nvalue_strs,
			struct remap *r)
{
	int32_t *str = ALLOC(e, int32_t, b->str_off.n);
	int32_t *attr = ALLOC(e, int32_t, b->attrs.n);

	if (e->failed)
		return;
	for (uint32_t i = 0; i < b->str_off.n; i++)
		str[i] = -1;
	for (uint32_t i = 0; i < b->attrs.n; i++)
		attr[i] = -1;
	str[0] = attr[0] = 0;
	for (size_t i = 0; i < nvalue_strs; i++)
		str[value_strs[i]] = 0;
	for (uint32_t i = 0; i < b->locations.n; i++) {
		mark_attr(b, attr, str, b->locations.v[i].frame_type_attr);
		mark_attr(b, attr, str, b->locations.v[i].unwind_attr);
	}
	for (uint32_t i = 0; i < b->mappings.n; i++) {
		for (int k = 0; k < PB_MAPPING_ATTRS; k++)
			mark_attr(b, attr, str, b->mappings.v[i].attrs[k]);
		str[b->mappings.v[i].filename] = 0;
	}
	for (uint32_t i = 0; i < b->samples.n; i++)
		for (int k = 0; k < PB_SAMPLE_ATTRS; k++)
			mark_attr(b, attr, str, b->samples.v[i].attrs[k]);
	for (uint32_t i = 0; i < b->functions.n; i++) {
		str[b->functions.v[i].name] = 0;
		str[b->functions.v[i].system_name] = 0;
		str[b->functions.v[i].filename] = 0;
	}
	r->nstr = r->nattr = 0;
	for (uint32_t i = 0; i < b->str_off.n; i++)
		if (!str[i])
			str[i] = (int32_t)r->nstr++;
	for (uint32_t i = 0; i < b->attrs.n; i++)
		if (!attr[i])
			attr[i] = (int32_t)r->nattr++;
	r->str = str;
	r->attr = attr;
}

/* An index into the remapped table (0 for 0 or unreferenced). */
static int32_t rs(const struct remap *r, int32_t i)
{
	return i > 0 && r->str[i] > 0 ? r->str[i] : 0;
}

static int32_t ra(const struct remap *r, int32_t i)
{
	return i > 0 && r->attr[i] > 0 ? r->attr[i] : 0;
}

static void build_dictionary(struct enc *e, const struct profile_builder *b,
			     const struct remap *r, Dictionary *d)
{
	const uint32_t nm = b->mappings.n, nl = b->locations.n,
		       nf = b->functions.n, nk = b->links.n, ns = r->nstr,
		       na = r->nattr, nst = b->stack_off.n;
	Mapping *m = ALLOC(e, Mapping, nm);
	int32_t *mattr = ALLOC(e, int32_t, PB_MAPPING_ATTRS * (size_t)nm);
	Mapping **mp = ALLOC(e, Mapping *, nm);
	Location *l = ALLOC(e, Location, nl);
	Location **lp = ALLOC(e, Location *, nl);
	size_t total_lines = 0, nlines = 0;
	Line *ln;
	Line **lnp;
	int32_t *lattr = ALLOC(e, int32_t, 2 * (size_t)nl);
	Function *f = ALLOC(e, Function, nf);
	Function **fp = ALLOC(e, Function *, nf);
	Link *k = ALLOC(e, Link, nk);
	Link **kp = ALLOC(e, Link *, nk);
	char **st = ALLOC(e, char *, ns);
	KeyValueAndUnit *a = ALLOC(e, KeyValueAndUnit, na);
	KeyValueAndUnit **ap = ALLOC(e, KeyValueAndUnit *, na);
	AnyValue *av = ALLOC(e, AnyValue, na);
	Stack *s = ALLOC(e, Stack, nst);
	Stack **sp = ALLOC(e, Stack *, nst);

	/* Counting pass: a location has its first line plus its more_lines
	 * pairs. */
	for (uint32_t i = 0; i < nl; i++) {
		const struct pb_location *x = &b->locations.v[i];

		if (x->function)
			total_lines +=
				1 + (x->more_lines
					     ? b->lines_len.v[x->more_lines] / 2
					     : 0);
	}
	ln = ALLOC(e, Line, total_lines);
	lnp = ALLOC(e, Line *, total_lines);
	if (e->failed)
		return;
	for (uint32_t i = 0; i < nm; i++) {
		const struct pb_mapping *x = &b->mappings.v[i];

		otelprof__otlp__mapping__init(&m[i]);
		m[i].memory_start = x->start;
		m[i].memory_limit = x->limit;
		m[i].file_offset = x->offset;
		m[i].filename_strindex = rs(r, x->filename);
		/* attrs[] may hold 0 (absent) in either slot. */
		m[i].attribute_indices = &mattr[PB_MAPPING_ATTRS * (size_t)i];
		for (int k = 0; k < PB_MAPPING_ATTRS; k++)
			if (ra(r, x->attrs[k]))
				m[i].attribute_indices
					[m[i].n_attribute_indices++] =
					ra(r, x->attrs[k]);
		mp[i] = &m[i];
	}
	for (uint32_t i = 0; i < nl; i++) {
		const struct pb_location *x = &b->locations.v[i];

		otelprof__otlp__location__init(&l[i]);
		l[i].mapping_index = x->mapping;
		l[i].address = x->address;
		if (x->function) {
			uint32_t more =
				x->more_lines
					? b->lines_len.v[x->more_lines] / 2
					: 0;
			const int32_t *mv =
				b->lines_vals.v + b->lines_off.v[x->more_lines];

			/* Line objects and pointers for this location come
			 * from pools sized by the counting pass above. */
			l[i].lines = &lnp[nlines];
			l[i].n_lines = 1 + more;
			for (uint32_t k = 0; k <= more; k++) {
				Line *one = &ln[nlines];

				otelprof__otlp__line__init(one);
				one->function_index =
					k ? mv[2 * (k - 1)] : x->function;
				one->line = k ? mv[2 * (k - 1) + 1] : x->line;
				lnp[nlines++] = one;
			}
		}
		l[i].attribute_indices = &lattr[2 * (size_t)i];
		if (ra(r, x->frame_type_attr))
			lattr[2 * (size_t)i + l[i].n_attribute_indices++] =
				ra(r, x->frame_type_attr);
		if (ra(r, x->unwind_attr))
			lattr[2 * (size_t)i + l[i].n_attribute_indices++] =
				ra(r, x->unwind_attr);
		lp[i] = &l[i];
	}
	for (uint32_t i = 0; i < nf; i++) {
		const struct pb_function *x = &b->functions.v[i];

		otelprof__otlp__function__init(&f[i]);
		f[i].name_strindex = rs(r, x->name);
		f[i].system_name_strindex = rs(r, x->system_name);
		f[i].filename_strindex = rs(r, x->filename);
		f[i].start_line = x->start_line;
		fp[i] = &f[i];
	}
	for (uint32_t i = 0; i < nk; i++) {
		otelprof__otlp__link__init(&k[i]);
		if (i) { /* entry 0 stays the empty (zero) link */
			k[i].trace_id.data = (uint8_t *)b->links.v[i].trace_id;
			k[i].trace_id.len = 16;
			k[i].span_id.data = (uint8_t *)b->links.v[i].span_id;
			k[i].span_id.len = 8;
		}
		kp[i] = &k[i];
	}
	for (uint32_t i = 0; i < b->str_off.n; i++)
		if (i == 0 || r->str[i] > 0)
			st[r->str[i]] = b->arena.buf + b->str_off.v[i];
	for (uint32_t j = 0; j < b->attrs.n; j++) {
		const struct pb_attr *x = &b->attrs.v[j];
		uint32_t i;

		if (j && r->attr[j] <= 0)
			continue;
		i = (uint32_t)r->attr[j];
		otelprof__otlp__key_value_and_unit__init(&a[i]);
		a[i].key_strindex = rs(r, x->key);
		if (i) {
			otelprof__otlp__any_value__init(&av[i]);
			if (x->is_str) {
				av[i].value_case =
					OTELPROF__OTLP__ANY_VALUE__VALUE_STRING_VALUE;
				av[i].string_value =
					b->arena.buf + b->str_off.v[x->ival];
			} else {
				av[i].value_case =
					OTELPROF__OTLP__ANY_VALUE__VALUE_INT_VALUE;
				av[i].int_value = x->ival;
			}
			a[i].value = &av[i];
		}
		ap[i] = &a[i];
	}
	for (uint32_t i = 0; i < nst; i++) {
		otelprof__otlp__stack__init(&s[i]);
		s[i].n_location_indices = b->stack_len.v[i];
		s[i].location_indices =
			(int32_t *)b->stack_locs.v + b->stack_off.v[i];
		sp[i] = &s[i];
	}
	d->mapping_table = mp;
	d->n_mapping_table = nm;
	d->location_table = lp;
	d->n_location_table = nl;
	d->function_table = fp;
	d->n_function_table = nf;
	d->link_table = kp;
	d->n_link_table = nk;
	d->string_table = st;
	d->n_string_table = ns;
	d->attribute_table = ap;
	d->n_attribute_table = na;
	d->stack_table = sp;
	d->n_stack_table = nst;
}

/* The period of the resource's i-th sample. */
static uint64_t sample_period(const struct profile_builder *b,
			      const struct pb_resource *r, size_t i,
			      const struct otlp_window *w)
{
	uint64_t per = b->samples.v[r->samples[i]].period_ns;

	return per ? per : w->period_ns;
}

/*
 * A process's ResourceProfiles. A Profile has one period: CPU samples
 * taken at another rate (the rate changed inside the window) get a
 * Profile of their own. Off-CPU events, when off-CPU recording gave the
 * process any, go in one more (sample type events/nanoseconds, one value
 * per timestamp: the nanoseconds off CPU, as the reference profiler
 * emits them; no period). A process with off-CPU events only has no CPU
 * Profile.
 */
static ResourceProfiles *
build_resource(struct enc *e, const struct profile_builder *b,
	       const struct remap *rm, const struct pb_resource *r,
	       const struct otlp_window *w, ValueType *sample_type,
	       ValueType *period_type, ValueType *off_type, Scope *scope)
{
	ResourceProfiles *rp = ALLOC(e, ResourceProfiles, 1);
	Resource *res = ALLOC(e, Resource, 1);
	KeyValue *kv = ALLOC(e, KeyValue, r->nattrs);
	KeyValue **kvp = ALLOC(e, KeyValue *, r->nattrs);
	AnyValue *av = ALLOC(e, AnyValue, r->nattrs);
	ScopeProfiles *sc = ALLOC(e, ScopeProfiles, 1);
	ScopeProfiles **scp = ALLOC(e, ScopeProfiles *, 1);
	uint64_t *periods = ALLOC(e, uint64_t, r->nsamples + 1);
	size_t nper = 0, ns = 0, noff = 0, np;
	Profile *p;
	Profile **pp;
	Sample *s = ALLOC(e, Sample, r->nsamples);
	Sample **sp = ALLOC(e, Sample *, r->nsamples);
	int32_t *ai = ALLOC(e, int32_t, PB_SAMPLE_ATTRS * r->nsamples);
	uint8_t *pid;
	/* The builder tracks the window's first and last timestamp. */
	uint64_t tmin = w->start_unix_ns < b->min_ts ? w->start_unix_ns
						     : b->min_ts,
		 tmax = w->end_unix_ns > b->max_ts ? w->end_unix_ns
						   : b->max_ts + 1;

	if (e->failed)
		return NULL;
	otelprof__otlp__resource_profiles__init(rp);
	otelprof__otlp__resource__init(res);
	for (size_t i = 0; i < r->nattrs; i++) {
		otelprof__otlp__key_value__init(&kv[i]);
		otelprof__otlp__any_value__init(&av[i]);
		kv[i].key = r->attrs[i].key;
		if (r->attrs[i].str) {
			av[i].value_case =
				OTELPROF__OTLP__ANY_VALUE__VALUE_STRING_VALUE;
			av[i].string_value = r->attrs[i].str;
		} else {
			av[i].value_case =
				OTELPROF__OTLP__ANY_VALUE__VALUE_INT_VALUE;
			av[i].int_value = r->attrs[i].i;
		}
		kv[i].value = &av[i];
		kvp[i] = &kv[i];
	}
	res->attributes = kvp;
	res->n_attributes = r->nattrs;
	rp->resource = res;

	for (size_t i = 0; periods && i < r->nsamples; i++) {
		uint64_t per = sample_period(b, r, i, w);
		size_t k = 0;

		if (b->samples.v[r->samples[i]].offcpu) {
			noff++;
			continue;
		}
		while (k < nper && periods[k] != per)
			k++;
		if (k == nper)
			periods[nper++] = per;
	}
	if (!nper && !noff && periods)
		periods[nper++] = w->period_ns;
	np = nper + (noff ? 1 : 0);
	p = ALLOC(e, Profile, np);
	pp = ALLOC(e, Profile *, np);
	pid = ALLOC(e, uint8_t, 16 * np);
	if (e->failed)
		return NULL;
	/* Profiles 0 .. nper-1: CPU samples by period; nper: off-CPU. */
	for (size_t k = 0; k < np; k++) {
		bool off = k == nper;
		size_t first = ns;

		otelprof__otlp__profile__init(&p[k]);
		for (size_t i = 0; i < r->nsamples; i++) {
			const struct pb_sample *x =
				&b->samples.v[r->samples[i]];
			size_t na = 0;

			if (x->offcpu != off ||
			    (!off && sample_period(b, r, i, w) != periods[k]))
				continue;
			otelprof__otlp__sample__init(&s[ns]);
			s[ns].stack_index = x->stack;
			s[ns].link_index = x->link;
			/* attrs[] may have 0s (absent thread.name, fewer
			 * context attributes) in the middle: copy the
			 * present ones. */
			for (int a = 0; a < PB_SAMPLE_ATTRS; a++)
				if (ra(rm, x->attrs[a]))
					ai[PB_SAMPLE_ATTRS * ns + na++] =
						ra(rm, x->attrs[a]);
			s[ns].attribute_indices = &ai[PB_SAMPLE_ATTRS * ns];
			s[ns].n_attribute_indices = na;
			s[ns].timestamps_unix_nano = x->ts;
			s[ns].n_timestamps_unix_nano = x->nts;
			if (off) {
				s[ns].values = x->vals;
				s[ns].n_values = x->nts;
			}
			sp[ns] = &s[ns];
			ns++;
		}
		p[k].samples = sp + first;
		p[k].n_samples = ns - first;
		p[k].sample_type = off ? off_type : sample_type;
		p[k].period_type = off ? NULL : period_type;
		p[k].period = off ? 0 : (int64_t)periods[k];
		/* Timestamps must lie in [time, time + duration). */
		p[k].time_unix_nano = tmin;
		p[k].duration_nano = tmax > tmin ? tmax - tmin : 1;
		if (getrandom(pid + 16 * k, 16, GRND_NONBLOCK) != 16)
			memset(pid + 16 * k, 0, 16);
		p[k].profile_id.data = pid + 16 * k;
		p[k].profile_id.len = 16;
		pp[k] = &p[k];
	}

	otelprof__otlp__scope_profiles__init(sc);
	sc->scope = scope;
	sc->profiles = pp;
	sc->n_profiles = np;
	scp[0] = sc;
	rp->scope_profiles = scp;
	rp->n_scope_profiles = 1;
	return rp;
}

int otlp_encode(struct profile_builder *b, const struct otlp_window *w,
		uint8_t **out, size_t *out_len)
{
	struct enc e = {0};
	ProfilesData pd = OTELPROF__OTLP__PROFILES_DATA__INIT;
	Dictionary dict = OTELPROF__OTLP__PROFILES_DICTIONARY__INIT;
	ValueType sample_type = OTELPROF__OTLP__VALUE_TYPE__INIT;
	ValueType period_type = OTELPROF__OTLP__VALUE_TYPE__INIT;
	ValueType off_type = OTELPROF__OTLP__VALUE_TYPE__INIT;
	Scope scope = OTELPROF__OTLP__INSTRUMENTATION_SCOPE__INIT;
	ResourceProfiles **rps;
	size_t nrp = 0, len;
	uint8_t *buf;
	int32_t s_samples, s_count, s_cpu, s_ns, s_events = 0;
	struct remap rm = {0};

	*out = NULL;
	*out_len = 0;
	/* The four value-type strings are interned on demand; doing it
	 * here keeps them out of windows without samples. */
	s_samples = pb_string(b, "samples");
	s_count = pb_string(b, "count");
	s_cpu = pb_string(b, "cpu");
	s_ns = pb_string(b, "nanoseconds");
	/* Only a window with off-CPU events names their type. */
	if (b->offcpu_samples)
		s_events = pb_string(b, "events");
	if (s_samples < 0 || s_count < 0 || s_cpu < 0 || s_ns < 0 ||
	    s_events < 0)
		return -ENOMEM;
	{
		const int32_t vs[] = {s_samples, s_count, s_cpu, s_ns,
				      s_events};

		build_remap(&e, b, vs, s_events ? 5 : 4, &rm);
	}
	if (e.failed) {
		enc_free(&e);
		return -ENOMEM;
	}
	sample_type.type_strindex = rs(&rm, s_samples);
	sample_type.unit_strindex = rs(&rm, s_count);
	period_type.type_strindex = rs(&rm, s_cpu);
	period_type.unit_strindex = rs(&rm, s_ns);
	off_type.type_strindex = rs(&rm, s_events);
	off_type.unit_strindex = rs(&rm, s_ns);
	scope.name = (char *)(w->scope_name ? w->scope_name : "");
	scope.version = (char *)(w->scope_version ? w->scope_version : "");

	build_dictionary(&e, b, &rm, &dict);
	rps = ALLOC(&e, ResourceProfiles *, b->resources.n + 1);
	for (uint32_t i = 0; !e.failed && i < b->resources.n; i++) {
		if (!b->resources.v[i].nsamples)
			continue;
		rps[nrp] = build_resource(&e, b, &rm, &b->resources.v[i], w,
					  &sample_type, &period_type, &off_type,
					  &scope);
		if (rps[nrp])
			nrp++;
	}
	if (!nrp && !e.failed) {
		/* A window without samples is still a profile of the host
		 * over that time, not a message without resources (which
		 * conformance checkers reject). */
		struct pb_kv host = {(char *)"host.name",
				     (char *)(w->host_name ? w->host_name : ""),
				     0};
		struct pb_resource r = {.attrs = &host,
					.nattrs = w->host_name ? 1 : 0};

		rps[nrp] = build_resource(&e, b, &rm, &r, w, &sample_type,
					  &period_type, &off_type, &scope);
		if (rps[nrp])
			nrp++;
	}
	if (e.failed) {
		enc_free(&e);
		return -ENOMEM;
	}
	pd.resource_profiles = rps;
	pd.n_resource_profiles = nrp;
	pd.dictionary = &dict;
	len = otelprof__otlp__profiles_data__get_packed_size(&pd);
	buf = malloc(len ? len : 1);
	if (!buf) {
		enc_free(&e);
		return -ENOMEM;
	}
	otelprof__otlp__profiles_data__pack(&pd, buf);
	enc_free(&e);
	*out = buf;
	*out_len = len;
	return 0;
}
