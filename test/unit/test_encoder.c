// SPDX-License-Identifier: Apache-2.0
/*
 * Profile builder + OTLP encoder: deduplication, zero entries, sample
 * merging, time bounds, byte layout. The Go integration tests decode the
 * same bytes with the collector's pdata as the independent check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "encode/otlp_encoder.h"
#include "encode/profile_builder.h"
#include "otlp_profiles.pb-c.h"

static int32_t frame(struct profile_builder *b, uint8_t kind, uint64_t addr,
		     const char *fn, const char *file)
{
	struct frame f;

	memset(&f, 0, sizeof(f));
	f.kind = kind;
	f.address = addr;
	f.function = fn;
	f.mapping_file = file;
	f.map_start = 0x1000;
	f.map_limit = 0x9000;
	f.build_id = file ? "abcd" : NULL;
	return pb_location(b, &f);
}

static void dedup_and_zero_entries(void **state)
{
	struct profile_builder b;
	int32_t a, a2, k, s1, s2, s3;
	int32_t locs1[2], locs2[2];

	(void)state;
	assert_int_equal(pb_init(&b), 0);
	assert_int_equal(pb_string(&b, ""), 0);
	a = frame(&b, FRAME_NATIVE, 0x1234, "main", "/bin/app");
	a2 = frame(&b, FRAME_NATIVE, 0x1234, "main", "/bin/app");
	k = frame(&b, FRAME_KERNEL, 0xffffffff81000000, "schedule",
		  "[kernel.kallsyms]");
	assert_true(a > 0);
	assert_int_equal(a, a2);
	assert_true(k > 0 && k != a);
	assert_int_equal(b.functions.n, 3); /* zero + main + schedule */
	assert_int_equal(b.mappings.n, 3);
	locs1[0] = k;
	locs1[1] = a;
	locs2[0] = k;
	locs2[1] = a;
	s1 = pb_stack(&b, locs1, 2);
	s2 = pb_stack(&b, locs2, 2);
	s3 = pb_stack(&b, locs1, 1);
	assert_true(s1 > 0);
	assert_int_equal(s1, s2);
	assert_true(s3 > 0 && s3 != s1);
	assert_int_equal(pb_stack(&b, NULL, 0), 0);
	pb_free(&b);
}

static Otelprof__Otlp__ProfilesData *encode(struct profile_builder *b,
					    uint64_t start, uint64_t end)
{
	struct otlp_window w = {start, end, 10101010, "scope", "1.0", "h"};
	Otelprof__Otlp__ProfilesData *pd;
	uint8_t *buf;
	size_t len;

	assert_int_equal(otlp_encode(b, &w, &buf, &len), 0);
	pd = otelprof__otlp__profiles_data__unpack(NULL, len, buf);
	free(buf);
	assert_non_null(pd);
	return pd;
}

static bool in_string_table(const Otelprof__Otlp__ProfilesData *pd,
			    const char *s);

static const char *str(const Otelprof__Otlp__ProfilesData *pd, int32_t i)
{
	assert_true(i >= 0 && (size_t)i < pd->dictionary->n_string_table);
	return pd->dictionary->string_table[i];
}

/* Off-CPU events: a Profile of its own per resource (events/nanoseconds, a
 * value per timestamp, no period), never merged with CPU samples of the
 * same stack; a resource with off-CPU events only has that Profile. */
