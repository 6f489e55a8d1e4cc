// SPDX-License-Identifier: Apache-2.0
/*
 * `otelprof report`'s aggregation against a hand-made profile whose tree,
 * groups and counts are known: shared prefixes become one node, an inlined
 * frame its own node, timestamps split by second, values weigh, context
 * attributes and the trace link kept per group, a full group table
 * coarsens time before caps drop and count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "report_tree.h"

/* T0 = 1000 s; one sample 2 s later. Stacks (leaf first):
 * 1 alpha<-main, 2 beta<-main, 3 sys_read<-alpha<-main,
 * 4 beta inlined in alpha<-main (one location, two lines). */
static const char doc[] =
	"{\"resourceProfiles\":[{\"resource\":{\"attributes\":["
	"{\"key\":\"process.pid\",\"value\":{\"intValue\":\"42\"}},"
	"{\"key\":\"process.executable.name\",\"value\":{\"stringValue\":"
	"\"app\"}}]},"
	"\"scopeProfiles\":[{\"profiles\":[{\"timeUnixNano\":\"1000000000000\","
	"\"durationNano\":\"10000000000\",\"period\":\"10000000\","
	"\"samples\":["
	"{\"stackIndex\":1,\"attributeIndices\":[3],\"timestampsUnixNano\":["
	"\"1000000000000\",\"1000001000000\",\"1002000000000\"]},"
	"{\"stackIndex\":2,\"attributeIndices\":[4],\"timestampsUnixNano\":["
	"\"1000000000000\"]},"
	"{\"stackIndex\":3,\"attributeIndices\":[3,5],\"values\":[\"5\"]},"
	"{\"stackIndex\":4,\"attributeIndices\":[3],\"timestampsUnixNano\":["
	"\"1000000000000\"]},"
	"{\"stackIndex\":1,\"attributeIndices\":[3],\"linkIndex\":1,"
	"\"timestampsUnixNano\":[\"1000000000000\"]}"
	"]}]}]}],"
	"\"dictionary\":{"
	"\"stringTable\":[\"\",\"main\",\"alpha\",\"beta\",\"a.c\",\"sys_"
	"read\","
	"\"profile.frame.type\",\"thread.name\",\"hash.algorithm\"],"
	"\"attributeTable\":[{},"
	"{\"keyStrindex\":6,\"value\":{\"stringValue\":\"native\"}},"
	"{\"keyStrindex\":6,\"value\":{\"stringValue\":\"kernel\"}},"
	"{\"keyStrindex\":7,\"value\":{\"stringValue\":\"t1\"}},"
	"{\"keyStrindex\":7,\"value\":{\"stringValue\":\"t2\"}},"
	"{\"keyStrindex\":8,\"value\":{\"stringValue\":\"sha256\"}}],"
	"\"functionTable\":[{},{\"nameStrindex\":1,\"filenameStrindex\":4},"
	"{\"nameStrindex\":2,\"filenameStrindex\":4,\"startLine\":\"10\"},"
	"{\"nameStrindex\":3},{\"nameStrindex\":5}],"
	"\"locationTable\":[{},"
	"{\"lines\":[{\"functionIndex\":1,\"line\":\"20\"}],"
	"\"attributeIndices\":[1]},"
	"{\"lines\":[{\"functionIndex\":2}],\"attributeIndices\":[1]},"
	"{\"lines\":[{\"functionIndex\":3}],\"attributeIndices\":[1]},"
	"{\"lines\":[{\"functionIndex\":4}],\"attributeIndices\":[2]},"
	"{\"lines\":[{\"functionIndex\":3},{\"functionIndex\":2}],"
	"\"attributeIndices\":[1]}],"
	"\"stackTable\":[{},{\"locationIndices\":[2,1]},"
	"{\"locationIndices\":[3,1]},{\"locationIndices\":[4,2,1]},"
	"{\"locationIndices\":[5,1]}],"
	"\"linkTable\":[{},{\"traceId\":\"0102030405060708090a0b0c0d0e0f10\","
	"\"spanId\":\"1112131415161718\"}]"
	"}}\n";

static void parse(struct otlp_docs *d)
{
	char err[256] = "";
	int e = otlp_docs_parse((const uint8_t *)doc, sizeof(doc) - 1, d, err,
				sizeof(err));

	if (e)
		fail_msg("parse: %s", err);
}

static const char *fn_name(const struct report_tree *t, uint32_t node)
{
	return t->strs[t->fns[t->nodes[node].fn].name];
}

