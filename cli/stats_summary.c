// SPDX-License-Identifier: Apache-2.0
/*
 * The summary lines and the fields each one prints come from
 * lib/agent/stats_fields.def, so a new counter reaches the summary by
 * naming its line there. A line's text holds {field}, {a+b} (a sum) or
 * {field/N} (a quotient) where values go.
 */
#include "stats_summary.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum summary_line_id {
	STATS_LINE_NONE,
#define STATS_LINE(id, always, text) STATS_LINE_##id,
#include "agent/stats_fields.def"
};

static const struct summary_field {
	const char *name;
	size_t off, size;
	enum summary_line_id line;
} fields[] = {
#define STATS_FIELD(name, type, unit, desc, source, line, metric)              \
	{#name, offsetof(struct otelprof_stats, name),                         \
	 sizeof(((struct otelprof_stats *)0)->name), STATS_LINE_##line},
#include "agent/stats_fields.def"
};

static const struct summary_line {
	enum summary_line_id id;
	bool always;
	const char *text;
} lines[] = {
#define STATS_LINE(id, always, text) {STATS_LINE_##id, always, text},
#include "agent/stats_fields.def"
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t field_value(const struct otelprof_stats *st,
			    const struct summary_field *f)
{
	const char *at = (const char *)st + f->off;

	if (f->size == sizeof(uint32_t)) {
		uint32_t x;

		memcpy(&x, at, sizeof(x));
		return x;
	}
	uint64_t x;

	memcpy(&x, at, sizeof(x));
	return x;
}

static const struct summary_field *field_named(const char *name, size_t len)
{
	for (size_t i = 0; i < COUNT(fields); i++)
		if (strlen(fields[i].name) == len &&
		    !memcmp(fields[i].name, name, len))
			return &fields[i];
	return NULL;
}

/* The value of what is between the braces ([p, end)): fields joined by
 * '+', optionally "/N"; false if a name is not a field. */
static bool placeholder_value(const struct otelprof_stats *st, const char *p,
			      const char *end, uint64_t *out)
{
	uint64_t sum = 0, div = 1;

	while (p < end) {
		const char *stop = p;

		while (stop < end && *stop != '+' && *stop != '/')
			stop++;
		const struct summary_field *f =
			field_named(p, (size_t)(stop - p));

		if (!f)
			return false;
		sum += field_value(st, f);
		if (stop < end && *stop == '/') {
			div = strtoull(stop + 1, NULL, 10);
			break;
		}
		p = stop < end ? stop + 1 : end;
	}
	*out = div > 1 ? sum / div : sum;
	return true;
}

static void put_line(FILE *out, const struct otelprof_stats *st,
		     const char *text)
{
	for (const char *c = text; *c; c++) {
		const char *end = c[0] == '{' ? strchr(c, '}') : NULL;
		uint64_t v;

		if (end && placeholder_value(st, c + 1, end, &v)) {
			fprintf(out, "%llu", (unsigned long long)v);
			c = end;
		} else {
			fputc(*c, out);
		}
	}
}

void stats_summary_print(FILE *out, const struct otelprof_stats *st)
{
	for (size_t i = 0; i < COUNT(lines); i++) {
		bool any = lines[i].always;

		for (size_t k = 0; k < COUNT(fields) && !any; k++)
			any = fields[k].line == lines[i].id &&
			      field_value(st, &fields[k]) != 0;
		if (!any)
			continue;
		fputs("otelprof: ", out);
		put_line(out, st, lines[i].text);
		fputc('\n', out);
	}
}