static void offcpu_profile(void **state)
{
	struct profile_builder b;
	struct pb_resource_info r1 = {
		.key = 1, .pid = 100, .exe_name = "app", .host_name = "h"};
	struct pb_resource_info r2 = {
		.key = 2, .pid = 200, .exe_name = "db", .host_name = "h"};
	Otelprof__Otlp__ProfilesData *pd;
	const Otelprof__Otlp__ScopeProfiles *sp;
	const Otelprof__Otlp__Profile *cpu, *off;
	uint32_t res1, res2;
	int32_t loc, st;

	(void)state;
	assert_int_equal(pb_init(&b), 0);
	assert_int_equal(pb_resource(&b, &r1, &res1), 0);
	assert_int_equal(pb_resource(&b, &r2, &res2), 0);
	loc = frame(&b, FRAME_NATIVE, 0x10, "f", "/bin/app");
	st = pb_stack(&b, &loc, 1);
	assert_int_equal(
		pb_add_sample(&b, res1, st, 100, "app", 0, 0, NULL, 0, 5000),
		0);
	assert_int_equal(pb_add_offcpu_sample(&b, res1, st, 100, "app", 0, 0,
					      NULL, 0, 5001, 1000000),
			 0);
	assert_int_equal(pb_add_offcpu_sample(&b, res1, st, 100, "app", 0, 0,
					      NULL, 0, 5002, 2500000),
			 0);
	assert_int_equal(pb_add_offcpu_sample(&b, res2, st, 200, "db", 1, 0,
					      NULL, 0, 6000, 7),
			 0);
	assert_int_equal(b.offcpu_samples, 3);
	pd = encode(&b, 4000, 7000);
	assert_int_equal(pd->n_resource_profiles, 2);
	sp = pd->resource_profiles[0]->scope_profiles[0];
	assert_int_equal(sp->n_profiles, 2);
	cpu = sp->profiles[0];
	off = sp->profiles[1];
	assert_string_equal(str(pd, cpu->sample_type->type_strindex),
			    "samples");
	assert_int_equal(cpu->n_samples, 1);
	assert_int_equal(cpu->samples[0]->n_values, 0);
	assert_string_equal(str(pd, off->sample_type->type_strindex), "events");
	assert_string_equal(str(pd, off->sample_type->unit_strindex),
			    "nanoseconds");
	assert_null(off->period_type);
	assert_int_equal(off->period, 0);
	assert_int_equal(off->n_samples, 1);
	assert_int_equal(off->samples[0]->n_timestamps_unix_nano, 2);
	assert_int_equal(off->samples[0]->n_values, 2);
	assert_int_equal(off->samples[0]->timestamps_unix_nano[1], 5002);
	assert_int_equal(off->samples[0]->values[0], 1000000);
	assert_int_equal(off->samples[0]->values[1], 2500000);
	assert_int_equal(off->samples[0]->stack_index,
			 cpu->samples[0]->stack_index);
	sp = pd->resource_profiles[1]->scope_profiles[0];
	assert_int_equal(sp->n_profiles, 1);
	assert_string_equal(
		str(pd, sp->profiles[0]->sample_type->type_strindex), "events");
	assert_int_equal(sp->profiles[0]->samples[0]->values[0], 7);
	otelprof__otlp__profiles_data__free_unpacked(pd, NULL);
	pb_free(&b);
}