/* The node for the path of names from the root, or UINT32_MAX. */
static uint32_t find_path(const struct report_tree *t, const char *const *path,
			  size_t n)
{
	uint32_t cur = 0;

	for (size_t k = 0; k < n; k++) {
		uint32_t next = UINT32_MAX;

		for (size_t i = 1; i < t->nnode; i++)
			if (t->nodes[i].parent == cur &&
			    !strcmp(fn_name(t, (uint32_t)i), path[k]))
				next = (uint32_t)i;
		if (next == UINT32_MAX)
			return next;
		cur = next;
	}
	return cur;
}

static uint64_t weight_at(const struct report_tree *t, uint32_t leaf, int side)
{
	uint64_t w = 0;

	for (size_t i = 0; i < t->ngroup; i++)
		if (t->groups[i].leaf == leaf &&
		    t->groups[i].side == (uint32_t)side)
			w += t->groups[i].weight;
	return w;
}

static void tree_and_groups(void **state)
{
	struct report_tree t;
	struct otlp_docs d;
	const char *ma[] = {"main", "alpha"}, *mb[] = {"main", "beta"},
		   *mas[] = {"main", "alpha", "sys_read"},
		   *mab[] = {"main", "alpha", "beta"};
	uint32_t n_ma, n_mb, n_mas, n_mab;
	size_t with_link = 0, with_attr = 0;

	(void)state;
	parse(&d);
	assert_int_equal(report_tree_init(&t, 0, 0), 0);
	assert_int_equal(report_tree_add(&t, &d, 0, 0), 0);

	/* root, main, alpha, beta, sys_read, beta under alpha */
	assert_int_equal(t.nnode, 6);
	/* main, alpha, beta (the inlined line is the same function), sys_read
	 */
	assert_int_equal(t.nfn, 4);
	n_ma = find_path(&t, ma, 2);
	n_mb = find_path(&t, mb, 2);
	n_mas = find_path(&t, mas, 3);
	n_mab = find_path(&t, mab, 3);
	assert_int_not_equal(n_ma, UINT32_MAX);
	assert_int_not_equal(n_mb, UINT32_MAX);
	assert_int_not_equal(n_mas, UINT32_MAX);
	assert_int_not_equal(n_mab, UINT32_MAX);
	/* every parent comes before its children (the page relies on it) */
	for (size_t i = 1; i < t.nnode; i++)
		assert_true(t.nodes[i].parent < i);

	assert_int_equal(weight_at(&t, n_ma, 0), 4); /* 3 + 1 linked */
	assert_int_equal(weight_at(&t, n_mb, 0), 1);
	assert_int_equal(weight_at(&t, n_mas, 0), 5); /* values[0] */
	assert_int_equal(weight_at(&t, n_mab, 0), 1);
	assert_int_equal(t.side[0].samples, 11);
	assert_int_equal(t.side[0].period_ns, 10000000);
	assert_int_equal(t.side[0].end_ns - t.side[0].start_ns, 10000000000ull);
	assert_int_equal(t.dropped, 0);
	/* alpha<-main: second 1000 (t1, two samples), second 1002 (t1),
	 * second 1000 with the link; the others one group each */
	assert_int_equal(t.ngroup, 6);
	for (size_t i = 0; i < t.ngroup; i++) {
		const struct report_group *g = &t.groups[i];
		const char *ctx = t.strs[g->ctx];

		if (g->leaf == n_ma && !g->ctx)
			assert_int_equal(g->weight, g->sec == 1000 ? 2 : 1);
		if (strstr(ctx, "trace_id=0102030405060708090a0b0c0d0e0f10\n"
				"span_id=1112131415161718\n"))
			with_link++;
		if (!strcmp(ctx, "hash.algorithm=sha256\n")) {
			assert_int_equal(g->leaf, n_mas);
			with_attr++;
		}
		/* thread.name is the thread, not a context attribute */
		assert_null(strstr(ctx, "thread.name"));
		assert_string_equal(t.strs[t.threads[g->thread].name],
				    g->leaf == n_mb ? "t2" : "t1");
		assert_string_equal(t.strs[t.res[g->res][REPORT_RES_PID]],
				    "42");
		assert_string_equal(t.strs[t.res[g->res][REPORT_RES_EXE]],
				    "app");
	}
	assert_int_equal(with_link, 1);
	assert_int_equal(with_attr, 1);
	/* frame types and file:line */
	for (size_t f = 0; f < t.nfn; f++) {
		const char *name = t.strs[t.fns[f].name];

		assert_string_equal(t.strs[t.fns[f].type],
				    strcmp(name, "sys_read") ? "native"
							     : "kernel");
		if (!strcmp(name, "main")) {
			assert_string_equal(t.strs[t.fns[f].file], "a.c");
			assert_int_equal(t.fns[f].line, 20);
		}
		if (!strcmp(name, "alpha"))
			assert_int_equal(t.fns[f].line, 10); /* start_line */
	}

	/* The same file as the NEW side of a diff: same nodes, own groups. */
	assert_int_equal(report_tree_add(&t, &d, 1, 0), 0);
	assert_int_equal(t.nnode, 6);
	assert_int_equal(t.ngroup, 12);
	assert_int_equal(t.side[1].samples, 11);
	assert_int_equal(weight_at(&t, n_mas, 1), 5);
	/* --pid of another process: nothing more */
	assert_int_equal(report_tree_add(&t, &d, 1, 7), 0);
	assert_int_equal(t.side[1].samples, 11);
	report_tree_free(&t);
	otlp_docs_free(&d);
}

