// SPDX-License-Identifier: Apache-2.0
/* otelprof top on N unnamed locations (one mapping, N addresses, one sample
 * each): parse + rank time, to show it grows linearly (N and 4N). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "otlp_input.h"
#include "otlp_profiles.pb-c.h"
#include "top.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint8_t *make(size_t n, size_t *len)
{
	Otelprof__Otlp__ProfilesData pd = OTELPROF__OTLP__PROFILES_DATA__INIT;
	Otelprof__Otlp__ProfilesDictionary d =
		OTELPROF__OTLP__PROFILES_DICTIONARY__INIT;
	Otelprof__Otlp__ResourceProfiles
		rp = OTELPROF__OTLP__RESOURCE_PROFILES__INIT,
		*rpp = &rp;
	Otelprof__Otlp__ScopeProfiles sp = OTELPROF__OTLP__SCOPE_PROFILES__INIT,
				      *spp = &sp;
	Otelprof__Otlp__Profile p = OTELPROF__OTLP__PROFILE__INIT, *pp = &p;
	Otelprof__Otlp__Mapping m0 = OTELPROF__OTLP__MAPPING__INIT,
				m1 = OTELPROF__OTLP__MAPPING__INIT,
				*mp[2] = {&m0, &m1};
	char *strs[2] = {"", "/usr/lib/libhuge.so"};
	Otelprof__Otlp__Location *l = calloc(n + 1, sizeof(*l));
	Otelprof__Otlp__Location **lp = calloc(n + 1, sizeof(*lp));
	Otelprof__Otlp__Stack *s = calloc(n + 1, sizeof(*s));
	Otelprof__Otlp__Stack **stp = calloc(n + 1, sizeof(*stp));
	Otelprof__Otlp__Sample *sm = calloc(n, sizeof(*sm));
	Otelprof__Otlp__Sample **smp = calloc(n, sizeof(*smp));
	int32_t *idx = calloc(n + 1, sizeof(*idx));
	uint8_t *buf;

	if (!l || !lp || !s || !stp || !sm || !smp || !idx)
		exit(1);
	m1.memory_start = 0x1000;
	m1.memory_limit = 0x100000000ull;
	m1.filename_strindex = 1;
	for (size_t i = 0; i <= n; i++) {
		otelprof__otlp__location__init(&l[i]);
		otelprof__otlp__stack__init(&s[i]);
		lp[i] = &l[i];
		stp[i] = &s[i];
		if (!i)
			continue;
		l[i].mapping_index = 1;
		l[i].address = 0x1000 + 16 * i;
		idx[i] = (int32_t)i;
		s[i].location_indices = &idx[i];
		s[i].n_location_indices = 1;
		otelprof__otlp__sample__init(&sm[i - 1]);
		sm[i - 1].stack_index = (int32_t)i;
		smp[i - 1] = &sm[i - 1];
	}
	d.mapping_table = mp;
	d.n_mapping_table = 2;
	d.location_table = lp;
	d.n_location_table = n + 1;
	d.stack_table = stp;
	d.n_stack_table = n + 1;
	d.string_table = strs;
	d.n_string_table = 2;
	p.samples = smp;
	p.n_samples = n;
	sp.profiles = &pp;
	sp.n_profiles = 1;
	rp.scope_profiles = &spp;
	rp.n_scope_profiles = 1;
	pd.resource_profiles = &rpp;
	pd.n_resource_profiles = 1;
	pd.dictionary = &d;
	*len = otelprof__otlp__profiles_data__get_packed_size(&pd);
	buf = malloc(*len);
	if (!buf)
		exit(1);
	otelprof__otlp__profiles_data__pack(&pd, buf);
	free(l);
	free(lp);
	free(s);
	free(stp);
	free(sm);
	free(smp);
	free(idx);
	return buf;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 200000;
	FILE *null = fopen("/dev/null", "w");

	for (size_t k = n; k <= 4 * n; k *= 4) {
		size_t len;
		uint8_t *buf = make(k, &len);
		struct otlp_docs docs;
		char err[256];
		double t0 = now();

		if (otlp_docs_parse(buf, len, &docs, err, sizeof(err)) ||
		    top_report(&docs, 20, 0, null))
			return 1;
		printf("%s%zu unnamed locations: %.2f s", k == n ? "" : "; ", k,
		       now() - t0);
		otlp_docs_free(&docs);
		free(buf);
	}
	printf("\n");
	return 0;
}