static void samples_merge_and_encode(void **state)
{
	struct profile_builder b;
	struct pb_resource_info r1 = {.key = 1,
				      .pid = 100,
				      .exe_name = "app",
				      .exe_path = "/bin/app",
				      .host_name = "h"};
	struct pb_resource_info r2 = {.key = 2,
				      .pid = 200,
				      .exe_name = "db",
				      .exe_path = "/bin/db",
				      .container_id = "cid",
				      .host_name = "h"};
	Otelprof__Otlp__ProfilesData *pd;
	const Otelprof__Otlp__Profile *p;
	uint32_t res1, res2, again;
	int32_t loc, st;

	(void)state;
	assert_int_equal(pb_init(&b), 0);
	assert_int_equal(pb_resource(&b, &r1, &res1), 0);
	assert_int_equal(pb_resource(&b, &r2, &res2), 0);
	assert_int_equal(pb_resource(&b, &r1, &again), 0);
	assert_int_equal(res1, again);
	loc = frame(&b, FRAME_NATIVE, 0x10, "f", "/bin/app");
	st = pb_stack(&b, &loc, 1);
	/* Same stack, thread and cpu: one sample, three timestamps. */
	assert_int_equal(
		pb_add_sample(&b, res1, st, 100, "app", 0, 0, NULL, 0, 5000),
		0);
	assert_int_equal(
		pb_add_sample(&b, res1, st, 100, "app", 0, 0, NULL, 0, 5001),
		0);
	assert_int_equal(
		pb_add_sample(&b, res1, st, 100, "app", 0, 0, NULL, 0, 5002),
		0);
	/* Another thread: another sample. */
	assert_int_equal(
		pb_add_sample(&b, res1, st, 101, "w", 1, 0, NULL, 0, 5003), 0);
	assert_int_equal(
		pb_add_sample(&b, res2, st, 200, NULL, 1, 0, NULL, 0, 6000), 0);
	assert_int_equal(b.total_samples, 5);

	pd = encode(&b, 4000, 7000);
	assert_int_equal(pd->n_resource_profiles, 2);
	assert_string_equal(pd->dictionary->string_table[0], "");
	/* Every string once. */
	for (size_t i = 0; i < pd->dictionary->n_string_table; i++)
		for (size_t j = i + 1; j < pd->dictionary->n_string_table; j++)
			assert_string_not_equal(
				pd->dictionary->string_table[i],
				pd->dictionary->string_table[j]);
	p = pd->resource_profiles[0]->scope_profiles[0]->profiles[0];
	assert_int_equal(p->n_samples, 2);
	assert_int_equal(p->samples[0]->n_timestamps_unix_nano, 3);
	assert_int_equal(p->samples[0]->n_values, 0);
	assert_int_equal(p->samples[0]->n_attribute_indices, 3);
	assert_int_equal(p->period, 10101010);
	assert_string_equal(str(pd, p->sample_type->type_strindex), "samples");
	assert_string_equal(str(pd, p->sample_type->unit_strindex), "count");
	assert_string_equal(str(pd, p->period_type->type_strindex), "cpu");
	assert_string_equal(str(pd, p->period_type->unit_strindex),
			    "nanoseconds");
	assert_true(p->time_unix_nano <= 5000);
	assert_true(p->time_unix_nano + p->duration_nano > 5003);
	assert_int_equal(p->profile_id.len, 16);
	/* Thread without a name: only thread.id and cpu. */
	p = pd->resource_profiles[1]->scope_profiles[0]->profiles[0];
	assert_int_equal(p->samples[0]->n_attribute_indices, 2);
	{
		const Otelprof__Otlp__Resource *r =
			pd->resource_profiles[1]->resource;
		int found = 0;

		for (size_t i = 0; i < r->n_attributes; i++)
			if (!strcmp(r->attributes[i]->key, "container.id")) {
				assert_string_equal(
					r->attributes[i]->value->string_value,
					"cid");
				found = 1;
			}
		assert_true(found);
	}
	/* Location carries profile.frame.type and a mapping with a build id. */
	{
		const Otelprof__Otlp__ProfilesDictionary *d = pd->dictionary;
		const Otelprof__Otlp__Location *l = d->location_table[loc];
		const Otelprof__Otlp__KeyValueAndUnit *a =
			d->attribute_table[l->attribute_indices[0]];
		const Otelprof__Otlp__Mapping *m =
			d->mapping_table[l->mapping_index];

		assert_string_equal(str(pd, a->key_strindex),
				    "profile.frame.type");
		assert_string_equal(a->value->string_value, "native");
		assert_string_equal(str(pd, m->filename_strindex), "/bin/app");
		assert_int_equal(m->n_attribute_indices, 1);
		assert_int_equal(l->n_lines, 1);
		assert_int_equal(d->n_location_table, 2);
		assert_int_equal(d->location_table[0]->address, 0);
	}
	otelprof__otlp__profiles_data__free_unpacked(pd, NULL);

	/* Reset forgets everything: a fresh window encodes as the host
	 * alone, with no samples and none of the old window's processes. */
	assert_int_equal(pb_reset(&b), 0);
	assert_int_equal(b.total_samples, 0);
	pd = encode(&b, 1, 2);
	assert_int_equal(pd->n_resource_profiles, 1);
	assert_int_equal(pd->resource_profiles[0]
				 ->scope_profiles[0]
				 ->profiles[0]
				 ->n_samples,
			 0);
	assert_false(in_string_table(pd, "/bin/app"));
	otelprof__otlp__profiles_data__free_unpacked(pd, NULL);
	pb_free(&b);
}

