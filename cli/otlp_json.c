// SPDX-License-Identifier: Apache-2.0
/*
 * OTLP/JSON <-> protobuf-c trees. The JSON mapping is proto3's with OTLP's
 * exceptions: lowerCamelCase names, 64-bit integers as strings (numbers are
 * accepted too), trace and span ids as hex. Every node is allocated the way
 * protobuf-c's unpacker would (one malloc per string, array and message),
 * so free_unpacked releases a decoded tree. Unknown fields are ignored;
 * values of the wrong type read as zero: the file may be anybody's, and the
 * readers range-check every index anyway.
 */
#include "otlp_json.h"
#include "util/idxmap.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef Otelprof__Otlp__ProfilesData ProfilesData;
typedef Otelprof__Otlp__ProfilesDictionary Dictionary;

/* Decoding fails as a whole on allocation failure only. */
struct dec {
	int oom;
};

static void *dalloc(struct dec *d, size_t n, size_t size)
{
	void *p;

	if (d->oom || !n)
		return NULL;
	p = calloc(n, size);
	if (!p)
		d->oom = 1;
	return p;
}

static int64_t jint(const json_t *v)
{
	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;
		long long x;

		errno = 0;
		x = strtoll(s, &end, 10);
		if (!errno && end != s && !*end)
			return x;
		/* uint64 above INT64_MAX (addresses) */
		errno = 0;
		unsigned long long u = strtoull(s, &end, 10);
		if (!errno && end != s && !*end && s[0] != '-')
			return (int64_t)u;
	}
	if (json_is_real(v))
		return (int64_t)json_real_value(v);
	return 0;
}

static uint64_t juint(const json_t *v)
{
	return (uint64_t)jint(v);
}

/* int32 index: out-of-range values become -1 (invalid, skipped). */
static int32_t jidx(const json_t *v)
{
	int64_t x = jint(v);

	return x < INT32_MIN || x > INT32_MAX ? -1 : (int32_t)x;
}

static char *jstrdup(struct dec *d, const json_t *v)
{
	const char *s = json_is_string(v) ? json_string_value(v) : "";
	size_t n = json_is_string(v) ? json_string_length(v) : 0;
	char *p;

	if (d->oom)
		return NULL;
	p = malloc(n + 1);
	if (!p) {
		d->oom = 1;
		return NULL;
	}
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

#define GET(o, k) json_object_get((o), (k))

/* Repeated int32 / int64 / uint64 arrays. */
static int32_t *jint32s(struct dec *d, const json_t *a, size_t *n)
{
	int32_t *v;

	*n = 0;
	if (!json_is_array(a) || !json_array_size(a))
		return NULL;
	v = dalloc(d, json_array_size(a), sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < json_array_size(a); i++)
		v[i] = jidx(json_array_get(a, i));
	*n = json_array_size(a);
	return v;
}

static int64_t *jint64s(struct dec *d, const json_t *a, size_t *n)
{
	int64_t *v;

	*n = 0;
	if (!json_is_array(a) || !json_array_size(a))
		return NULL;
	v = dalloc(d, json_array_size(a), sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < json_array_size(a); i++)
		v[i] = jint(json_array_get(a, i));
	*n = json_array_size(a);
	return v;
}

static uint64_t *juint64s(struct dec *d, const json_t *a, size_t *n)
{
	return (uint64_t *)jint64s(d, a, n);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* OTLP ids are hex strings; anything else decodes as empty. */
static ProtobufCBinaryData jhex(struct dec *d, const json_t *v)
{
	ProtobufCBinaryData b = {0, NULL};
	const char *s = json_is_string(v) ? json_string_value(v) : "";
	size_t n = strlen(s);

	if (!n || n % 2 || n > 64)
		return b;
	b.data = dalloc(d, n / 2, 1);
	if (!b.data)
		return b;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			free(b.data);
			b.data = NULL;
			return b;
		}
		b.data[i] = (uint8_t)(hi << 4 | lo);
	}
	b.len = n / 2;
	return b;
}

/* An array of messages: allocate the pointer array, init each element and
 * run fill with e_ (the JSON element) and m_ (the message). out and nout
 * are evaluated once, before m_ exists, so fill may nest another use. */
