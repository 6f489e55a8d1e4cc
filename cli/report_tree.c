// SPDX-License-Identifier: Apache-2.0
#include "report_tree.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_walk.h"

const char *const report_res_keys[REPORT_RES_NKEYS] = {
	"host.name", "service.name", "container.id", "process.executable.name",
	"process.pid"};

#define NO_NODE UINT32_MAX
/* stack_leaf cache: not yet folded / dropped at a cap */
#define LEAF_UNKNOWN UINT32_MAX
#define LEAF_DROPPED (UINT32_MAX - 1)
#define CTX_MAX	     4096

/* Grow *v (element size sz) to hold n + 1 elements. */
static int grow(void **v, size_t *cap, size_t n, size_t sz)
{
	size_t ncap;
	void *nv;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 256;
	if (ncap > UINT32_MAX / 2)
		return -ENOMEM;
	nv = realloc(*v, ncap * sz);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

struct str_key {
	const struct report_tree *t;
	const char *s;
};

static bool str_eq(const void *ctx, uint32_t i)
{
	const struct str_key *k = ctx;

	return !strcmp(k->t->strs[i], k->s);
}

int report_tree_intern(struct report_tree *t, const char *s, uint32_t *out)
{
	struct str_key k = {t, s};
	uint64_t h = hash_bytes(s, strlen(s), 0x7265);
	int e;

	if (idxmap_find(&t->str_ix, h, str_eq, &k, out))
		return 0;
	if (t->nstr >= t->max_strings)
		return -ENOSPC;
	e = grow((void **)&t->strs, &t->capstr, t->nstr, sizeof(char *));
	if (e)
		return e;
	t->strs[t->nstr] = strdup(s);
	if (!t->strs[t->nstr] ||
	    idxmap_insert(&t->str_ix, h, (uint32_t)t->nstr)) {
		free(t->strs[t->nstr]);
		return -ENOMEM;
	}
	*out = (uint32_t)t->nstr++;
	return 0;
}

int report_tree_init(struct report_tree *t, size_t max_nodes, size_t max_groups)
{
	uint32_t empty;

	memset(t, 0, sizeof(*t));
	idxmap_init(&t->str_ix);
	idxmap_init(&t->fn_ix);
	idxmap_init(&t->node_ix);
	idxmap_init(&t->thread_ix);
	idxmap_init(&t->res_ix);
	idxmap_init(&t->group_ix);
	t->max_nodes = max_nodes ? max_nodes : REPORT_MAX_NODES;
	t->max_groups = max_groups ? max_groups : REPORT_MAX_GROUPS;
	t->max_strings = REPORT_MAX_STRINGS;
	t->bucket_s = 1;
	if (report_tree_intern(t, "", &empty) ||
	    grow((void **)&t->nodes, &t->capnode, 0, sizeof(*t->nodes))) {
		report_tree_free(t);
		return -ENOMEM;
	}
	t->nodes[0] = (struct report_node){NO_NODE, NO_NODE};
	t->nnode = 1;
	return 0;
}

void report_tree_free(struct report_tree *t)
{
	for (size_t i = 0; i < t->nstr; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->fns);
	free(t->nodes);
	free(t->threads);
	free(t->res);
	free(t->groups);
	idxmap_free(&t->str_ix);
	idxmap_free(&t->fn_ix);
	idxmap_free(&t->node_ix);
	idxmap_free(&t->thread_ix);
	idxmap_free(&t->res_ix);
	idxmap_free(&t->group_ix);
	memset(t, 0, sizeof(*t));
}

/* ---- functions, nodes, threads, resources, groups: interned by value ---- */

struct fn_key {
	const struct report_tree *t;
	const struct report_fn *f;
};

static bool fn_eq(const void *ctx, uint32_t i)
{
	const struct fn_key *k = ctx;
	const struct report_fn *a = &k->t->fns[i];

	return a->name == k->f->name && a->file == k->f->file &&
	       a->type == k->f->type;
}

static int intern_fn(struct report_tree *t, const struct report_fn *f,
		     uint32_t *out)
{
	struct fn_key k = {t, f};
	uint64_t h =
		hash_combine(hash_combine(hash_u64(f->name), f->file), f->type);
	int e;

	if (idxmap_find(&t->fn_ix, h, fn_eq, &k, out)) {
		if (!t->fns[*out].line)
			t->fns[*out].line = f->line;
		return 0;
	}
	e = grow((void **)&t->fns, &t->capfn, t->nfn, sizeof(*t->fns));
	if (e || idxmap_insert(&t->fn_ix, h, (uint32_t)t->nfn))
		return -ENOMEM;
	t->fns[t->nfn] = *f;
	*out = (uint32_t)t->nfn++;
	return 0;
}

struct node_key {
	const struct report_tree *t;
	uint32_t parent, fn;
};

static bool node_eq(const void *ctx, uint32_t i)
{
	const struct node_key *k = ctx;

	return k->t->nodes[i].parent == k->parent && k->t->nodes[i].fn == k->fn;
}

static int child_node(struct report_tree *t, uint32_t parent, uint32_t fn,
		      uint32_t *out)
{
	struct node_key k = {t, parent, fn};
	uint64_t h = hash_combine(hash_u64(parent), fn);
	int e;

	if (idxmap_find(&t->node_ix, h, node_eq, &k, out))
		return 0;
	if (t->nnode >= t->max_nodes)
		return -ENOSPC;
	e = grow((void **)&t->nodes, &t->capnode, t->nnode, sizeof(*t->nodes));
	if (e || idxmap_insert(&t->node_ix, h, (uint32_t)t->nnode))
		return -ENOMEM;
	t->nodes[t->nnode] = (struct report_node){parent, fn};
	*out = (uint32_t)t->nnode++;
	return 0;
}

struct thread_key {
	const struct report_tree *t;
	uint32_t name;
	int64_t tid;
};

static bool thread_eq(const void *ctx, uint32_t i)
{
	const struct thread_key *k = ctx;

	return k->t->threads[i].name == k->name &&
	       k->t->threads[i].tid == k->tid;
}

static int intern_thread(struct report_tree *t, const char *name, int64_t tid,
			 uint32_t *out)
{
	struct thread_key k = {t, 0, tid};
	uint64_t h;
	int e = report_tree_intern(t, name, &k.name);

	if (e)
		return e;
	h = hash_combine(hash_u64(k.name), (uint64_t)tid);
	if (idxmap_find(&t->thread_ix, h, thread_eq, &k, out))
		return 0;
	e = grow((void **)&t->threads, &t->capthread, t->nthread,
		 sizeof(*t->threads));
	if (e || idxmap_insert(&t->thread_ix, h, (uint32_t)t->nthread))
		return -ENOMEM;
	t->threads[t->nthread] = (struct report_thread){k.name, tid};
	*out = (uint32_t)t->nthread++;
	return 0;
}

struct res_key {
	const struct report_tree *t;
	const uint32_t *v;
};

static bool res_eq(const void *ctx, uint32_t i)
{
	const struct res_key *k = ctx;

	return !memcmp(k->t->res[i], k->v, sizeof(k->t->res[i]));
}

static int intern_res(struct report_tree *t,
		      const Otelprof__Otlp__ProfilesData *pd,
		      const Otelprof__Otlp__ResourceProfiles *rp, uint32_t *out)
{
	uint32_t v[REPORT_RES_NKEYS];
	struct res_key k = {t, v};
	uint64_t h = 0x726573;
	int e;

	for (int i = 0; i < REPORT_RES_NKEYS; i++) {
		const Otelprof__Otlp__AnyValue *a =
			otlp_resource_attr(pd, rp, report_res_keys[i]);
		char num[32];
		const char *s = walk_any_str(pd->dictionary, a);

		if (a && a->value_case ==
				 OTELPROF__OTLP__ANY_VALUE__VALUE_INT_VALUE) {
			snprintf(num, sizeof(num), "%lld",
				 (long long)a->int_value);
			s = num;
		}
		e = report_tree_intern(t, s, &v[i]);
		if (e)
			return e;
		h = hash_combine(h, v[i]);
	}
	if (idxmap_find(&t->res_ix, h, res_eq, &k, out))
		return 0;
	e = grow((void **)&t->res, &t->capres, t->nres, sizeof(*t->res));
	if (e || idxmap_insert(&t->res_ix, h, (uint32_t)t->nres))
		return -ENOMEM;
	memcpy(t->res[t->nres], v, sizeof(v));
	*out = (uint32_t)t->nres++;
	return 0;
}

struct group_key {
	const struct report_tree *t;
	const struct report_group *g;
};

static bool group_eq(const void *ctx, uint32_t i)
{
	const struct group_key *k = ctx;
	const struct report_group *a = &k->t->groups[i], *b = k->g;

	return a->leaf == b->leaf && a->thread == b->thread &&
	       a->res == b->res && a->ctx == b->ctx && a->sec == b->sec &&
	       a->side == b->side;
}

/* Add weight to the group like g; -ENOSPC past the cap. */
static int add_group_once(struct report_tree *t, const struct report_group *g)
{
	struct group_key k = {t, g};
	uint64_t h = hash_combine(
		hash_combine(
			hash_combine(hash_combine(hash_u64(g->leaf), g->thread),
				     g->res),
			g->ctx),
		(uint64_t)g->sec * 2 + g->side);
	uint32_t i;
	int e;

	if (idxmap_find(&t->group_ix, h, group_eq, &k, &i)) {
		t->groups[i].weight += g->weight;
		return 0;
	}
	if (t->ngroup >= t->max_groups)
		return -ENOSPC;
	e = grow((void **)&t->groups, &t->capgroup, t->ngroup,
		 sizeof(*t->groups));
	if (e || idxmap_insert(&t->group_ix, h, (uint32_t)t->ngroup))
		return -ENOMEM;
	t->groups[t->ngroup++] = *g;
	return 0;
}

static int64_t bucket_of(const struct report_tree *t, int64_t sec)
{
	return sec - ((sec % t->bucket_s) + t->bucket_s) % t->bucket_s;
}

/* Double the time buckets and merge the groups that now share one: a long
 * recording keeps every sample at a coarser time resolution instead of
 * dropping any. */
static int coarsen_time(struct report_tree *t)
{
	struct report_group *old = t->groups;
	size_t n = t->ngroup;
	int e = 0;

	t->bucket_s *= 2;
	t->groups = NULL;
	t->ngroup = t->capgroup = 0;
	idxmap_free(&t->group_ix);
	idxmap_init(&t->group_ix);
	for (size_t i = 0; i < n && !e; i++) {
		struct report_group g = old[i];

		g.sec = bucket_of(t, g.sec);
		e = add_group_once(t, &g); /* fewer than before: no cap */
	}
	free(old);
	return e;
}

static int add_group(struct report_tree *t, struct report_group *g)
{
	int e;

	g->sec = bucket_of(t, g->sec);
	while ((e = add_group_once(t, g)) == -ENOSPC &&
	       t->bucket_s < REPORT_MAX_BUCKET_S) {
		e = coarsen_time(t);
		if (e)
			return e;
		g->sec = bucket_of(t, g->sec);
	}
	return e;
}

/* ---- folding one document set ---- */

struct fold_state {
	struct report_tree *t;
	int side;
	/* per document, rebuilt when the document changes */
	size_t doc;
	uint32_t *loc_off; /* location -> first entry in loc_fns */
	uint32_t *loc_fns; /* function ids, outermost inlined first */
	size_t nloc_fns, caploc_fns;
	uint32_t *stack_leaf;
	const void *last_rp;
	uint32_t last_res;
};

static const char *location_type(const Otelprof__Otlp__ProfilesDictionary *d,
				 const Otelprof__Otlp__Location *l)
{
	for (size_t i = 0; i < l->n_attribute_indices; i++)
		if (!strcmp(walk_attr_key(d, l->attribute_indices[i]),
			    "profile.frame.type"))
			return walk_any_str(
				d, walk_attr_value(d, l->attribute_indices[i]));
	return "";
}

/* The functions of every location of d, named once. */
static int name_locations(struct fold_state *f,
			  const Otelprof__Otlp__ProfilesDictionary *d)
{
	static char buf[FRAME_NAME_MAX];
	size_t n = d->n_location_table;

	f->loc_off = calloc(n + 1, sizeof(uint32_t));
	f->stack_leaf = malloc((d->n_stack_table ? d->n_stack_table : 1) *
			       sizeof(uint32_t));
	if (!f->loc_off || !f->stack_leaf)
		return -ENOMEM;
	memset(f->stack_leaf, 0xff, d->n_stack_table * sizeof(uint32_t));
	f->nloc_fns = 0;
	for (size_t i = 1; i < n; i++) {
		const Otelprof__Otlp__Location *l = d->location_table[i];
		size_t lines = l->n_lines ? l->n_lines : 1;
		uint32_t type;
		int e = report_tree_intern(f->t, location_type(d, l), &type);

		if (e)
			return e;
		f->loc_off[i] = (uint32_t)f->nloc_fns;
		for (size_t k = lines; k-- > 0;) {
			struct report_fn fn = {.type = type};
			uint32_t id;

			e = report_tree_intern(
				f->t,
				frame_name(d, (int32_t)i, k, buf, sizeof(buf)),
				&fn.name);
			if (!e && k < l->n_lines) {
				const Otelprof__Otlp__Line *ln = l->lines[k];

				fn.line = ln->line;
				if (ln->function_index > 0 &&
				    (size_t)ln->function_index <
					    d->n_function_table) {
					const Otelprof__Otlp__Function *func =
						d->function_table
							[ln->function_index];

					e = report_tree_intern(
						f->t,
						otlp_str(
							d,
							func->filename_strindex),
						&fn.file);
					if (!fn.line)
						fn.line = func->start_line;
				}
			}
			if (!e)
				e = intern_fn(f->t, &fn, &id);
			if (!e)
				e = grow((void **)&f->loc_fns, &f->caploc_fns,
					 f->nloc_fns, sizeof(uint32_t));
			if (e)
				return e;
			f->loc_fns[f->nloc_fns++] = id;
		}
	}
	f->loc_off[n] = (uint32_t)f->nloc_fns;
	return 0;
}

static void fold_doc_free(struct fold_state *f)
{
	free(f->loc_off);
	free(f->stack_leaf);
	f->loc_off = NULL;
	f->stack_leaf = NULL;
}

/* The tree node of s's stack (root to leaf), LEAF_DROPPED past a cap. */
static int stack_leaf(struct fold_state *f, const struct walk_sample *s,
		      uint32_t *out)
{
	int32_t si = s->smp->stack_index; /* checked by profile_walk */
	uint32_t node = 0;

	if (f->stack_leaf[si] != LEAF_UNKNOWN) {
		*out = f->stack_leaf[si];
		return 0;
	}
	for (size_t k = s->stack->n_location_indices; k-- > 0;) {
		int32_t li = s->stack->location_indices[k];

		if (!walk_location_ok(s->d, li))
			continue;
		for (uint32_t j = f->loc_off[li]; j < f->loc_off[li + 1]; j++) {
			int e = child_node(f->t, node, f->loc_fns[j], &node);

			if (e == -ENOSPC) {
				f->stack_leaf[si] = LEAF_DROPPED;
				*out = LEAF_DROPPED;
				return 0;
			}
			if (e)
				return e;
		}
	}
	f->stack_leaf[si] = node;
	*out = node;
	return 0;
}

static void hex(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = 0;
}

/* "key=value" lines of the context attributes and the trace link. */
static int sample_ctx(struct report_tree *t, const struct walk_sample *s,
		      uint32_t *out)
{
	char buf[CTX_MAX];
	size_t len = 0;

	buf[0] = 0;
	for (size_t i = 0; i < s->smp->n_attribute_indices; i++) {
		int32_t a = s->smp->attribute_indices[i];
		const char *k = walk_attr_key(s->d, a);
		const Otelprof__Otlp__AnyValue *v = walk_attr_value(s->d, a);
		char num[32];
		const char *vs = walk_any_str(s->d, v);
		int n;

		if (!*k || !strcmp(k, "thread.id") ||
		    !strcmp(k, "thread.name") ||
		    !strcmp(k, "cpu.logical_number"))
			continue;
		if (v && v->value_case ==
				 OTELPROF__OTLP__ANY_VALUE__VALUE_INT_VALUE) {
			snprintf(num, sizeof(num), "%lld",
				 (long long)v->int_value);
			vs = num;
		}
		n = snprintf(buf + len, sizeof(buf) - len, "%.256s=%.512s\n", k,
			     vs);
		if (n < 0 || (size_t)n >= sizeof(buf) - len) {
			buf[len] = 0; /* bounded: the rest is left out */
			break;
		}
		len += (size_t)n;
	}
	if (s->link && s->link->trace_id.len == 16 && len + 80 < sizeof(buf)) {
		char tid[33], sid[17] = "";

		hex(tid, s->link->trace_id.data, 16);
		if (s->link->span_id.len == 8)
			hex(sid, s->link->span_id.data, 8);
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
					"trace_id=%s\nspan_id=%s\n", tid, sid);
	}
	return report_tree_intern(t, buf, out);
}