/* Field numbers on the wire are the v1.10 ones: Sample.timestamps = 5. */
static void wire_field_numbers(void **state)
{
	Otelprof__Otlp__Sample s = OTELPROF__OTLP__SAMPLE__INIT;
	uint64_t ts = 0x0102030405060708ULL;
	uint8_t buf[64];
	size_t n;

	(void)state;
	s.stack_index = 1;
	s.timestamps_unix_nano = &ts;
	s.n_timestamps_unix_nano = 1;
	n = otelprof__otlp__sample__pack(&s, buf);
	/* stack_index: field 1 varint; timestamps: field 5 packed fixed64. */
	assert_int_equal(n, 2 + 2 + 8);
	assert_int_equal(buf[0], (1 << 3) | 0);
	assert_int_equal(buf[1], 1);
	assert_int_equal(buf[2], (5 << 3) | 2);
	assert_int_equal(buf[3], 8);
	assert_int_equal(buf[4], 0x08);
}

static const char *res_attr(const Otelprof__Otlp__Resource *r, const char *k)
{
	for (size_t i = 0; i < r->n_attributes; i++)
		if (!strcmp(r->attributes[i]->key, k))
			return r->attributes[i]->value->string_value
				       ? r->attributes[i]->value->string_value
				       : "(int)";
	return NULL;
}

/* Thread context: a Link per trace/span, context attributes on samples
 * (merged only with equal sets), published resource attributes that a
 * later publication replaces and that never override observed ones. */
