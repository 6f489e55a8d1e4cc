/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data of `otelprof report`: every input sample folded into one call
 * tree (nodes = (parent, function), node 0 the root, a parent always
 * before its children) and into sample groups that keep what the page
 * filters on: the stack's leaf node, the thread, the resource, the context
 * attributes and trace link, the second the sample was taken, and which
 * side of a diff it came from. Samples equal in all of these are one group
 * with a weight, so a 1M-sample recording of a few hundred stacks stays a
 * few thousand groups. Strings are interned once.
 */
#ifndef OTELPROF_CLI_REPORT_TREE_H
#define OTELPROF_CLI_REPORT_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "otlp_input.h"
#include "util/idxmap.h"

/* Defaults of the caps (memory stays bounded whatever the input). */
#define REPORT_MAX_NODES    (2u << 20)
#define REPORT_MAX_GROUPS   (4u << 20)
#define REPORT_MAX_STRINGS  (4u << 20)
#define REPORT_MAX_BUCKET_S (1 << 16) /* 18 h */

/* Resource attributes the page filters on, in this order. */
enum report_res_key {
	REPORT_RES_HOST,
	REPORT_RES_SERVICE,
	REPORT_RES_CONTAINER,
	REPORT_RES_EXE,
	REPORT_RES_PID,
	REPORT_RES_NKEYS
};
extern const char *const report_res_keys[REPORT_RES_NKEYS];

struct report_fn {
	uint32_t name, file, type; /* string ids */
	int64_t line;		   /* first known line, 0: unknown */
};

struct report_node {
	uint32_t parent; /* UINT32_MAX for the root */
	uint32_t fn;	 /* UINT32_MAX for the root */
};

struct report_group {
	/* ctx: string id of the sample's context attributes and trace link,
	 * "key=value" lines; 0 (the empty string) when it has none. */
	uint32_t leaf, thread, res, ctx;
	int64_t sec; /* unix seconds, a multiple of bucket_s */
	uint32_t side;
	uint64_t weight;
};

struct report_thread {
	uint32_t name; /* string id */
	int64_t tid;
};

struct report_side {
	uint64_t samples;
	int64_t period_ns;	   /* last period seen, 0: none */
	uint64_t start_ns, end_ns; /* the profiles' time span */
};

struct report_tree {
	char **strs;
	size_t nstr, capstr;
	struct idxmap str_ix;

	struct report_fn *fns;
	size_t nfn, capfn;
	struct idxmap fn_ix;

	struct report_node *nodes;
	size_t nnode, capnode;
	struct idxmap node_ix;

	struct report_thread *threads;
	size_t nthread, capthread;
	struct idxmap thread_ix;

	uint32_t (*res)[REPORT_RES_NKEYS]; /* string ids */
	size_t nres, capres;
	struct idxmap res_ix;

	struct report_group *groups;
	size_t ngroup, capgroup;
	struct idxmap group_ix;

	struct report_side side[2];
	uint64_t dropped; /* samples past a cap */
	/* Time resolution of the groups: 1 s, doubled (groups merged) each
	 * time the groups reach their cap, up to REPORT_MAX_BUCKET_S; only
	 * then are samples dropped. */
	int64_t bucket_s;
	size_t max_nodes, max_groups, max_strings;
};

/* Caps of 0 take the defaults above. */
int report_tree_init(struct report_tree *t, size_t max_nodes,
		     size_t max_groups);
void report_tree_free(struct report_tree *t);

/* Fold every sample of docs (of process pid when pid > 0) in, counted on
 * side 0 (base, or the only one) or 1 (new). 0 or a negative errno. */
int report_tree_add(struct report_tree *t, const struct otlp_docs *docs,
		    int side, int pid);

/* Interned string id of s (id 0 is ""). */
int report_tree_intern(struct report_tree *t, const char *s, uint32_t *out);

#endif