#define DECODE_ARRAY(d, arr, T, init, out, nout, fill)                         \
	do {                                                                   \
		const json_t *a_ = (arr);                                      \
		T ***o_ = &(out);                                              \
		size_t *no_ = &(nout);                                         \
		size_t n_ = json_is_array(a_) ? json_array_size(a_) : 0;       \
		*no_ = 0;                                                      \
		*o_ = n_ ? dalloc((d), n_, sizeof(T *)) : NULL;                \
		for (size_t i_ = 0; *o_ && i_ < n_; i_++) {                    \
			const json_t *e_ = json_array_get(a_, i_);             \
			T *m_ = dalloc((d), 1, sizeof(T));                     \
			if (!m_)                                               \
				break;                                         \
			init(m_);                                              \
			(*o_)[i_] = m_;                                        \
			*no_ = i_ + 1;                                         \
			fill;                                                  \
		}                                                              \
	} while (0)

static Otelprof__Otlp__AnyValue *any_value(struct dec *d, const json_t *o)
{
	Otelprof__Otlp__AnyValue *v;
	const json_t *x;

	if (!json_is_object(o))
		return NULL;
	v = dalloc(d, 1, sizeof(*v));
	if (!v)
		return NULL;
	otelprof__otlp__any_value__init(v);
	if ((x = GET(o, "stringValue"))) {
		v->value_case = OTELPROF__OTLP__ANY_VALUE__VALUE_STRING_VALUE;
		v->string_value = jstrdup(d, x);
		if (!v->string_value) {
			free(v);
			return NULL;
		}
	} else if ((x = GET(o, "stringValueStrindex"))) {
		v->value_case =
			OTELPROF__OTLP__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX;
		v->string_value_strindex = jidx(x);
	} else if ((x = GET(o, "intValue"))) {
		v->value_case = OTELPROF__OTLP__ANY_VALUE__VALUE_INT_VALUE;
		v->int_value = jint(x);
	} else if ((x = GET(o, "boolValue"))) {
		v->value_case = OTELPROF__OTLP__ANY_VALUE__VALUE_BOOL_VALUE;
		v->bool_value = json_is_true(x);
	} else if ((x = GET(o, "doubleValue"))) {
		v->value_case = OTELPROF__OTLP__ANY_VALUE__VALUE_DOUBLE_VALUE;
		v->double_value = json_is_number(x) ? json_number_value(x) : 0;
	}
	/* arrays and bytes are not read by the CLI */
	return v;
}