static void caps_drop_and_count(void **state)
{
	struct report_tree t;
	struct otlp_docs d;

	(void)state;
	parse(&d);
	/* 4 nodes: root, main, alpha, beta; the stacks through sys_read and
	 * the inlined beta need a fifth */
	assert_int_equal(report_tree_init(&t, 4, 0), 0);
	assert_int_equal(report_tree_add(&t, &d, 0, 0), 0);
	assert_int_equal(t.nnode, 4);
	assert_int_equal(t.dropped, 6);
	assert_int_equal(t.side[0].samples, 5);
	report_tree_free(&t);

	/* 5 groups for 6: the time resolution halves until alpha<-main's
	 * seconds 1000 and 1002 share a bucket (4 s); nothing dropped */
	assert_int_equal(report_tree_init(&t, 0, 5), 0);
	assert_int_equal(report_tree_add(&t, &d, 0, 0), 0);
	assert_int_equal(t.bucket_s, 4);
	assert_int_equal(t.ngroup, 5);
	assert_int_equal(t.dropped, 0);
	assert_int_equal(t.side[0].samples, 11);
	for (size_t i = 0; i < t.ngroup; i++)
		assert_int_equal(t.groups[i].sec, 1000);
	report_tree_free(&t);

	/* 2 groups: no time resolution makes room (the groups differ in
	 * more than time); the rest of the samples counted as dropped */
	assert_int_equal(report_tree_init(&t, 0, 2), 0);
	assert_int_equal(report_tree_add(&t, &d, 0, 0), 0);
	assert_int_equal(t.ngroup, 2);
	assert_int_equal(t.side[0].samples + t.dropped, 11);
	assert_true(t.dropped > 0);
	report_tree_free(&t);
	otlp_docs_free(&d);
}

/* The Collector file exporter's `format: proto`: two requests, each after
 * its 4-byte big-endian size, fold as two documents. */
static void length_prefixed_batches(void **state)
{
	struct report_tree t;
	struct otlp_docs d, two;
	size_t n, len;
	uint8_t *buf;
	char err[256] = "";

	(void)state;
	parse(&d);
	n = otelprof__otlp__profiles_data__get_packed_size(d.v[0]);
	len = 2 * (4 + n);
	buf = malloc(len);
	assert_non_null(buf);
	for (int k = 0; k < 2; k++) {
		uint8_t *p = buf + (size_t)k * (4 + n);

		p[0] = (uint8_t)(n >> 24);
		p[1] = (uint8_t)(n >> 16);
		p[2] = (uint8_t)(n >> 8);
		p[3] = (uint8_t)n;
		otelprof__otlp__profiles_data__pack(d.v[0], p + 4);
	}
	assert_int_equal(otlp_docs_parse(buf, len, &two, err, sizeof(err)), 0);
	assert_int_equal(two.n, 2);
	assert_int_equal(report_tree_init(&t, 0, 0), 0);
	assert_int_equal(report_tree_add(&t, &two, 0, 0), 0);
	assert_int_equal(t.side[0].samples, 22);
	assert_int_equal(t.nnode, 6);
	report_tree_free(&t);
	otlp_docs_free(&two);
	/* a size past the end: refused, not read beyond */
	buf[4 + n + 3]++;
	assert_int_not_equal(otlp_docs_parse(buf, len, &two, err, sizeof(err)),
			     0);
	free(buf);
	otlp_docs_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tree_and_groups),
		cmocka_unit_test(caps_drop_and_count),
		cmocka_unit_test(length_prefixed_batches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