static void context_links_and_attributes(void **state)
{
	static const uint8_t t1[16] = {1}, s1[8] = {2}, t2[16] = {3},
			     s2[8] = {4};
	struct pb_attr_in pub[] = {{"service.name", "checkout", 0},
				   {"process.pid", NULL, 666}};
	struct pb_attr_in pub2[] = {{"service.name", "checkout-v2", 0}};
	struct pb_resource_info ri = {.key = 1,
				      .pid = 100,
				      .exe_name = "app",
				      .extra = pub,
				      .nextra = 2,
				      .extra_gen = 1};
	struct profile_builder b;
	Otelprof__Otlp__ProfilesData *pd;
	const Otelprof__Otlp__Profile *p;
	int32_t loc, st, l1, l2, a1, a2, attrs[2];
	uint32_t res;

	(void)state;
	assert_int_equal(pb_init(&b), 0);
	assert_int_equal(pb_resource(&b, &ri, &res), 0);
	loc = frame(&b, FRAME_NATIVE, 0x10, "f", "/bin/app");
	st = pb_stack(&b, &loc, 1);
	l1 = pb_link(&b, t1, s1);
	l2 = pb_link(&b, t2, s2);
	assert_true(l1 > 0 && l2 > 0 && l1 != l2);
	assert_int_equal(pb_link(&b, t1, s1), l1);
	a1 = pb_attr_string(&b, "http.route", "/pay");
	a2 = pb_attr_string(&b, "user.id", "42");
	assert_true(a1 > 0 && a2 > 0);
	attrs[0] = a1;
	attrs[1] = a2;
	assert_int_equal(
		pb_add_sample(&b, res, st, 7, "t", 0, l1, attrs, 2, 5000), 0);
	assert_int_equal(
		pb_add_sample(&b, res, st, 7, "t", 0, l1, attrs, 2, 5001), 0);
	assert_int_equal(
		pb_add_sample(&b, res, st, 7, "t", 0, l1, attrs, 1, 5002), 0);
	assert_int_equal(
		pb_add_sample(&b, res, st, 7, "t", 0, l2, attrs, 2, 5003), 0);
	assert_int_equal(
		pb_add_sample(&b, res, st, 7, "t", 0, 0, NULL, 0, 5004), 0);
	/* A later publication replaces the published attributes. */
	ri.extra = pub2;
	ri.nextra = 1;
	ri.extra_gen = 2;
	assert_int_equal(pb_resource(&b, &ri, &res), 0);

	pd = encode(&b, 4000, 7000);
	p = pd->resource_profiles[0]->scope_profiles[0]->profiles[0];
	assert_int_equal(p->n_samples, 4);
	assert_int_equal(p->samples[0]->n_timestamps_unix_nano, 2);
	assert_int_equal(p->samples[0]->link_index, l1);
	assert_int_equal(p->samples[0]->n_attribute_indices, 5);
	assert_int_equal(p->samples[1]->n_attribute_indices, 4);
	assert_int_equal(p->samples[2]->link_index, l2);
	assert_int_equal(p->samples[3]->link_index, 0);
	assert_int_equal(p->samples[3]->n_attribute_indices, 3);
	assert_int_equal(pd->dictionary->n_link_table, 3);
	assert_memory_equal(pd->dictionary->link_table[l1]->trace_id.data, t1,
			    16);
	assert_memory_equal(pd->dictionary->link_table[l2]->span_id.data, s2,
			    8);
	assert_string_equal(
		res_attr(pd->resource_profiles[0]->resource, "service.name"),
		"checkout-v2");
	/* The observed pid stays; the claimed one is not added. */
	{
		const Otelprof__Otlp__Resource *r =
			pd->resource_profiles[0]->resource;
		int pids = 0;

		for (size_t i = 0; i < r->n_attributes; i++)
			if (!strcmp(r->attributes[i]->key, "process.pid")) {
				pids++;
				assert_int_equal(
					r->attributes[i]->value->int_value,
					100);
			}
		assert_int_equal(pids, 1);
	}
	otelprof__otlp__profiles_data__free_unpacked(pd, NULL);
	pb_free(&b);
}

/* What the dictionary's entries are referenced from (profcheck's rules
 * plus: no string or attribute that nothing refers to). */
static void mark_attrs(const Otelprof__Otlp__ProfilesDictionary *d,
		       const int32_t *ai, size_t n, int *sref, int *aref)
{
	for (size_t i = 0; i < n; i++) {
		assert_true(ai[i] > 0 && (size_t)ai[i] < d->n_attribute_table);
		aref[ai[i]] = 1;
		sref[d->attribute_table[ai[i]]->key_strindex] = 1;
	}
}