static void dictionary(struct dec *d, const json_t *o, Dictionary *dict)
{
	const json_t *st = GET(o, "stringTable");

	DECODE_ARRAY(d, GET(o, "mappingTable"), Otelprof__Otlp__Mapping,
		     otelprof__otlp__mapping__init, dict->mapping_table,
		     dict->n_mapping_table, {
			     m_->memory_start = juint(GET(e_, "memoryStart"));
			     m_->memory_limit = juint(GET(e_, "memoryLimit"));
			     m_->file_offset = juint(GET(e_, "fileOffset"));
			     m_->filename_strindex =
				     jidx(GET(e_, "filenameStrindex"));
			     m_->attribute_indices =
				     jint32s(d, GET(e_, "attributeIndices"),
					     &m_->n_attribute_indices);
		     });
	DECODE_ARRAY(d, GET(o, "locationTable"), Otelprof__Otlp__Location,
		     otelprof__otlp__location__init, dict->location_table,
		     dict->n_location_table, {
			     m_->mapping_index = jidx(GET(e_, "mappingIndex"));
			     m_->address = juint(GET(e_, "address"));
			     m_->attribute_indices =
				     jint32s(d, GET(e_, "attributeIndices"),
					     &m_->n_attribute_indices);
			     DECODE_ARRAY(
				     d, GET(e_, "lines"), Otelprof__Otlp__Line,
				     otelprof__otlp__line__init, m_->lines,
				     m_->n_lines, {
					     m_->function_index = jidx(
						     GET(e_, "functionIndex"));
					     m_->line = jint(GET(e_, "line"));
					     m_->column =
						     jint(GET(e_, "column"));
				     });
		     });
	DECODE_ARRAY(d, GET(o, "functionTable"), Otelprof__Otlp__Function,
		     otelprof__otlp__function__init, dict->function_table,
		     dict->n_function_table, {
			     m_->name_strindex = jidx(GET(e_, "nameStrindex"));
			     m_->system_name_strindex =
				     jidx(GET(e_, "systemNameStrindex"));
			     m_->filename_strindex =
				     jidx(GET(e_, "filenameStrindex"));
			     m_->start_line = jint(GET(e_, "startLine"));
		     });
	DECODE_ARRAY(d, GET(o, "linkTable"), Otelprof__Otlp__Link,
		     otelprof__otlp__link__init, dict->link_table,
		     dict->n_link_table, {
			     m_->trace_id = jhex(d, GET(e_, "traceId"));
			     m_->span_id = jhex(d, GET(e_, "spanId"));
		     });
	DECODE_ARRAY(d, GET(o, "attributeTable"),
		     Otelprof__Otlp__KeyValueAndUnit,
		     otelprof__otlp__key_value_and_unit__init,
		     dict->attribute_table, dict->n_attribute_table, {
			     m_->key_strindex = jidx(GET(e_, "keyStrindex"));
			     m_->unit_strindex = jidx(GET(e_, "unitStrindex"));
			     m_->value = any_value(d, GET(e_, "value"));
		     });
	DECODE_ARRAY(d, GET(o, "stackTable"), Otelprof__Otlp__Stack,
		     otelprof__otlp__stack__init, dict->stack_table,
		     dict->n_stack_table, {
			     m_->location_indices =
				     jint32s(d, GET(e_, "locationIndices"),
					     &m_->n_location_indices);
		     });
	if (json_is_array(st) && json_array_size(st)) {
		dict->string_table =
			dalloc(d, json_array_size(st), sizeof(char *));
		for (size_t i = 0;
		     dict->string_table && i < json_array_size(st); i++) {
			dict->string_table[i] =
				jstrdup(d, json_array_get(st, i));
			if (!dict->string_table[i])
				break;
			dict->n_string_table = i + 1;
		}
	}
}

static void value_type(struct dec *d, const json_t *o,
		       Otelprof__Otlp__ValueType **out)
{
	if (!json_is_object(o))
		return;
	*out = dalloc(d, 1, sizeof(**out));
	if (!*out)
		return;
	otelprof__otlp__value_type__init(*out);
	(*out)->type_strindex = jidx(GET(o, "typeStrindex"));
	(*out)->unit_strindex = jidx(GET(o, "unitStrindex"));
}

static void profile(struct dec *d, const json_t *o, Otelprof__Otlp__Profile *p)
{
	value_type(d, GET(o, "sampleType"), &p->sample_type);
	value_type(d, GET(o, "periodType"), &p->period_type);
	p->time_unix_nano = juint(GET(o, "timeUnixNano"));
	p->duration_nano = juint(GET(o, "durationNano"));
	p->period = jint(GET(o, "period"));
	p->attribute_indices =
		jint32s(d, GET(o, "attributeIndices"), &p->n_attribute_indices);
	DECODE_ARRAY(d, GET(o, "samples"), Otelprof__Otlp__Sample,
		     otelprof__otlp__sample__init, p->samples, p->n_samples, {
			     m_->stack_index = jidx(GET(e_, "stackIndex"));
			     m_->link_index = jidx(GET(e_, "linkIndex"));
			     m_->attribute_indices =
				     jint32s(d, GET(e_, "attributeIndices"),
					     &m_->n_attribute_indices);
			     m_->values = jint64s(d, GET(e_, "values"),
						  &m_->n_values);
			     m_->timestamps_unix_nano =
				     juint64s(d, GET(e_, "timestampsUnixNano"),
					      &m_->n_timestamps_unix_nano);
		     });
}

static void resource(struct dec *d, const json_t *o,
		     Otelprof__Otlp__Resource **out)
{
	if (!json_is_object(o))
		return;
	*out = dalloc(d, 1, sizeof(**out));
	if (!*out)
		return;
	otelprof__otlp__resource__init(*out);
	DECODE_ARRAY(d, GET(o, "attributes"), Otelprof__Otlp__KeyValue,
		     otelprof__otlp__key_value__init, (*out)->attributes,
		     (*out)->n_attributes, {
			     m_->key = jstrdup(d, GET(e_, "key"));
			     m_->key_strindex = jidx(GET(e_, "keyStrindex"));
			     m_->value = any_value(d, GET(e_, "value"));
		     });
}

