// SPDX-License-Identifier: Apache-2.0
#include "encode/profile_builder.h"
#include "util/utf8.h"
#include "util/grow.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct pb_attr) == 16, "pb_attr must have no padding");
_Static_assert(sizeof(struct pb_mapping) == 40,
	       "pb_mapping must have no padding");
_Static_assert(sizeof(struct pb_location) == 32,
	       "pb_location must have no padding");
_Static_assert(sizeof(struct pb_function) == 16,
	       "pb_function must have no padding");
_Static_assert(sizeof(struct pb_link) == 24, "pb_link must have no padding");

#define VEC_PUSH(vec, item, err_ret)                                           \
	do {                                                                   \
		if ((vec).n == (vec).cap) {                                    \
			uint32_t ncap_ = (vec).cap ? (vec).cap * 2 : 64;       \
			void *nv_ = realloc((vec).v,                           \
					    (size_t)ncap_ * sizeof(*(vec).v)); \
			if (!nv_)                                              \
				return (err_ret);                              \
			(vec).v = nv_;                                         \
			(vec).cap = ncap_;                                     \
		}                                                              \
		(vec).v[(vec).n++] = (item);                                   \
	} while (0)

#define VEC_FREE(vec)                                                          \
	do {                                                                   \
		free((vec).v);                                                 \
		(vec).v = NULL;                                                \
		(vec).n = 0;                                                   \
		(vec).cap = 0;                                                 \
	} while (0)

/* Every index map of the builder, by offset: one list for the mutable
 * walk (init, clear, free) and the const one (memory). */
static const size_t map_offsets[] = {
	offsetof(struct profile_builder, str_index),
	offsetof(struct profile_builder, attr_index),
	offsetof(struct profile_builder, function_index),
	offsetof(struct profile_builder, mapping_index),
	offsetof(struct profile_builder, location_index),
	offsetof(struct profile_builder, stack_index),
	offsetof(struct profile_builder, link_index),
	offsetof(struct profile_builder, resource_index),
	offsetof(struct profile_builder, sample_index),
	offsetof(struct profile_builder, lines_index),
};
#define N_MAPS (sizeof(map_offsets) / sizeof(map_offsets[0]))

static struct idxmap *all_maps(struct profile_builder *b, size_t i)
{
	return i < N_MAPS ? (struct idxmap *)((char *)b + map_offsets[i])
			  : NULL;
}

static const struct idxmap *all_maps_const(const struct profile_builder *b,
					   size_t i)
{
	return i < N_MAPS ? (const struct idxmap *)((const char *)b +
						    map_offsets[i])
			  : NULL;
}

static void free_window(struct profile_builder *b)
{
	for (uint32_t i = 0; i < b->resources.n; i++) {
		struct pb_resource *r = &b->resources.v[i];

		for (size_t k = 0; k < r->nattrs; k++) {
			free(r->attrs[k].key);
			free(r->attrs[k].str);
		}
		free(r->attrs);
		free(r->samples);
	}
	for (uint32_t i = 0; i < b->samples.n; i++) {
		free(b->samples.v[i].ts);
		free(b->samples.v[i].vals);
	}
}

int pb_init(struct profile_builder *b)
{
	memset(b, 0, sizeof(*b));
	for (size_t i = 0; all_maps(b, i); i++)
		idxmap_init(all_maps(b, i));
	return pb_reset(b);
}

void pb_free(struct profile_builder *b)
{
	free_window(b);
	str_arena_free(&b->arena);
	VEC_FREE(b->str_off);
	VEC_FREE(b->attrs);
	VEC_FREE(b->functions);
	VEC_FREE(b->mappings);
	VEC_FREE(b->locations);
	VEC_FREE(b->stack_off);
	VEC_FREE(b->stack_len);
	VEC_FREE(b->stack_locs);
	VEC_FREE(b->lines_off);
	VEC_FREE(b->lines_len);
	VEC_FREE(b->lines_vals);
	VEC_FREE(b->links);
	VEC_FREE(b->resources);
	VEC_FREE(b->samples);
	for (size_t i = 0; all_maps(b, i); i++)
		idxmap_free(all_maps(b, i));
	memset(b, 0, sizeof(*b));
}

/* ---- strings ---- */

struct str_key {
	const struct profile_builder *b;
	const char *s;
	size_t len;
};