static void
assert_dictionary_all_referenced(const Otelprof__Otlp__ProfilesData *pd)
{
	const Otelprof__Otlp__ProfilesDictionary *d = pd->dictionary;
	int *sref = calloc(d->n_string_table, sizeof(int));
	int *aref = calloc(d->n_attribute_table + 1, sizeof(int));

	assert_non_null(sref);
	assert_non_null(aref);
	assert_true(pd->n_resource_profiles >= 1);
	for (size_t i = 0; i < d->n_mapping_table; i++) {
		sref[d->mapping_table[i]->filename_strindex] = 1;
		mark_attrs(d, d->mapping_table[i]->attribute_indices,
			   d->mapping_table[i]->n_attribute_indices, sref,
			   aref);
	}
	for (size_t i = 0; i < d->n_location_table; i++)
		mark_attrs(d, d->location_table[i]->attribute_indices,
			   d->location_table[i]->n_attribute_indices, sref,
			   aref);
	for (size_t i = 0; i < d->n_function_table; i++) {
		sref[d->function_table[i]->name_strindex] = 1;
		sref[d->function_table[i]->system_name_strindex] = 1;
		sref[d->function_table[i]->filename_strindex] = 1;
	}
	for (size_t r = 0; r < pd->n_resource_profiles; r++) {
		const Otelprof__Otlp__ResourceProfiles *rp =
			pd->resource_profiles[r];

		assert_true(rp->n_scope_profiles >= 1);
		for (size_t sc = 0; sc < rp->n_scope_profiles; sc++) {
			assert_true(rp->scope_profiles[sc]->n_profiles >= 1);
			for (size_t k = 0;
			     k < rp->scope_profiles[sc]->n_profiles; k++) {
				const Otelprof__Otlp__Profile *p =
					rp->scope_profiles[sc]->profiles[k];

				sref[p->sample_type->type_strindex] = 1;
				sref[p->sample_type->unit_strindex] = 1;
				sref[p->period_type->type_strindex] = 1;
				sref[p->period_type->unit_strindex] = 1;
				for (size_t i = 0; i < p->n_samples; i++)
					mark_attrs(
						d,
						p->samples[i]
							->attribute_indices,
						p->samples[i]
							->n_attribute_indices,
						sref, aref);
			}
		}
	}
	for (size_t i = 1; i < d->n_string_table; i++)
		if (!sref[i])
			fail_msg("string_table[%zu] \"%s\" is not referenced",
				 i, d->string_table[i]);
	for (size_t i = 1; i < d->n_attribute_table; i++)
		if (!aref[i])
			fail_msg("attribute_table[%zu] is not referenced", i);
	free(sref);
	free(aref);
}

static bool in_string_table(const Otelprof__Otlp__ProfilesData *pd,
			    const char *s)
{
	for (size_t i = 0; i < pd->dictionary->n_string_table; i++)
		if (!strcmp(pd->dictionary->string_table[i], s))
			return true;
	return false;
}

static void dictionary_only_referenced(void **state)
{
	struct profile_builder b;
	struct pb_resource_info r1 = {.key = 1,
				      .pid = 100,
				      .exe_name = "app",
				      .exe_path = "/bin/app",
				      .host_name = "h"};
	Otelprof__Otlp__ProfilesData *pd;
	uint32_t res;
	int32_t loc, st, ctx[2];

	(void)state;
	assert_int_equal(pb_init(&b), 0);
	assert_int_equal(pb_resource(&b, &r1, &res), 0);
	/* Native frames only: the kernel frame-type attribute and the
	 * kernel mapping name interned at reset go unused. */
	loc = frame(&b, FRAME_NATIVE, 0x10, "f", "/bin/app");
	st = pb_stack(&b, &loc, 1);
	ctx[0] = pb_attr_string(&b, "http.route", "/checkout");
	ctx[1] = pb_attr_string(&b, "user.tier", "gold-value");
	assert_true(ctx[0] > 0 && ctx[1] > 0);
	/* An attribute interned but used by no sample. */
	assert_true(pb_attr_string(&b, "never.used", "nowhere") > 0);
	assert_int_equal(pb_add_sample(&b, res, st, 100, "worker-thread", 0, 0,
				       ctx, 2, 5000),
			 0);
	pd = encode(&b, 4000, 7000);
	assert_dictionary_all_referenced(pd);
	/* String values are inline, not in the table. */
	assert_false(in_string_table(pd, "worker-thread"));
	assert_false(in_string_table(pd, "/checkout"));
	assert_false(in_string_table(pd, "gold-value"));
	assert_false(in_string_table(pd, "never.used"));
	assert_false(in_string_table(pd, "[kernel.kallsyms]"));
	assert_true(in_string_table(pd, "http.route"));
	assert_true(in_string_table(pd, "thread.name"));
	{
		const Otelprof__Otlp__Profile *p = pd->resource_profiles[0]
							   ->scope_profiles[0]
							   ->profiles[0];
		const Otelprof__Otlp__ProfilesDictionary *d = pd->dictionary;
		int seen = 0;

		assert_int_equal(p->samples[0]->n_attribute_indices, 5);
		for (size_t i = 0; i < 5; i++) {
			const Otelprof__Otlp__KeyValueAndUnit *a =
				d->attribute_table
					[p->samples[0]->attribute_indices[i]];

			if (!strcmp(d->string_table[a->key_strindex],
				    "user.tier")) {
				assert_string_equal(a->value->string_value,
						    "gold-value");
				seen++;
			}
			if (!strcmp(d->string_table[a->key_strindex],
				    "thread.name")) {
				assert_string_equal(a->value->string_value,
						    "worker-thread");
				seen++;
			}
		}
		assert_int_equal(seen, 2);
	}
	otelprof__otlp__profiles_data__free_unpacked(pd, NULL);
	pb_free(&b);
}