ProfilesData *otlp_json_decode(const char *text, size_t len, char *err,
			       size_t errlen)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	struct dec d = {0};
	ProfilesData *pd;

	if (!root) {
		if (err)
			snprintf(err, errlen, "line %d column %d: %s", je.line,
				 je.column, je.text);
		return NULL;
	}
	if (!json_is_object(root) ||
	    !json_is_array(GET(root, "resourceProfiles"))) {
		if (err)
			snprintf(err, errlen, "no resourceProfiles array");
		json_decref(root);
		return NULL;
	}
	pd = dalloc(&d, 1, sizeof(*pd));
	if (pd) {
		otelprof__otlp__profiles_data__init(pd);
		DECODE_ARRAY(
			&d, GET(root, "resourceProfiles"),
			Otelprof__Otlp__ResourceProfiles,
			otelprof__otlp__resource_profiles__init,
			pd->resource_profiles, pd->n_resource_profiles, {
				resource(&d, GET(e_, "resource"),
					 &m_->resource);
				const json_t *sps = GET(e_, "scopeProfiles");
				DECODE_ARRAY(
					&d, sps, Otelprof__Otlp__ScopeProfiles,
					otelprof__otlp__scope_profiles__init,
					m_->scope_profiles,
					m_->n_scope_profiles, {
						DECODE_ARRAY(
							&d, GET(e_, "profiles"),
							Otelprof__Otlp__Profile,
							otelprof__otlp__profile__init,
							m_->profiles,
							m_->n_profiles,
							profile(&d, e_, m_));
					});
			});
		pd->dictionary = dalloc(&d, 1, sizeof(*pd->dictionary));
		if (pd->dictionary) {
			otelprof__otlp__profiles_dictionary__init(
				pd->dictionary);
			dictionary(&d, GET(root, "dictionary"), pd->dictionary);
		}
	}
	json_decref(root);
	if (d.oom) {
		if (pd)
			otelprof__otlp__profiles_data__free_unpacked(pd, NULL);
		if (err)
			snprintf(err, errlen, "out of memory");
		return NULL;
	}
	return pd;
}

/* ---- encoding: the same mapping, as the Collector's file exporter writes */

/* Strings from other producers may not be UTF-8 (protobuf-c does not
 * check): keep the entry, so indices stay right, as U+FFFD. */
static json_t *jstring(const char *s)
{
	json_t *v = json_string(s ? s : "");

	return v ? v : json_string("\xef\xbf\xbd");
}

static json_t *jstr_u64(uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%" PRIu64, v);
	return jstring(b);
}

static json_t *jstr_i64(int64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%" PRId64, v);
	return jstring(b);
}

static json_t *jhexstr(ProtobufCBinaryData b)
{
	char s[129];
	size_t n = b.len > 64 ? 64 : b.len;

	for (size_t i = 0; i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", b.data[i]);
	s[2 * n] = '\0';
	return jstring(s);
}

/* Add only non-zero values (proto3 JSON omits defaults). */
static void set_i32(json_t *o, const char *k, int32_t v)
{
	if (v)
		json_object_set_new(o, k, json_integer(v));
}

static void set_u64(json_t *o, const char *k, uint64_t v)
{
	if (v)
		json_object_set_new(o, k, jstr_u64(v));
}

static void set_i64(json_t *o, const char *k, int64_t v)
{
	if (v)
		json_object_set_new(o, k, jstr_i64(v));
}

static void set_i32s(json_t *o, const char *k, const int32_t *v, size_t n)
{
	json_t *a;

	if (!n)
		return;
	a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(v[i]));
	json_object_set_new(o, k, a);
}