static bool str_eq(const void *ctx, uint32_t idx)
{
	const struct str_key *k = ctx;
	const char *have = k->b->arena.buf + k->b->str_off.v[idx];

	return !memcmp(have, k->s, k->len) && have[k->len] == '\0';
}

/* The window's strings are bounded by the window (not charged). */
static const struct str_arena_growth strings_growth = {1 << 16, NULL, NULL,
						       NULL};

static int32_t intern_string(struct profile_builder *b, const char *s,
			     size_t len)
{
	struct str_key k = {b, s, len};
	uint64_t h;
	uint32_t idx;
	int err;

	/* OTLP strings must be UTF-8: intern the repaired form (so two
	 * inputs that repair alike stay one entry). */
	if (!utf8_valid(s, len)) {
		size_t clen;
		char *clean = utf8_sanitize(s, len, &clen);
		int32_t r;

		if (!clean)
			return -ENOMEM;
		r = intern_string(b, clean, clen);
		free(clean);
		return r;
	}
	h = hash_bytes(s, len, 0x73747273);
	if (idxmap_find(&b->str_index, h, str_eq, &k, &idx))
		return (int32_t)idx;
	if (b->str_off.n >= INT32_MAX || len >= SIZE_MAX)
		return -E2BIG;
	err = str_arena_reserve(&b->arena, len + 1, &strings_growth);
	if (err)
		return err;
	idx = b->str_off.n;
	VEC_PUSH(b->str_off, (uint32_t)b->arena.len, -ENOMEM);
	str_arena_append(&b->arena, s, len);
	if (idxmap_insert(&b->str_index, h, idx))
		return -ENOMEM;
	return (int32_t)idx;
}

int32_t pb_string(struct profile_builder *b, const char *s)
{
	return intern_string(b, s ? s : "", s ? strlen(s) : 0);
}

/* ---- generic fixed-size records ---- */