/* A window without samples is one host resource with an empty profile,
 * not a message without ResourceProfiles. */
static void empty_window_is_host_profile(void **state)
{
	struct profile_builder b;
	struct otlp_window w = {4000, 7000, 10101010, "scope", "1.0", "h1"};
	Otelprof__Otlp__ProfilesData *pd;
	const Otelprof__Otlp__Profile *p;
	const Otelprof__Otlp__Resource *r;
	uint8_t *buf;
	size_t len;

	(void)state;
	assert_int_equal(pb_init(&b), 0);
	assert_int_equal(otlp_encode(&b, &w, &buf, &len), 0);
	pd = otelprof__otlp__profiles_data__unpack(NULL, len, buf);
	free(buf);
	assert_non_null(pd);
	assert_int_equal(pd->n_resource_profiles, 1);
	assert_dictionary_all_referenced(pd);
	r = pd->resource_profiles[0]->resource;
	assert_int_equal(r->n_attributes, 1);
	assert_string_equal(r->attributes[0]->key, "host.name");
	assert_string_equal(r->attributes[0]->value->string_value, "h1");
	p = pd->resource_profiles[0]->scope_profiles[0]->profiles[0];
	assert_int_equal(p->n_samples, 0);
	assert_int_equal(p->time_unix_nano, 4000);
	assert_int_equal(p->duration_nano, 3000);
	assert_string_equal(str(pd, p->sample_type->type_strindex), "samples");
	/* Only what the empty profile refers to. */
	assert_int_equal(pd->dictionary->n_string_table, 5);
	assert_int_equal(pd->dictionary->n_attribute_table, 1);
	otelprof__otlp__profiles_data__free_unpacked(pd, NULL);
	pb_free(&b);
}

/* Inlined frames: several Lines per Location, innermost first, each with
 * its own Function, file and line; locations with the same lines share
 * their entry, different inlining does not. */
static void inlined_lines(void **state)
{
	struct profile_builder b;
	struct frame_inline in[2] = {
		{"mix", "_Z3mixm", "/src/mix.h", 12, 0},
		{"step", NULL, "/src/step.c", 40, 0},
	};
	struct frame f;
	Otelprof__Otlp__ProfilesData *pd;
	const Otelprof__Otlp__ProfilesDictionary *d;
	const Otelprof__Otlp__Location *loc = NULL;
	int32_t l1, l2, l3;
	const char *want_name[3] = {"mix", "step", "leaf_heavy"};
	const int64_t want_line[3] = {12, 40, 7};

	(void)state;
	assert_int_equal(pb_init(&b), 0);
	memset(&f, 0, sizeof(f));
	f.address = 0x4010;
	f.function = "leaf_heavy";
	f.function_file = "/src/leaf.c";
	f.line = 7;
	f.mapping_file = "/bin/app";
	f.map_start = 0x1000;
	f.map_limit = 0x9000;
	f.inlined = in;
	f.ninlined = 2;
	l1 = pb_location(&b, &f);
	l2 = pb_location(&b, &f);
	f.ninlined = 1;
	l3 = pb_location(&b, &f);
	assert_true(l1 > 0);
	assert_int_equal(l1, l2);
	assert_true(l3 > 0 && l3 != l1);
	assert_true(pb_stack(&b, &l1, 1) > 0);
	pd = encode(&b, 1000, 2000);
	assert_non_null(pd);
	d = pd->dictionary;
	assert_true((size_t)l1 < d->n_location_table);
	loc = d->location_table[l1];
	assert_int_equal(loc->n_lines, 3);
	for (int i = 0; i < 3; i++) {
		const Otelprof__Otlp__Function *fn =
			d->function_table[loc->lines[i]->function_index];

		assert_string_equal(d->string_table[fn->name_strindex],
				    want_name[i]);
		assert_int_equal(loc->lines[i]->line, want_line[i]);
	}
	assert_string_equal(
		d->string_table[d->function_table[loc->lines[0]->function_index]
					->system_name_strindex],
		"_Z3mixm");
	assert_int_equal(d->location_table[l3]->n_lines, 2);
	otelprof__otlp__profiles_data__free_unpacked(pd, NULL);
	pb_free(&b);
}