static json_t *any_value_json(const Otelprof__Otlp__AnyValue *v)
{
	json_t *o = json_object();

	if (!v)
		return o;
	switch (v->value_case) {
	case OTELPROF__OTLP__ANY_VALUE__VALUE_STRING_VALUE:
		json_object_set_new(
			o, "stringValue",
			jstring(v->string_value ? v->string_value : ""));
		break;
	case OTELPROF__OTLP__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX:
		json_object_set_new(o, "stringValueStrindex",
				    json_integer(v->string_value_strindex));
		break;
	case OTELPROF__OTLP__ANY_VALUE__VALUE_INT_VALUE:
		json_object_set_new(o, "intValue", jstr_i64(v->int_value));
		break;
	case OTELPROF__OTLP__ANY_VALUE__VALUE_BOOL_VALUE:
		json_object_set_new(o, "boolValue",
				    json_boolean(v->bool_value));
		break;
	case OTELPROF__OTLP__ANY_VALUE__VALUE_DOUBLE_VALUE:
		json_object_set_new(o, "doubleValue",
				    json_real(v->double_value));
		break;
	default:
		break;
	}
	return o;
}

static json_t *value_type_json(const Otelprof__Otlp__ValueType *t)
{
	json_t *o = json_object();

	if (t) {
		set_i32(o, "typeStrindex", t->type_strindex);
		set_i32(o, "unitStrindex", t->unit_strindex);
	}
	return o;
}

/* The dictionary's string table plus strings appended for resource
 * attributes: pdata reads resource attribute keys and string values from
 * OTLP/JSON only in their string-table form (key_strindex,
 * string_value_strindex), as the file exporter writes them. */
struct strtab {
	const Dictionary *d;
	const char **extra;
	size_t nextra;
	struct idxmap index;
};

static const char *strtab_at(const struct strtab *t, uint32_t i)
{
	size_t n = t->d ? t->d->n_string_table : 0;

	return i < n ? t->d->string_table[i] : t->extra[i - n];
}

struct strtab_key {
	const struct strtab *t;
	const char *s;
};

static bool strtab_eq(const void *ctx, uint32_t i)
{
	const struct strtab_key *k = ctx;

	return !strcmp(strtab_at(k->t, i), k->s);
}

static int strtab_init(struct strtab *t, const Dictionary *d)
{
	memset(t, 0, sizeof(*t));
	t->d = d;
	idxmap_init(&t->index);
	for (size_t i = 0; d && i < d->n_string_table; i++) {
		const char *s = d->string_table[i];
		struct strtab_key k = {t, s};
		uint64_t h = hash_bytes(s, strlen(s), 0x6a73);
		uint32_t v;

		if (!idxmap_find(&t->index, h, strtab_eq, &k, &v) &&
		    idxmap_insert(&t->index, h, (uint32_t)i))
			return -ENOMEM;
	}
	return 0;
}