#define DEFINE_INTERN(fn, type, vec, index, seed)                              \
	struct fn##_ctx {                                                      \
		const struct profile_builder *b;                               \
		const type *rec;                                               \
	};                                                                     \
	static bool fn##_eq(const void *ctx, uint32_t idx)                     \
	{                                                                      \
		const struct fn##_ctx *c = ctx;                                \
		return !memcmp(&c->b->vec.v[idx], c->rec, sizeof(type));       \
	}                                                                      \
	static int32_t fn(struct profile_builder *b, const type *rec)          \
	{                                                                      \
		struct fn##_ctx c = {b, rec};                                  \
		uint64_t h = hash_bytes(rec, sizeof(type), seed);              \
		uint32_t idx;                                                  \
		if (idxmap_find(&b->index, h, fn##_eq, &c, &idx))              \
			return (int32_t)idx;                                   \
		if (b->vec.n >= INT32_MAX)                                     \
			return -E2BIG;                                         \
		idx = b->vec.n;                                                \
		VEC_PUSH(b->vec, *rec, -ENOMEM);                               \
		if (idxmap_insert(&b->index, h, idx))                          \
			return -ENOMEM;                                        \
		return (int32_t)idx;                                           \
	}

DEFINE_INTERN(intern_attr, struct pb_attr, attrs, attr_index, 1)
DEFINE_INTERN(intern_function, struct pb_function, functions, function_index, 2)
DEFINE_INTERN(intern_mapping, struct pb_mapping, mappings, mapping_index, 3)
DEFINE_INTERN(intern_location, struct pb_location, locations, location_index, 4)
DEFINE_INTERN(intern_link, struct pb_link, links, link_index, 5)

/* Line lists: variable-length (function, line) pairs, interned by content
 * like stacks. */
struct lines_ctx {
	const struct profile_builder *b;
	const int32_t *vals;
	size_t n;
};

static bool lines_eq(const void *ctx, uint32_t idx)
{
	const struct lines_ctx *c = ctx;

	if (c->b->lines_len.v[idx] != c->n)
		return false;
	return !c->n || !memcmp(c->b->lines_vals.v + c->b->lines_off.v[idx],
				c->vals, c->n * sizeof(int32_t));
}

static int32_t intern_lines(struct profile_builder *b, const int32_t *vals,
			    size_t n)
{
	struct lines_ctx c = {b, vals, n};
	uint64_t h = hash_bytes(vals ? (const void *)vals : (const void *)"",
				n * sizeof(int32_t), 11);
	uint32_t idx;

	if (idxmap_find(&b->lines_index, h, lines_eq, &c, &idx))
		return (int32_t)idx;
	if (b->lines_off.n >= INT32_MAX ||
	    (uint64_t)b->lines_vals.n + n > UINT32_MAX)
		return -E2BIG;
	idx = b->lines_off.n;
	VEC_PUSH(b->lines_off, b->lines_vals.n, -ENOMEM);
	VEC_PUSH(b->lines_len, (uint32_t)n, -ENOMEM);
	for (size_t i = 0; i < n; i++)
		VEC_PUSH(b->lines_vals, vals[i], -ENOMEM);
	if (idxmap_insert(&b->lines_index, h, idx))
		return -ENOMEM;
	return (int32_t)idx;
}

static int32_t attr_str(struct profile_builder *b, int32_t key, const char *v)
{
	struct pb_attr a;
	int32_t s = pb_string(b, v);

	if (s < 0)
		return s;
	memset(&a, 0, sizeof(a));
	a.key = key;
	a.is_str = 1;
	a.ival = s;
	return intern_attr(b, &a);
}

static int32_t attr_int(struct profile_builder *b, int32_t key, int64_t v)
{
	struct pb_attr a;

	memset(&a, 0, sizeof(a));
	a.key = key;
	a.ival = v;
	return intern_attr(b, &a);
}

int pb_reset(struct profile_builder *b)
{
	struct pb_attr a0;
	struct pb_function f0;
	struct pb_mapping m0;
	struct pb_location l0;
	struct pb_link k0;
	int32_t r;

	free_window(b);
	b->arena.len = 0;
	b->str_off.n = 0;
	b->attrs.n = 0;
	b->functions.n = 0;
	b->mappings.n = 0;
	b->locations.n = 0;
	b->stack_off.n = 0;
	b->lines_off.n = 0;
	b->lines_len.n = 0;
	b->lines_vals.n = 0;
	b->stack_len.n = 0;
	b->stack_locs.n = 0;
	b->links.n = 0;
	b->resources.n = 0;
	b->samples.n = 0;
	b->total_samples = 0;
	b->offcpu_samples = 0;
	b->min_ts = UINT64_MAX;
	b->max_ts = 0;
	for (size_t i = 0; all_maps(b, i); i++)
		idxmap_clear(all_maps(b, i));
	memset(b->thread_cache, 0, sizeof(b->thread_cache));
	memset(b->cpu_attr, 0, sizeof(b->cpu_attr));

	/* Entry 0 of every table is the zero value. */
	memset(&a0, 0, sizeof(a0));
	memset(&f0, 0, sizeof(f0));
	memset(&m0, 0, sizeof(m0));
	memset(&l0, 0, sizeof(l0));
	memset(&k0, 0, sizeof(k0));
	if (pb_string(b, "") != 0 || intern_attr(b, &a0) != 0 ||
	    intern_function(b, &f0) != 0 || intern_mapping(b, &m0) != 0 ||
	    intern_location(b, &l0) != 0 || intern_link(b, &k0) != 0 ||
	    pb_stack(b, NULL, 0) != 0 || intern_lines(b, NULL, 0) != 0)
		return -ENOMEM;

	b->s_thread_id = pb_string(b, "thread.id");
	b->s_thread_name = pb_string(b, "thread.name");
	b->s_cpu = pb_string(b, "cpu.logical_number");
	b->s_frame_type = pb_string(b, "profile.frame.type");
	b->s_build_id = pb_string(b, "process.executable.build_id.gnu");
	b->s_htlhash = pb_string(b, "process.executable.build_id.htlhash");
	b->s_build_id_go = pb_string(b, "process.executable.build_id.go");
	b->s_kernel_mapping = pb_string(b, "[kernel.kallsyms]");
	r = b->s_kernel_mapping;
	if (r < 0)
		return r;
	{
		static const char *const types[FRAME_KINDS] = {
			[FRAME_NATIVE] = "native", [FRAME_KERNEL] = "kernel",
			[FRAME_V8JS] = "v8js",	   [FRAME_CPYTHON] = "cpython",
			[FRAME_GO] = "go",	   [FRAME_JVM] = "jvm",
			[FRAME_RUBY] = "ruby",	   [FRAME_PHP] = "php",
			[FRAME_PERL] = "perl",	   [FRAME_DOTNET] = "dotnet",
			[FRAME_BEAM] = "beam",
		};

		for (int i = 0; i < FRAME_KINDS; i++) {
			b->a_frame[i] = attr_str(b, b->s_frame_type, types[i]);
			if (b->a_frame[i] < 0)
				return -ENOMEM;
		}
	}
	/* Frames whose caller was found through the frame pointer (code
	 * without CFI): less certain than CFI, so marked. */
	r = pb_string(b, "otelprof.unwind.method");
	if (r < 0)
		return r;
	b->a_unwind_fp = attr_str(b, r, "frame_pointer");
	if (b->a_unwind_fp < 0)
		return -ENOMEM;
	return 0;
}

static int32_t intern_fn(struct profile_builder *b, const char *name,
			 const char *system_name, const char *file,
			 uint32_t start_line)
{
	struct pb_function fn;
	int32_t r;

	memset(&fn, 0, sizeof(fn));
	r = pb_string(b, name);
	if (r < 0)
		return r;
	fn.name = r;
	fn.system_name = r;
	if (system_name && strcmp(system_name, name)) {
		r = pb_string(b, system_name);
		if (r < 0)
			return r;
		fn.system_name = r;
	}
	if (file) {
		r = pb_string(b, file);
		if (r < 0)
			return r;
		fn.filename = r;
	}
	fn.start_line = start_line > INT32_MAX ? 0 : (int32_t)start_line;
	return intern_function(b, &fn);
}

int32_t pb_location(struct profile_builder *b, const struct frame *f)
{
	struct pb_location l;
	int32_t r;

	if (f->memo_value > 0 && (uint32_t)f->memo_value < b->locations.n)
		return f->memo_value;
	memset(&l, 0, sizeof(l));
	l.address = f->address;
	l.frame_type_attr =
		b->a_frame[f->kind < FRAME_KINDS ? f->kind : FRAME_NATIVE];
	if (f->fp_unwound)
		l.unwind_attr = b->a_unwind_fp;
	if (f->mapping_file) {
		struct pb_mapping m;

		memset(&m, 0, sizeof(m));
		m.start = f->map_start;
		m.limit = f->map_limit;
		m.offset = f->map_offset;
		r = pb_string(b, f->mapping_file);
		if (r < 0)
			return r;
		m.filename = r;
		if (f->build_id && *f->build_id) {
			r = attr_str(b, b->s_build_id, f->build_id);
			if (r < 0)
				return r;
			m.attrs[0] = r;
		}
		if (f->htlhash && *f->htlhash) {
			r = attr_str(b, b->s_htlhash, f->htlhash);
			if (r < 0)
				return r;
			m.attrs[1] = r;
		}
		if (f->build_id_go && *f->build_id_go) {
			r = attr_str(b, b->s_build_id_go, f->build_id_go);
			if (r < 0)
				return r;
			m.attrs[2] = r;
		}
		r = intern_mapping(b, &m);
		if (r < 0)
			return r;
		l.mapping = r;
	}
	if (f->function) {
		int32_t vals[2 * PB_MAX_LINES];
		uint32_t n = 0;

		/* innermost first: the inlined functions, then the own */
		for (uint32_t i = 0; i < f->ninlined && n + 1 < PB_MAX_LINES;
		     i++) {
			const struct frame_inline *x = &f->inlined[i];

			if (!x->function)
				continue;
			r = intern_fn(b, x->function, x->function_system,
				      x->function_file, x->start_line);
			if (r < 0)
				return r;
			vals[2 * n] = r;
			vals[2 * n + 1] =
				x->line > INT32_MAX ? 0 : (int32_t)x->line;
			n++;
		}
		r = intern_fn(b, f->function, f->function_system,
			      f->function_file, f->start_line);
		if (r < 0)
			return r;
		vals[2 * n] = r;
		vals[2 * n + 1] = f->line > INT32_MAX ? 0 : (int32_t)f->line;
		n++;
		l.function = vals[0];
		l.line = vals[1];
		if (n > 1) {
			r = intern_lines(b, vals + 2, 2 * (n - 1));
			if (r < 0)
				return r;
			l.more_lines = r;
		}
	}
	return intern_location(b, &l);
}

struct stack_ctx {
	const struct profile_builder *b;
	const int32_t *locs;
	size_t n;
};

static bool stack_eq(const void *ctx, uint32_t idx)
{
	const struct stack_ctx *c = ctx;

	if (c->b->stack_len.v[idx] != c->n)
		return false;
	return !c->n || !memcmp(c->b->stack_locs.v + c->b->stack_off.v[idx],
				c->locs, c->n * sizeof(int32_t));
}

int32_t pb_stack(struct profile_builder *b, const int32_t *locs, size_t n)
{
	struct stack_ctx c = {b, locs, n};
	uint64_t h = hash_bytes(locs ? (const void *)locs : (const void *)"",
				n * sizeof(int32_t), 7);
	uint32_t idx;

	if (idxmap_find(&b->stack_index, h, stack_eq, &c, &idx))
		return (int32_t)idx;
	if (b->stack_off.n >= INT32_MAX ||
	    (uint64_t)b->stack_locs.n + n > UINT32_MAX)
		return -E2BIG;
	idx = b->stack_off.n;
	VEC_PUSH(b->stack_off, b->stack_locs.n, -ENOMEM);
	VEC_PUSH(b->stack_len, (uint32_t)n, -ENOMEM);
	for (size_t i = 0; i < n; i++)
		VEC_PUSH(b->stack_locs, locs[i], -ENOMEM);
	if (idxmap_insert(&b->stack_index, h, idx))
		return -ENOMEM;
	return (int32_t)idx;
}

int32_t pb_frames_stack(struct profile_builder *b, const struct frame *frames,
			size_t n, int32_t *locs)
{
	int32_t own[PB_MAX_FRAMES];

	if (n > PB_MAX_FRAMES)
		return -E2BIG;
	if (!locs)
		locs = own;
	for (size_t i = 0; i < n; i++) {
		locs[i] = pb_location(b, &frames[i]);
		if (locs[i] < 0)
			return locs[i];
	}
	return pb_stack(b, locs, n);
}

int32_t pb_link(struct profile_builder *b, const uint8_t trace_id[16],
		const uint8_t span_id[8])
{
	struct pb_link l;

	memcpy(l.trace_id, trace_id, 16);
	memcpy(l.span_id, span_id, 8);
	return intern_link(b, &l);
}

static bool res_eq(const void *ctx, uint32_t idx)
{
	const struct profile_builder *b = ((const void *const *)ctx)[0];
	uint64_t key = *(const uint64_t *)((const void *const *)ctx)[1];

	return b->resources.v[idx].key == key;
}

static int kv_add(struct pb_resource *r, size_t *cap, const char *key,
		  const char *str, int64_t ival)
{
	struct pb_kv kv = {0};

	if (grow_array(&r->attrs, cap, r->nattrs + 1, sizeof(*r->attrs), 8,
		       SIZE_MAX / sizeof(*r->attrs), NULL))
		return -ENOMEM;
	kv.key = strdup(key);
	if (str && !utf8_valid(str, strlen(str))) {
		size_t clen;

		kv.str = utf8_sanitize(str, strlen(str), &clen);
	} else {
		kv.str = str ? strdup(str) : NULL;
	}
	kv.i = ival;
	if (!kv.key || (str && !kv.str)) {
		free(kv.key);
		free(kv.str);
		return -ENOMEM;
	}
	r->attrs[r->nattrs++] = kv;
	return 0;
}

/* The process's published attributes, after the observed ones. */
static int add_extras(struct pb_resource *r, const struct pb_resource_info *ri)
{
	int err = 0;

	for (size_t k = r->nbase; k < r->nattrs; k++) {
		free(r->attrs[k].key);
		free(r->attrs[k].str);
	}
	r->nattrs = r->nbase;
	r->extra_gen = ri->extra_gen;
	for (size_t i = 0; !err && i < ri->nextra; i++) {
		bool dup = false;

		/* What we observed (pid, executable, host) wins over what
		 * the process claims. */
		for (size_t k = 0; k < r->nattrs && !dup; k++)
			dup = !strcmp(r->attrs[k].key, ri->extra[i].key);
		if (!dup)
			err = kv_add(r, &r->attrs_cap, ri->extra[i].key,
				     ri->extra[i].str, ri->extra[i].i);
	}
	return err;
}

int pb_resource(struct profile_builder *b, const struct pb_resource_info *ri,
		uint32_t *out)
{
	const void *ctx[2] = {b, &ri->key};
	uint64_t h = hash_u64(ri->key);
	struct pb_resource r;
	uint32_t idx;
	int err = 0;

	if (idxmap_find(&b->resource_index, h, res_eq, ctx, &idx)) {
		struct pb_resource *found = &b->resources.v[idx];

		if (found->extra_gen != ri->extra_gen &&
		    (err = add_extras(found, ri)))
			return err;
		*out = idx;
		return 0;
	}
	memset(&r, 0, sizeof(r));
	r.key = ri->key;
	err = kv_add(&r, &r.attrs_cap, "process.pid", NULL, ri->pid);
	if (!err && ri->exe_name && *ri->exe_name)
		err = kv_add(&r, &r.attrs_cap, "process.executable.name",
			     ri->exe_name, 0);
	if (!err && ri->exe_path && *ri->exe_path)
		err = kv_add(&r, &r.attrs_cap, "process.executable.path",
			     ri->exe_path, 0);
	if (!err && ri->container_id && *ri->container_id)
		err = kv_add(&r, &r.attrs_cap, "container.id", ri->container_id,
			     0);
	if (!err && ri->host_name && *ri->host_name)
		err = kv_add(&r, &r.attrs_cap, "host.name", ri->host_name, 0);
	r.nbase = r.nattrs;
	if (!err)
		err = add_extras(&r, ri);
	if (err)
		goto fail;
	idx = b->resources.n;
	if (b->resources.n == b->resources.cap) {
		uint32_t ncap = b->resources.cap ? b->resources.cap * 2 : 64;
		void *nv = realloc(b->resources.v, ncap * sizeof(r));

		if (!nv) {
			err = -ENOMEM;
			goto fail;
		}
		b->resources.v = nv;
		b->resources.cap = ncap;
	}
	b->resources.v[b->resources.n++] = r;
	if (idxmap_insert(&b->resource_index, h, idx)) {
		b->resources.n--;
		err = -ENOMEM;
		goto fail;
	}
	*out = idx;
	return 0;
fail:
	for (size_t k = 0; k < r.nattrs; k++) {
		free(r.attrs[k].key);
		free(r.attrs[k].str);
	}
	free(r.attrs);
	return err;
}

struct sample_ctx {
	const struct profile_builder *b;
	const struct pb_sample *s;
};

static bool sample_eq(const void *ctx, uint32_t idx)
{
	const struct sample_ctx *c = ctx;
	const struct pb_sample *x = &c->b->samples.v[idx], *y = c->s;

	return x->resource == y->resource && x->stack == y->stack &&
	       x->link == y->link && x->period_ns == y->period_ns &&
	       x->offcpu == y->offcpu &&
	       !memcmp(x->attrs, y->attrs, sizeof(x->attrs));
}

int32_t pb_attr_string(struct profile_builder *b, const char *key,
		       const char *value)
{
	int32_t k = pb_string(b, key);

	return k < 0 ? k : attr_str(b, k, value);
}

/* One event: on-CPU (offcpu false, counted by its timestamp) or
 * off-CPU (its duration in value, beside its timestamp). */
static int add_sample(struct profile_builder *b, uint32_t resource,
		      int32_t stack, uint32_t tid, const char *thread_name,
		      uint32_t cpu, int32_t link, const int32_t *extra,
		      uint32_t nextra, uint64_t ts, bool offcpu, int64_t value)
{
	struct pb_sample s;
	struct sample_ctx c = {b, &s};
	struct pb_sample *dst;
	uint64_t h;
	uint32_t idx;
	int32_t r;

	if (resource >= b->resources.n)
		return -EINVAL;
	struct pb_thread_cache *tc = &b->thread_cache[hash_u64(tid) & 255];
	size_t nlen = thread_name ? strnlen(thread_name, sizeof(tc->name)) : 0;

	memset(&s, 0, sizeof(s));
	s.resource = resource;
	s.stack = stack;
	s.link = link;
	s.period_ns = offcpu ? 0 : b->period_ns;
	s.offcpu = offcpu;
	if (tc->id_attr && tc->tid == tid && nlen < sizeof(tc->name) &&
	    !strncmp(tc->name, thread_name ? thread_name : "",
		     sizeof(tc->name))) {
		s.attrs[0] = tc->id_attr;
		s.attrs[1] = tc->name_attr;
	} else {
		r = attr_int(b, b->s_thread_id, tid);
		if (r < 0)
			return r;
		s.attrs[0] = r;
		if (nlen) {
			r = attr_str(b, b->s_thread_name, thread_name);
			if (r < 0)
				return r;
			s.attrs[1] = r;
		}
		if (nlen < sizeof(tc->name)) {
			tc->tid = tid;
			tc->id_attr = s.attrs[0];
			tc->name_attr = s.attrs[1];
			memset(tc->name, 0, sizeof(tc->name));
			memcpy(tc->name, thread_name ? thread_name : "", nlen);
		}
	}
	if (cpu < 256 && b->cpu_attr[cpu]) {
		s.attrs[2] = b->cpu_attr[cpu];
	} else {
		r = attr_int(b, b->s_cpu, cpu);
		if (r < 0)
			return r;
		s.attrs[2] = r;
		if (cpu < 256)
			b->cpu_attr[cpu] = r;
	}
	if (nextra > PB_MAX_CTX_ATTRS)
		nextra = PB_MAX_CTX_ATTRS;
	for (uint32_t k = 0; k < nextra; k++)
		s.attrs[3 + k] = extra[k];
	h = hash_combine(
		hash_combine(hash_u64(resource), (uint64_t)stack),
		hash_combine(hash_bytes(s.attrs, sizeof(s.attrs), 9),
			     ((uint64_t)link ^ s.period_ns) * 2 + offcpu));
	if (!idxmap_find(&b->sample_index, h, sample_eq, &c, &idx)) {
		struct pb_resource *res = &b->resources.v[resource];

		idx = b->samples.n;
		VEC_PUSH(b->samples, s, -ENOMEM);
		if (idxmap_insert(&b->sample_index, h, idx)) {
			b->samples.n--;
			return -ENOMEM;
		}
		if (grow_array(&res->samples, &res->cap, res->nsamples + 1,
			       sizeof(*res->samples), 16,
			       SIZE_MAX / sizeof(*res->samples), NULL))
			return -ENOMEM;
		res->samples[res->nsamples++] = idx;
	}
	dst = &b->samples.v[idx];
	if (dst->nts == dst->capts) {
		uint32_t ncap = dst->capts ? dst->capts * 2 : 4;
		uint64_t *nv = realloc(dst->ts, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		dst->ts = nv;
		if (offcpu) {
			int64_t *vv = realloc(dst->vals, ncap * sizeof(*vv));

			if (!vv)
				return -ENOMEM;
			dst->vals = vv;
		}
		dst->capts = ncap;
	}
	if (offcpu) {
		dst->vals[dst->nts] = value;
		b->offcpu_samples++;
	}
	dst->ts[dst->nts++] = ts;
	b->total_samples++;
	if (ts < b->min_ts)
		b->min_ts = ts;
	if (ts > b->max_ts)
		b->max_ts = ts;
	return 0;
}

int pb_add_sample(struct profile_builder *b, uint32_t resource, int32_t stack,
		  uint32_t tid, const char *thread_name, uint32_t cpu,
		  int32_t link, const int32_t *extra, uint32_t nextra,
		  uint64_t ts)
{
	return add_sample(b, resource, stack, tid, thread_name, cpu, link,
			  extra, nextra, ts, false, 0);
}

int pb_add_offcpu_sample(struct profile_builder *b, uint32_t resource,
			 int32_t stack, uint32_t tid, const char *thread_name,
			 uint32_t cpu, int32_t link, const int32_t *extra,
			 uint32_t nextra, uint64_t ts, int64_t off_ns)
{
	return add_sample(b, resource, stack, tid, thread_name, cpu, link,
			  extra, nextra, ts, true, off_ns);
}

size_t pb_memory(const struct profile_builder *b)
{
	size_t m =
		b->arena.cap + b->str_off.cap * 4 +
		b->attrs.cap * sizeof(struct pb_attr) +
		b->functions.cap * sizeof(struct pb_function) +
		b->mappings.cap * sizeof(struct pb_mapping) +
		b->locations.cap * sizeof(struct pb_location) +
		(b->stack_off.cap + b->stack_len.cap + b->stack_locs.cap) * 4 +
		b->links.cap * sizeof(struct pb_link) +
		b->samples.cap * sizeof(struct pb_sample);

	for (uint32_t i = 0; i < b->samples.n; i++)
		m += b->samples.v[i].capts * (b->samples.v[i].offcpu ? 16 : 8);
	for (size_t i = 0; all_maps_const(b, i); i++)
		m += idxmap_memory(all_maps_const(b, i));
	return m;
}