/* Samples taken at two rates (the rate changed inside the window): the
 * same stack and thread do not merge across rates, and each rate is its own
 * Profile of the resource, with its period. */
static void one_profile_per_rate(void **state)
{
	struct profile_builder b;
	struct pb_resource_info r1 = {.key = 1,
				      .pid = 100,
				      .exe_name = "app",
				      .exe_path = "/bin/app",
				      .host_name = "h"};
	Otelprof__Otlp__ProfilesData *pd;
	const Otelprof__Otlp__ScopeProfiles *sc;
	uint32_t res;
	int32_t loc, st;

	(void)state;
	assert_int_equal(pb_init(&b), 0);
	assert_int_equal(pb_resource(&b, &r1, &res), 0);
	loc = frame(&b, FRAME_NATIVE, 0x10, "f", "/bin/app");
	st = pb_stack(&b, &loc, 1);
	b.period_ns = 1000000000ull / 19;
	for (int i = 0; i < 3; i++)
		assert_int_equal(pb_add_sample(&b, res, st, 100, "app", 0, 0,
					       NULL, 0, 5000 + i),
				 0);
	b.period_ns = 1000000000ull / 99;
	for (int i = 0; i < 5; i++)
		assert_int_equal(pb_add_sample(&b, res, st, 100, "app", 0, 0,
					       NULL, 0, 5100 + i),
				 0);
	pd = encode(&b, 4000, 7000);
	assert_int_equal(pd->n_resource_profiles, 1);
	sc = pd->resource_profiles[0]->scope_profiles[0];
	assert_int_equal(sc->n_profiles, 2);
	assert_int_equal(sc->profiles[0]->period, 1000000000 / 19);
	assert_int_equal(sc->profiles[0]->n_samples, 1);
	assert_int_equal(sc->profiles[0]->samples[0]->n_timestamps_unix_nano,
			 3);
	assert_int_equal(sc->profiles[1]->period, 1000000000 / 99);
	assert_int_equal(sc->profiles[1]->n_samples, 1);
	assert_int_equal(sc->profiles[1]->samples[0]->n_timestamps_unix_nano,
			 5);
	assert_memory_not_equal(sc->profiles[0]->profile_id.data,
				sc->profiles[1]->profile_id.data, 16);
	otelprof__otlp__profiles_data__free_unpacked(pd, NULL);
	pb_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dedup_and_zero_entries),
		cmocka_unit_test(inlined_lines),
		cmocka_unit_test(samples_merge_and_encode),
		cmocka_unit_test(offcpu_profile),
		cmocka_unit_test(wire_field_numbers),
		cmocka_unit_test(context_links_and_attributes),
		cmocka_unit_test(dictionary_only_referenced),
		cmocka_unit_test(empty_window_is_host_profile),
		cmocka_unit_test(one_profile_per_rate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
