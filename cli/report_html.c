// SPDX-License-Identifier: Apache-2.0
#include "report_html.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>

#include "report_page.h" /* generated: the page's files as byte arrays */

void report_json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '<': /* never "</script>" inside the element */
		case '>':
		case '&':
			fprintf(out, "\\u%04x", *p);
			break;
		default:
			if (*p < 0x20)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

static void u32_array(FILE *out, const char *name, const void *base, size_t n,
		      size_t stride, size_t off)
{
	fprintf(out, "\"%s\":[", name);
	for (size_t i = 0; i < n; i++) {
		uint32_t v = *(const uint32_t *)((const char *)base +
						 i * stride + off);

		fprintf(out, i ? ",%" PRIu32 : "%" PRIu32, v);
	}
	fputc(']', out);
}

#define FIELD(arr, n, type, field)                                             \
	(arr), (n), sizeof(type), offsetof(type, field)

static void write_data(FILE *out, const struct report_tree *t,
		       const struct report_meta *m)
{
	int64_t t0 = INT64_MAX;

	fputs("{\"version\":1,\"title\":", out);
	report_json_str(out, m->title);
	fprintf(out, ",\"diff\":%s,\"strings\":[", m->diff ? "true" : "false");
	for (size_t i = 0; i < t->nstr; i++) {
		if (i)
			fputc(',', out);
		report_json_str(out, t->strs[i]);
	}
	fputs("],\"fn\":{", out);
	u32_array(out, "name", FIELD(t->fns, t->nfn, struct report_fn, name));
	fputc(',', out);
	u32_array(out, "file", FIELD(t->fns, t->nfn, struct report_fn, file));
	fputc(',', out);
	u32_array(out, "type", FIELD(t->fns, t->nfn, struct report_fn, type));
	fputs(",\"line\":[", out);
	for (size_t i = 0; i < t->nfn; i++)
		fprintf(out, i ? ",%lld" : "%lld", (long long)t->fns[i].line);
	/* the root's parent and function are written as 0: never read */
	fputs("]},\"node\":{\"parent\":[0", out);
	for (size_t i = 1; i < t->nnode; i++)
		fprintf(out, ",%" PRIu32, t->nodes[i].parent);
	fputs("],\"fn\":[0", out);
	for (size_t i = 1; i < t->nnode; i++)
		fprintf(out, ",%" PRIu32, t->nodes[i].fn);
	fputs("]},\"thread\":{", out);
	u32_array(out, "name",
		  FIELD(t->threads, t->nthread, struct report_thread, name));
	fputs(",\"tid\":[", out);
	for (size_t i = 0; i < t->nthread; i++)
		fprintf(out, i ? ",%lld" : "%lld",
			(long long)t->threads[i].tid);
	fputs("]},\"resKeys\":[", out);
	for (int k = 0; k < REPORT_RES_NKEYS; k++) {
		if (k)
			fputc(',', out);
		report_json_str(out, report_res_keys[k]);
	}
	fputs("],\"res\":[", out);
	for (size_t i = 0; i < t->nres; i++) {
		fputs(i ? ",[" : "[", out);
		for (int k = 0; k < REPORT_RES_NKEYS; k++)
			fprintf(out, k ? ",%" PRIu32 : "%" PRIu32,
				t->res[i][k]);
		fputc(']', out);
	}
	for (size_t i = 0; i < t->ngroup; i++)
		if (t->groups[i].sec < t0)
			t0 = t->groups[i].sec;
	if (!t->ngroup)
		t0 = 0;
	fprintf(out, "],\"t0\":%lld,\"bucketSeconds\":%lld,\"group\":{",
		(long long)t0, (long long)t->bucket_s);
	u32_array(out, "leaf",
		  FIELD(t->groups, t->ngroup, struct report_group, leaf));
	fputc(',', out);
	u32_array(out, "thread",
		  FIELD(t->groups, t->ngroup, struct report_group, thread));
	fputc(',', out);
	u32_array(out, "res",
		  FIELD(t->groups, t->ngroup, struct report_group, res));
	fputc(',', out);
	u32_array(out, "ctx",
		  FIELD(t->groups, t->ngroup, struct report_group, ctx));
	fputc(',', out);
	u32_array(out, "side",
		  FIELD(t->groups, t->ngroup, struct report_group, side));
	fputs(",\"t\":[", out);
	for (size_t i = 0; i < t->ngroup; i++)
		fprintf(out, i ? ",%lld" : "%lld",
			(long long)(t->groups[i].sec - t0));
	fputs("],\"w\":[", out);
	for (size_t i = 0; i < t->ngroup; i++)
		fprintf(out, i ? ",%" PRIu64 : "%" PRIu64, t->groups[i].weight);
	fputs("]},\"sides\":[", out);
	for (int s = 0; s < (m->diff ? 2 : 1); s++) {
		const struct report_side *sd = &t->side[s];
		int64_t period = sd->period_ns > 0 ? sd->period_ns
						   : REPORT_DEFAULT_PERIOD_NS;
		uint64_t span = sd->end_ns > sd->start_ns
					? sd->end_ns - sd->start_ns
					: 0;

		fprintf(out,
			"%s{\"samples\":%" PRIu64 ",\"periodNs\":%lld,"
			"\"seconds\":%.3f,\"coreHoursPerSample\":%.9g,"
			"\"files\":[",
			s ? "," : "", sd->samples, (long long)period,
			(double)span / 1e9,
			report_core_hours_per_sample(period, span));
		for (size_t f = 0; f < m->nfiles[s]; f++) {
			if (f)
				fputc(',', out);
			report_json_str(out, m->files[s][f]);
		}
		fputs("]}", out);
	}
	fprintf(out,
		"],\"cost\":{\"wattsPerCore\":%.9g,\"pue\":%.9g,"
		"\"co2KgPerKwh\":%.9g,\"costPerCoreHour\":%.9g,"
		"\"kwhPerCoreHour\":%.9g,\"co2KgPerCoreHour\":%.9g},"
		"\"dropped\":%" PRIu64 "}",
		m->coeffs.watts_per_core, m->coeffs.pue,
		m->coeffs.co2_kg_per_kwh, m->coeffs.cost_per_core_hour,
		report_kwh_per_core_hour(&m->coeffs),
		report_co2_kg_per_core_hour(&m->coeffs), t->dropped);
}

int report_html_write(FILE *out, const struct report_tree *t,
		      const struct report_meta *m)
{
	fputs("<!doctype html>\n<html lang=\"en\"><head><meta "
	      "charset=\"utf-8\">\n<meta "
	      "http-equiv=\"Content-Security-Policy\" "
	      "content=\"default-src 'none'; style-src 'unsafe-inline'; "
	      "script-src 'unsafe-inline'; img-src data:\">\n<title>",
	      out);
	for (const char *p = m->title; *p; p++) {
		if (*p == '<')
			fputs("&lt;", out);
		else if (*p == '&')
			fputs("&amp;", out);
		else
			fputc(*p, out);
	}
	fputs("</title>\n<style>\n", out);
	fwrite(report_css, 1, report_css_len, out);
	fputs("</style></head>\n<body>\n", out);
	fwrite(body_html, 1, body_html_len, out);
	fputs("<script id=\"report-data\" type=\"application/json\">", out);
	write_data(out, t, m);
	fputs("</script>\n<script>\n", out);
	fwrite(report_js, 1, report_js_len, out);
	fputs("</script>\n</body></html>\n", out);
	return ferror(out) ? -EIO : 0;
}
