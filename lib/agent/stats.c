// SPDX-License-Identifier: Apache-2.0
/* otelprof_stats: the counters of every stage, in one struct. */
#include "symbolize/demangle.h"
#include "symbolize/jit_process.h"
#include "agent/agent.h"

/* JIT symbols are held per process, outside the file cache. */
static uint64_t jit_memory(const struct process_table *t)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < t->nslots; i++)
		if (t->procs[i])
			sum += jit_process_memory(t->procs[i]->jit);
	return sum;
}

void agent_stats(struct otelprof *p, struct otelprof_stats *s)
{
	const struct agent_counters *a = &p->counters;
	const struct context_counters *ctx = &p->context.counters;
	const struct interp_counters *in = &p->interp.counters;
	const struct hotspot_counters *jvm = &p->jvm.counters;
	const struct process_table_counters *pt = &p->procs.counters;
	const struct file_cache_counters *fc = &p->symfiles.counters;
	const struct unwind_counters *u = &p->unwinder.counters;
	const struct unwind_maps_counters *um = &p->unwinder.maps.counters;
	const struct symbolizer_counters *sy = &p->symbolizer.counters;

	s->samples_received = a->samples_received;
	s->samples_lost = bpf_sampler_counter(p->sampler, OTELPROF_CNT_LOST);
	s->samples_idle = bpf_sampler_counter(p->sampler, OTELPROF_CNT_IDLE);
	s->samples_encoded = a->samples_encoded;
	s->kernel_stack_errors =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_KSTACK_ERR);
	s->user_stack_errors =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_USTACK_ERR);
	s->proc_scan_errors = pt->scan_errors;
	s->files_malformed = fc->malformed;
	s->files_loaded = fc->loaded;
	s->processes_tracked = process_table_count(&p->procs);
	s->symbol_memory_bytes =
		fc->memory + kallsyms_memory(&p->ksyms) + jit_memory(&p->procs);
	s->polls = a->polls;
	s->bytes_encoded = a->bytes_encoded;
	s->unwind_complete =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_UNWIND_COMPLETE);
	s->unwind_truncated =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_UNWIND_TRUNCATED);
	/* Walks that stopped short (unwind_pending too): the kernel's,
	 * and those of the stack copies unwound in userspace. */
	s->unwind_err_rule =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_UNWIND_ERR_RULE) +
		u->copy_stops[OTELPROF_CNT_UNWIND_ERR_RULE];
	s->unwind_err_read =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_UNWIND_ERR_READ) +
		u->copy_stops[OTELPROF_CNT_UNWIND_ERR_READ];
	s->unwind_err_loop =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_UNWIND_ERR_LOOP) +
		u->copy_stops[OTELPROF_CNT_UNWIND_ERR_LOOP];
	s->unwind_no_mapping =
		bpf_sampler_counter(p->sampler,
				    OTELPROF_CNT_UNWIND_NO_MAPPING) +
		u->copy_stops[OTELPROF_CNT_UNWIND_NO_MAPPING];
	s->stack_copies =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_STACK_COPIES);
	s->unwind_files = um->files;
	s->unwind_rows = um->rows;
	s->unwind_map_bytes = um->bytes;
	s->unwind_table_errors =
		u->table_errors + u->load_errors + um->load_errors;
	s->unwind_build_ns = u->build_ns;
	s->unwind_pending =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_UNWIND_PENDING) +
		u->copy_stops[OTELPROF_CNT_UNWIND_PENDING];
	s->ctx_samples = bpf_sampler_counter(p->sampler, OTELPROF_CNT_CTX_READ);
	s->ctx_read_errors =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_CTX_ERR);
	s->ctx_tls_resolved = ctx->tls_resolved;
	s->ctx_process_reads = ctx->pctx_read;
	s->ctx_process_errors = ctx->pctx_errors + ctx->map_errors;
	s->ctx_attrs_dropped = a->ctx_attrs_dropped;
	s->pid_reuses = pt->pid_reuses;
	s->task_events_lost =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_TASK_EVENTS_LOST);
	s->maps_changed_events =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_MAPS_CHANGED);
	s->maps_notify_held =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_NOTIFY_HELD);
	s->rescans_asked = pt->rescans_asked;
	s->rescans_held = pt->rescans_held;
	s->ctx_found_by_probe = ctx->pctx_probed;
	s->drain_max_hold_ns = a->drain_max_hold_ns;
	s->unwind_refused_process = u->refused_process;
	s->unwind_refused_host = u->refused_host;
	s->samples_dropped_at_stop = a->dropped_at_stop;
	s->add_errors = a->add_errors;
	s->events_malformed = a->events_malformed;
	/* JVMs count as interpreters here */
	s->interp_processes = in->found + jvm->found;
	s->interp_debug_offsets = in->debug_offsets;
	s->interp_unknown_versions = in->unknown_versions + jvm->unknown;
	s->interp_samples =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_INTERP_SAMPLES);
	s->interp_frame_errors =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_INTERP_ERR) +
		in->map_errors + jvm->map_errors;
	s->interp_code_errors = in->read_errors + in->over_budget +
				jvm->read_errors + jvm->stale_frames +
				jvm->inline_errors;
	s->jit_frames = sy->jit_frames;
	s->jit_bad_entries = sy->jit.bad_entries;
	s->jit_files_refused = sy->jit.refused;
	s->jit_over_budget = sy->jit.over_budget;
	s->files_refused = pt->files_refused;
	s->files_over_budget = fc->over_budget;
	s->budget_evictions = fc->evictions;
	s->budget_reloads = fc->reloads;
	s->debuginfod_lookups = p->symfiles.dbgd.counters.lookups;
	s->debuginfod_hits = p->symfiles.dbgd.counters.hits;
	s->debuginfod_failures = p->symfiles.dbgd.counters.failures;
	s->debuginfod_refused = p->symfiles.dbgd.counters.refused;
	s->demangle_refused = symbol_demangle_refused();
	s->unwind_over_budget = u->over_budget;
	s->budget_used_bytes = file_cache_budget_used(&p->symfiles);
	s->ctx_attrs_denied = ctx->pctx_denied;
	s->cpus_onlined = bpf_sampler_cpus_onlined(p->sampler);
	{
		uint32_t frames;

		s->kernel_fallbacks =
			bpf_sampler_fallbacks(p->sampler, &frames);
		s->max_frames = frames;
	}
	s->walk_programs =
		bpf_sampler_counter(p->sampler, OTELPROF_CNT_WALK_CHAINED);
	s->unwind_procs_errors = um->procs_errors;
	s->unwind_rows_unrepresentable =
		u->rows_unrepresentable + um->rows_unrepresentable;
	s->unwind_big_refused = um->big_refused;
	s->file_loads_retried = fc->loads_retried;
	s->apm_channels = p->context.apm.channels;
	s->apm_messages_sent = p->context.apm.sent;
	s->apm_messages_dropped = p->context.apm.dropped;
	s->apm_sockets_refused = p->context.apm.refused;
}