static int fold_sample(const struct walk_sample *s, void *ctx)
{
	struct fold_state *f = ctx;
	struct report_tree *t = f->t;
	struct report_side *side = &t->side[f->side];
	const Otelprof__Otlp__Sample *smp = s->smp;
	struct report_group g = {.side = (uint32_t)f->side};
	int e;

	if (s->doc != f->doc || !f->loc_off) {
		fold_doc_free(f);
		f->doc = s->doc;
		f->last_rp = NULL;
		e = name_locations(f, s->d);
		if (e)
			return e == -ENOSPC ? -E2BIG : e;
	}
	if (s->prof->period > 0)
		side->period_ns = s->prof->period;
	if (s->prof->time_unix_nano &&
	    (!side->start_ns || s->prof->time_unix_nano < side->start_ns))
		side->start_ns = s->prof->time_unix_nano;
	if (s->prof->time_unix_nano + s->prof->duration_nano > side->end_ns)
		side->end_ns = s->prof->time_unix_nano + s->prof->duration_nano;

	e = stack_leaf(f, s, &g.leaf);
	if (!e && g.leaf != LEAF_DROPPED)
		e = intern_thread(t, s->thread_name, s->tid, &g.thread);
	if (!e && g.leaf != LEAF_DROPPED && s->rp != f->last_rp) {
		e = intern_res(t, s->pd, s->rp, &f->last_res);
		f->last_rp = e ? NULL : s->rp;
	}
	g.res = f->last_res;
	if (!e && g.leaf != LEAF_DROPPED)
		e = sample_ctx(t, s, &g.ctx);
	if (e == -ENOSPC || g.leaf == LEAF_DROPPED) {
		t->dropped += s->weight;
		return 0;
	}
	if (e)
		return e;
	/* One group per timestamp's second; without timestamps, the
	 * profile's start. */
	for (size_t i = 0; i < smp->n_timestamps_unix_nano || i == 0; i++) {
		if (smp->n_timestamps_unix_nano) {
			g.sec = (int64_t)(smp->timestamps_unix_nano[i] /
					  1000000000u);
			g.weight =
				smp->n_values == smp->n_timestamps_unix_nano &&
						smp->values[i] > 0
					? (uint64_t)smp->values[i]
					: 1;
		} else {
			g.sec = (int64_t)(s->prof->time_unix_nano /
					  1000000000u);
			g.weight = s->weight;
		}
		e = add_group(t, &g);
		if (e == -ENOSPC)
			t->dropped += g.weight;
		else if (e)
			return e;
		else
			side->samples += g.weight;
	}
	return 0;
}

int report_tree_add(struct report_tree *t, const struct otlp_docs *docs,
		    int side, int pid)
{
	struct fold_state f = {.t = t, .side = side ? 1 : 0};
	int e = profile_walk(docs, pid, fold_sample, &f);

	fold_doc_free(&f);
	free(f.loc_fns);
	return e;
}