static int64_t strtab_get(struct strtab *t, const char *s)
{
	struct strtab_key k = {t, s};
	uint64_t h = hash_bytes(s, strlen(s), 0x6a73);
	size_t n = t->d ? t->d->n_string_table : 0;
	const char **nv;
	uint32_t v;

	if (idxmap_find(&t->index, h, strtab_eq, &k, &v))
		return v;
	if (n + t->nextra >= INT32_MAX)
		return -E2BIG;
	nv = realloc(t->extra, (t->nextra + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	t->extra = nv;
	t->extra[t->nextra] = s;
	if (idxmap_insert(&t->index, h, (uint32_t)(n + t->nextra)))
		return -ENOMEM;
	return (int64_t)(n + t->nextra++);
}

static void strtab_free(struct strtab *t)
{
	free(t->extra);
	idxmap_free(&t->index);
}

static json_t *dictionary_json(const Dictionary *d, const struct strtab *t)
{
	json_t *o = json_object(), *a;

	a = json_array();
	for (size_t i = 0; i < d->n_mapping_table; i++) {
		const Otelprof__Otlp__Mapping *m = d->mapping_table[i];
		json_t *x = json_object();

		set_u64(x, "memoryStart", m->memory_start);
		set_u64(x, "memoryLimit", m->memory_limit);
		set_u64(x, "fileOffset", m->file_offset);
		set_i32(x, "filenameStrindex", m->filename_strindex);
		set_i32s(x, "attributeIndices", m->attribute_indices,
			 m->n_attribute_indices);
		json_array_append_new(a, x);
	}
	json_object_set_new(o, "mappingTable", a);
	a = json_array();
	for (size_t i = 0; i < d->n_location_table; i++) {
		const Otelprof__Otlp__Location *l = d->location_table[i];
		json_t *x = json_object();

		set_i32(x, "mappingIndex", l->mapping_index);
		set_u64(x, "address", l->address);
		if (l->n_lines) {
			json_t *ls = json_array();

			for (size_t k = 0; k < l->n_lines; k++) {
				json_t *y = json_object();

				set_i32(y, "functionIndex",
					l->lines[k]->function_index);
				set_i64(y, "line", l->lines[k]->line);
				set_i64(y, "column", l->lines[k]->column);
				json_array_append_new(ls, y);
			}
			json_object_set_new(x, "lines", ls);
		}
		set_i32s(x, "attributeIndices", l->attribute_indices,
			 l->n_attribute_indices);
		json_array_append_new(a, x);
	}
	json_object_set_new(o, "locationTable", a);
	a = json_array();
	for (size_t i = 0; i < d->n_function_table; i++) {
		const Otelprof__Otlp__Function *f = d->function_table[i];
		json_t *x = json_object();

		set_i32(x, "nameStrindex", f->name_strindex);
		set_i32(x, "systemNameStrindex", f->system_name_strindex);
		set_i32(x, "filenameStrindex", f->filename_strindex);
		set_i64(x, "startLine", f->start_line);
		json_array_append_new(a, x);
	}
	json_object_set_new(o, "functionTable", a);
	a = json_array();
	for (size_t i = 0; i < d->n_link_table; i++) {
		const Otelprof__Otlp__Link *k = d->link_table[i];
		json_t *x = json_object();

		if (k->trace_id.len)
			json_object_set_new(x, "traceId", jhexstr(k->trace_id));
		if (k->span_id.len)
			json_object_set_new(x, "spanId", jhexstr(k->span_id));
		json_array_append_new(a, x);
	}
	json_object_set_new(o, "linkTable", a);
	a = json_array();
	for (size_t i = 0; i < d->n_string_table; i++)
		json_array_append_new(a, jstring(d->string_table[i]));
	for (size_t i = 0; i < t->nextra; i++)
		json_array_append_new(a, jstring(t->extra[i]));
	json_object_set_new(o, "stringTable", a);
	a = json_array();
	for (size_t i = 0; i < d->n_attribute_table; i++) {
		const Otelprof__Otlp__KeyValueAndUnit *kv =
			d->attribute_table[i];
		json_t *x = json_object();

		set_i32(x, "keyStrindex", kv->key_strindex);
		if (kv->value)
			json_object_set_new(x, "value",
					    any_value_json(kv->value));
		set_i32(x, "unitStrindex", kv->unit_strindex);
		json_array_append_new(a, x);
	}
	json_object_set_new(o, "attributeTable", a);
	a = json_array();
	for (size_t i = 0; i < d->n_stack_table; i++) {
		json_t *x = json_object();

		set_i32s(x, "locationIndices",
			 d->stack_table[i]->location_indices,
			 d->stack_table[i]->n_location_indices);
		json_array_append_new(a, x);
	}
	json_object_set_new(o, "stackTable", a);
	return o;
}

static json_t *profile_json(const Otelprof__Otlp__Profile *p)
{
	json_t *o = json_object(), *a = json_array();

	json_object_set_new(o, "sampleType", value_type_json(p->sample_type));
	for (size_t i = 0; i < p->n_samples; i++) {
		const Otelprof__Otlp__Sample *s = p->samples[i];
		json_t *x = json_object();

		set_i32(x, "stackIndex", s->stack_index);
		set_i32s(x, "attributeIndices", s->attribute_indices,
			 s->n_attribute_indices);
		set_i32(x, "linkIndex", s->link_index);
		if (s->n_values) {
			json_t *v = json_array();

			for (size_t k = 0; k < s->n_values; k++)
				json_array_append_new(v,
						      jstr_i64(s->values[k]));
			json_object_set_new(x, "values", v);
		}
		if (s->n_timestamps_unix_nano) {
			json_t *v = json_array();

			for (size_t k = 0; k < s->n_timestamps_unix_nano; k++)
				json_array_append_new(
					v,
					jstr_u64(s->timestamps_unix_nano[k]));
			json_object_set_new(x, "timestampsUnixNano", v);
		}
		json_array_append_new(a, x);
	}
	json_object_set_new(o, "samples", a);
	set_u64(o, "timeUnixNano", p->time_unix_nano);
	set_u64(o, "durationNano", p->duration_nano);
	json_object_set_new(o, "periodType", value_type_json(p->period_type));
	set_i64(o, "period", p->period);
	if (p->profile_id.len)
		json_object_set_new(o, "profileId", jhexstr(p->profile_id));
	set_i32s(o, "attributeIndices", p->attribute_indices,
		 p->n_attribute_indices);
	return o;
}

/* A resource attribute in the string-table form (see struct strtab). */
static json_t *resource_attr_json(const ProfilesData *pd,
				  const Otelprof__Otlp__KeyValue *kv,
				  struct strtab *t)
{
	const char *key =
		kv->key && *kv->key
			? kv->key
			: (pd->dictionary && kv->key_strindex >= 0 &&
					   (size_t)kv->key_strindex <
						   pd->dictionary
							   ->n_string_table
				   ? pd->dictionary
					     ->string_table[kv->key_strindex]
				   : "");
	json_t *y = json_object();
	int64_t k = strtab_get(t, key);

	if (k < 0) {
		json_decref(y);
		return NULL;
	}
	json_object_set_new(y, "keyStrindex", json_integer(k));
	if (kv->value &&
	    kv->value->value_case ==
		    OTELPROF__OTLP__ANY_VALUE__VALUE_STRING_VALUE) {
		json_t *v = json_object();
		int64_t sv = strtab_get(t, kv->value->string_value
						   ? kv->value->string_value
						   : "");

		if (sv < 0) {
			json_decref(v);
			json_decref(y);
			return NULL;
		}
		json_object_set_new(v, "stringValueStrindex", json_integer(sv));
		json_object_set_new(y, "value", v);
	} else {
		json_object_set_new(y, "value", any_value_json(kv->value));
	}
	return y;
}

int otlp_json_write(const ProfilesData *pd, FILE *out)
{
	json_t *root = json_object(), *rps = json_array();
	Dictionary empty = OTELPROF__OTLP__PROFILES_DICTIONARY__INIT;
	const Dictionary *d = pd->dictionary ? pd->dictionary : &empty;
	struct strtab t;
	int e = strtab_init(&t, d);

	for (size_t r = 0; !e && r < pd->n_resource_profiles; r++) {
		const Otelprof__Otlp__ResourceProfiles *rp =
			pd->resource_profiles[r];
		json_t *x = json_object(), *res = json_object(),
		       *attrs = json_array(), *sps = json_array();

		for (size_t i = 0;
		     rp->resource && i < rp->resource->n_attributes; i++) {
			json_t *y = resource_attr_json(
				pd, rp->resource->attributes[i], &t);

			if (!y) {
				e = -ENOMEM;
				break;
			}
			json_array_append_new(attrs, y);
		}
		json_object_set_new(res, "attributes", attrs);
		json_object_set_new(x, "resource", res);
		for (size_t s = 0; s < rp->n_scope_profiles; s++) {
			const Otelprof__Otlp__ScopeProfiles *sp =
				rp->scope_profiles[s];
			json_t *y = json_object(), *sc = json_object(),
			       *ps = json_array();

			if (sp->scope) {
				json_object_set_new(
					sc, "name",
					jstring(sp->scope->name
							? sp->scope->name
							: ""));
				json_object_set_new(
					sc, "version",
					jstring(sp->scope->version
							? sp->scope->version
							: ""));
			}
			json_object_set_new(y, "scope", sc);
			for (size_t p = 0; p < sp->n_profiles; p++)
				json_array_append_new(
					ps, profile_json(sp->profiles[p]));
			json_object_set_new(y, "profiles", ps);
			json_array_append_new(sps, y);
		}
		json_object_set_new(x, "scopeProfiles", sps);
		json_array_append_new(rps, x);
	}
	json_object_set_new(root, "resourceProfiles", rps);
	json_object_set_new(root, "dictionary", dictionary_json(d, &t));
	if (!e &&
	    (json_dumpf(root, out, JSON_COMPACT) || fputc('\n', out) == EOF))
		e = -EIO;
	json_decref(root);
	strtab_free(&t);
	return e;
}
