// SPDX-License-Identifier: Apache-2.0
#include "profile_walk.h"

#include <stdio.h>
#include <string.h>

#include "symbolize/demangle.h"

typedef Otelprof__Otlp__ProfilesDictionary Dictionary;

const char *walk_attr_key(const Dictionary *d, int32_t a)
{
	if (a <= 0 || (size_t)a >= d->n_attribute_table)
		return "";
	return otlp_str(d, d->attribute_table[a]->key_strindex);
}

const Otelprof__Otlp__AnyValue *walk_attr_value(const Dictionary *d, int32_t a)
{
	return a > 0 && (size_t)a < d->n_attribute_table
		       ? d->attribute_table[a]->value
		       : NULL;
}

const char *walk_any_str(const Dictionary *d, const Otelprof__Otlp__AnyValue *v)
{
	if (!v)
		return "";
	if (v->value_case == OTELPROF__OTLP__ANY_VALUE__VALUE_STRING_VALUE)
		return v->string_value ? v->string_value : "";
	if (v->value_case ==
	    OTELPROF__OTLP__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX)
		return otlp_str(d, v->string_value_strindex);
	return "";
}

static int64_t any_int(const Otelprof__Otlp__AnyValue *v)
{
	return v && v->value_case == OTELPROF__OTLP__ANY_VALUE__VALUE_INT_VALUE
		       ? v->int_value
		       : -1;
}

/* Off-CPU events (sample type events/nanoseconds, ours and the
 * reference's): their values are nanoseconds off CPU, not CPU samples. */
int walk_is_offcpu(const Dictionary *d, const Otelprof__Otlp__Profile *prof)
{
	const Otelprof__Otlp__ValueType *t = prof ? prof->sample_type : NULL;

	return t && !strcmp(otlp_str(d, t->type_strindex), "events") &&
	       !strcmp(otlp_str(d, t->unit_strindex), "nanoseconds");
}

int walk_location_ok(const Dictionary *d, int32_t loc)
{
	return d && loc > 0 && (size_t)loc < d->n_location_table;
}

int profile_walk(const struct otlp_docs *docs, int pid, walk_fn fn, void *ctx)
{
	for (size_t di = 0; di < docs->n; di++) {
		const Otelprof__Otlp__ProfilesData *pd = docs->v[di];
		const Dictionary *d = pd->dictionary;

		if (!d)
			continue;
		for (size_t r = 0; r < pd->n_resource_profiles; r++) {
			const Otelprof__Otlp__ResourceProfiles *rp =
				pd->resource_profiles[r];
			struct walk_sample s = {
				.pd = pd, .d = d, .doc = di, .rp = rp};

			s.pid = any_int(
				otlp_resource_attr(pd, rp, "process.pid"));
			s.exe = walk_any_str(
				d, otlp_resource_attr(
					   pd, rp, "process.executable.name"));
			if (pid > 0 && s.pid != pid)
				continue;
			for (size_t sc = 0; sc < rp->n_scope_profiles; sc++) {
				const Otelprof__Otlp__ScopeProfiles *sp =
					rp->scope_profiles[sc];

				for (size_t p = 0; p < sp->n_profiles; p++) {
					s.prof = sp->profiles[p];
					if (walk_is_offcpu(d, s.prof))
						continue;
					for (size_t i = 0;
					     i < s.prof->n_samples; i++) {
						const Otelprof__Otlp__Sample
							*smp = s.prof->samples
								       [i];
						int e;

						if (smp->stack_index <= 0 ||
						    (size_t)smp->stack_index >=
							    d->n_stack_table)
							continue;
						s.smp = smp;
						s.stack =
							d->stack_table
								[smp->stack_index];
						s.weight =
							smp->n_timestamps_unix_nano
								? smp->n_timestamps_unix_nano
								: 1;
						if (smp->n_values &&
						    smp->values[0] > 0)
							s.weight =
								(uint64_t)smp->values
									[0];
						s.tid = -1;
						s.thread_name = "";
						for (size_t k = 0;
						     k <
						     smp->n_attribute_indices;
						     k++) {
							int32_t a =
								smp->attribute_indices
									[k];
							const char *key =
								walk_attr_key(
									d, a);

							if (!strcmp(key,
								    "thread."
								    "id"))
								s.tid = any_int(
									walk_attr_value(
										d,
										a));
							else if (!strcmp(key,
									 "threa"
									 "d."
									 "nam"
									 "e"))
								s.thread_name = walk_any_str(
									d,
									walk_attr_value(
										d,
										a));
						}
						s.link =
							smp->link_index > 0 &&
									(size_t)smp->link_index <
										d->n_link_table
								? d->link_table
									  [smp->link_index]
								: NULL;
						e = fn(&s, ctx);
						if (e)
							return e;
					}
				}
			}
		}
	}
	return 0;
}

const char *frame_name(const Dictionary *d, int32_t loc, size_t k, char *buf,
		       size_t buflen)
{
	const Otelprof__Otlp__Location *l = d->location_table[loc];

	if (k < l->n_lines) {
		const Otelprof__Otlp__Line *ln = l->lines[k];

		if (ln->function_index > 0 &&
		    (size_t)ln->function_index < d->n_function_table) {
			const Otelprof__Otlp__Function *f =
				d->function_table[ln->function_index];
			const char *n = otlp_str(d, f->name_strindex);

			if (!*n)
				n = otlp_str(d, f->system_name_strindex);
			if (*n) {
				/* Names from other producers may still be
				 * mangled; ours are demangled already. */
				char dm[DEMANGLE_MAX_OUTPUT];

				if (buflen >= DEMANGLE_MAX_OUTPUT &&
				    symbol_demangle(n, dm)) {
					memcpy(buf, dm, strlen(dm) + 1);
					return buf;
				}
				return n;
			}
		}
	}
	if (l->mapping_index > 0 &&
	    (size_t)l->mapping_index < d->n_mapping_table) {
		const char *fn = otlp_str(
			d,
			d->mapping_table[l->mapping_index]->filename_strindex);
		const char *base = strrchr(fn, '/');

		snprintf(buf, buflen, "%.200s+0x%llx", base ? base + 1 : fn,
			 (unsigned long long)l->address);
	} else {
		snprintf(buf, buflen, "0x%llx", (unsigned long long)l->address);
	}
	return buf;
}
