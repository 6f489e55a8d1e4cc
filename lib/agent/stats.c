// SPDX-License-Identifier: Apache-2.0
/*
 * otelprof_stats: the counters of every stage, in one struct. Which field
 * comes from which module's counters is declared in stats_fields.def, with
 * the field; this file only expands it.
 */
#include <stddef.h>

#include "symbolize/demangle.h"
#include "symbolize/jit_process.h"
#include "agent/agent.h"

/*
 * The public header keeps the struct written out (one self-contained
 * header for users); the list must describe it exactly: same fields, same
 * types, same order and offsets, nothing more. A struct built from the list
 * is compared with it field by field.
 */
struct stats_from_list {
	size_t sz;
#define STATS_FIELD(name, type, unit, desc, source, line, metric) type name;
#include "agent/stats_fields.def"
};

_Static_assert(sizeof(struct stats_from_list) == sizeof(struct otelprof_stats),
	       "otelprof_stats has fields stats_fields.def does not list");
#define STATS_FIELD(name, type, unit, desc, source, line, metric)              \
	_Static_assert(offsetof(struct stats_from_list, name) ==               \
			       offsetof(struct otelprof_stats, name),          \
		       "otelprof_stats." #name                                 \
		       ": not where stats_fields.def puts it");                \
	_Static_assert(                                                        \
		__builtin_types_compatible_p(                                  \
			__typeof__(((struct otelprof_stats *)0)->name), type), \
		"otelprof_stats." #name                                        \
		": not of its type in stats_fields.def");
#include "agent/stats_fields.def"

/* JIT symbols are held per process, outside the file cache. */
static uint64_t jit_memory(const struct process_table *t)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < t->nslots; i++)
		if (t->procs[i])
			sum += jit_process_memory(t->procs[i]->jit);
	return sum;
}

static uint64_t kernel_fallbacks(struct otelprof *p)
{
	uint32_t frames;

	return bpf_sampler_fallbacks(p->sampler, &frames);
}

static uint64_t max_frames(struct otelprof *p)
{
	uint32_t frames;

	bpf_sampler_fallbacks(p->sampler, &frames);
	return frames;
}

void agent_stats(struct otelprof *p, struct otelprof_stats *s)
{
	/* The names the sources in stats_fields.def use. */
	const struct agent_counters *a = &p->counters;
	const struct context_counters *ctx = &p->context.counters;
	struct runtime_counters rt_sum;
	const struct runtime_counters *rt = &rt_sum;
	const struct process_table_counters *pt = &p->procs.counters;
	const struct file_cache_counters *fc = &p->symfiles.counters;
	const struct debuginfod_counters *dbgd = &p->symfiles.dbgd.counters;
	const struct unwind_counters *u = &p->unwinder.counters;
	const struct unwind_maps_counters *um = &p->unwinder.maps.counters;
	const struct symbolizer_counters *sy = &p->symbolizer.counters;
#define K(x) bpf_sampler_counter(p->sampler, OTELPROF_CNT_##x)

	agent_runtimes_counters(p, &rt_sum);

#define STATS_FIELD(name, type, unit, desc, source, line, metric)              \
	s->name = (source);
#include "agent/stats_fields.def"
#undef K
}
