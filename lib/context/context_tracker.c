// SPDX-License-Identifier: Apache-2.0
#include "context/context_tracker.h"
#include "filestore/file_cache.h"
#include "util/debug_log.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/tls_location.h"
#include "process/proc_file.h"

#define TICK_NS		 (100ull * 1000 * 1000)
#define ACTIVE_WINDOW_NS (5000ull * 1000 * 1000)

static struct process_ctx_state *state(struct process *p)
{
	if (!p->ctx)
		p->ctx = calloc(1, sizeof(*p->ctx));
	return p->ctx;
}

/* Something of one process is due at t: the tick walks then. */
static void due_at(struct context_tracker *ct, uint64_t t)
{
	if (t < ct->next_scan_ns)
		ct->next_scan_ns = t;
}

static bool has_location(const struct otelprof_bpf_ctx_proc *b)
{
	for (int i = 0; i < OTELPROF_CTX_LOCS; i++)
		if (b->loc[i].kind != OTELPROF_TLS_NONE)
			return true;
	return false;
}

static void push(struct context_tracker *ct, struct process *p)
{
	struct process_ctx_state *st = p->ctx;

	if (ct->ctx_procs_fd < 0)
		return;
	if (has_location(&st->bpf)) {
		if (bpf_map_update_elem(ct->ctx_procs_fd, &p->pid, &st->bpf,
					BPF_ANY))
			ct->counters.map_errors++;
		else
			st->in_kernel = true;
	} else if (st->in_kernel) {
		bpf_map_delete_elem(ct->ctx_procs_fd, &p->pid);
		st->in_kernel = false;
	}
}

/* Where this process's context variables are, from its mapped files. */
static void resolve_tls(struct context_tracker *ct, struct process *p)
{
	struct otelprof_bpf_ctx_proc nb;
	struct process_ctx_state *st;
	const struct elf_file *prev = NULL;
	uint64_t elastic = 0;
	bool found = false;

	memset(&nb, 0, sizeof(nb));
	for (size_t i = 0; i < p->maps.n; i++) {
		struct proc_mapping *m = &p->maps.v[i];
		/* Resolved by the agent before this sync (a file left for a
		 * later slice: looked at when its process is synced again). */
		struct elf_file *f = file_cache_of(ct->files, m->file);
		const struct tls_symbols *ts;
		uint64_t bias;

		if (!f || f == prev || !f->sym.tls.any)
			continue;
		prev = f;
		ts = &f->sym.tls;
		if (!file_mapping_bias(m, f, &bias))
			continue;
		found = true;
		if (ts->elastic_storage_vaddr && !elastic)
			elastic = ts->elastic_storage_vaddr + bias;
		for (int fmt = 0; fmt < TLS_CTX_FORMATS; fmt++) {
			struct otelprof_tls_loc loc;
			bool is_main;

			if (ts->sym[fmt].access == TLS_ACCESS_NONE ||
			    nb.loc[fmt].kind != OTELPROF_TLS_NONE)
				continue;
			is_main = p->exe_path && m->path &&
				  !strcmp(m->path, p->exe_path);
			if (tls_location_of(&ts->sym[fmt], bias, is_main, &loc))
				continue;
			loc.format = fmt == TLS_CTX_OTEL_V1
					     ? OTELPROF_CTX_OTEL_V1
					     : OTELPROF_CTX_ELASTIC_V1;
			nb.loc[fmt] = loc;
		}
	}
	if (!found && !p->ctx)
		return; /* the common case: nothing to correlate */
	st = state(p);
	if (!st)
		return;
	st->elastic_storage = elastic;
	if (!memcmp(&nb, &st->bpf, sizeof(nb)) &&
	    (st->in_kernel || !has_location(&nb)))
		return;
	for (int i = 0; i < OTELPROF_CTX_LOCS; i++)
		if (nb.loc[i].kind != OTELPROF_TLS_NONE &&
		    st->bpf.loc[i].kind == OTELPROF_TLS_NONE)
			ct->counters.tls_resolved++;
	st->bpf = nb;
	push(ct, p);
	if (debug_enabled())
		for (int i = 0; i < OTELPROF_CTX_LOCS; i++)
			if (nb.loc[i].kind)
				fprintf(stderr,
					"otelprof: pid %u: context format %u: "
					"kind %u tp%+lld addr %#llx off %llu\n",
					p->pid, nb.loc[i].format,
					nb.loc[i].kind,
					(long long)nb.loc[i].tp_offset,
					(unsigned long long)nb.loc[i].addr,
					(unsigned long long)nb.loc[i].offset);
}

static void refresh_pctx(struct context_tracker *ct, struct process *p,
			 uint64_t now)
{
	struct process_ctx_state *st = p->ctx;
	uint64_t start = p->maps.otel_ctx_start, end = p->maps.otel_ctx_end;
	int err;

	/* Named in /proc/PID/maps, or else where the publisher's prctl
	 * said (kernels without anonymous VMA names). */
	if (!start && st && st->hint_start) {
		start = st->hint_start;
		end = st->hint_end;
	}
	if (start) {
		st = state(p);
		if (!st)
			return;
		if (st->pctx_start != start || st->pctx_end != end) {
			process_context_free(&st->pctx);
			st->pctx_start = start;
			st->pctx_end = end;
		}
		err = process_context_read(start, end, ct->read_mem, &p->pid,
					   &st->pctx);
		if (!err) {
			ct->counters.pctx_read++;
			ct->counters.pctx_denied += st->pctx.denied;
		} else if (err != -EALREADY && err != -EAGAIN) {
			ct->counters.pctx_errors++;
			if (start == st->hint_start) {
				/* Not (or no longer) a context there. */
				st->hint_start = st->hint_end = 0;
				process_context_free(&st->pctx);
				st->pctx_start = st->pctx_end = 0;
			}
		}
		st->next_pctx_ns =
			now + (err == -EAGAIN ? TICK_NS : CTX_PCTX_CHECK_NS);
		due_at(ct, st->next_pctx_ns);
		return;
	}
	if (st && st->pctx_start) {
		/* The mapping went away: so did the context. */
		process_context_free(&st->pctx);
		st->pctx_start = st->pctx_end = 0;
	}
	if (st && st->elastic_storage && !st->pctx.published_at_ns) {
		struct process_context c;

		err = elastic_storage_read(st->elastic_storage, ct->read_mem,
					   &p->pid, &c);
		if (!err) {
			c.published_at_ns = 1; /* read once; it is static */
			process_context_free(&st->pctx);
			st->pctx = c;
			ct->counters.pctx_read++;
			/* apm_off: the context is kept, no channel */
			if (c.socket_path && !ct->apm_off && !st->apm) {
				if (ct->napm >= APM_MAX_CHANNELS)
					ct->apm.refused++;
				else if ((st->apm = apm_channel_new(
						  c.socket_path)))
					ct->napm++;
			}
		} else if (err != -EAGAIN) {
			ct->counters.pctx_errors++;
			st->elastic_storage = 0;
		}
		st->next_pctx_ns = now + CTX_PCTX_CHECK_NS;
		due_at(ct, st->next_pctx_ns);
	}
}

/* 1: [start, end) starts with a context header; 0: not (yet): all zero,
 * so maybe a publisher still writing it; -1: something else. */
static int probe_header(struct context_tracker *ct, struct process *p,
			uint64_t start)
{
	static const uint8_t zero[12];
	uint8_t h[12];

	if (ct->read_mem(&p->pid, start, h, sizeof(h)))
		return -1;
	if (!memcmp(h, "OTEL_CTX", 8) && h[8] == PCTX_VERSION && !h[9] &&
	    !h[10] && !h[11])
		return 1;
	return memcmp(h, zero, sizeof(h)) ? -1 : 0;
}

static void found_by_probe(struct context_tracker *ct, struct process *p,
			   uint64_t start, uint64_t end)
{
	struct process_ctx_state *st = state(p);

	if (!st)
		return;
	st->hint_start = start;
	st->hint_end = end;
	st->probes_left = 0;
	ct->counters.pctx_probed++;
}

/* No name for the context mapping (the kernel cannot name anonymous
 * memory): read the first bytes of new small anonymous mappings. One that
 * is still all zero is read again a few times. */
static void probe_candidates(struct context_tracker *ct, struct process *p,
			     uint64_t now)
{
	struct process_ctx_state *st = p->ctx;
	uint32_t budget = CTX_PROBES_PER_SCAN;

	if (p->maps.otel_ctx_start ||
	    (st && (st->hint_start || st->pctx_start)))
		return;
	for (uint32_t i = 0; i < p->maps.ncand && budget; i++) {
		const struct proc_ctx_candidate *c = &p->maps.cand[i];
		int r;

		if (!c->fresh)
			continue;
		budget--;
		r = probe_header(ct, p, c->start);
		if (r > 0) {
			found_by_probe(ct, p, c->start, c->end);
			return;
		}
		if (!r && (st = state(p)) && !st->probes_left) {
			st->probe_start = c->start;
			st->probe_end = c->end;
			st->probes_left = CTX_PROBE_RETRIES;
			st->next_probe_ns = now + TICK_NS;
			due_at(ct, st->next_probe_ns);
		}
	}
}

static void retry_probe(struct context_tracker *ct, struct process *p,
			uint64_t now)
{
	struct process_ctx_state *st = p->ctx;
	int r;

	if (!st || !st->probes_left || now < st->next_probe_ns)
		return;
	st->probes_left--;
	st->next_probe_ns =
		now + (TICK_NS << (CTX_PROBE_RETRIES - st->probes_left));
	due_at(ct, st->next_probe_ns);
	r = probe_header(ct, p, st->probe_start);
	if (r > 0) {
		found_by_probe(ct, p, st->probe_start, st->probe_end);
		refresh_pctx(ct, p, now);
	} else if (r < 0) {
		st->probes_left = 0;
	}
}

/* A rescan that added and removed no executable mapping cannot have moved
 * a TLS symbol: the walk over every mapping is skipped then, unless the
 * last push did not reach the kernel (map full) and is due again. */
static bool tls_may_have_moved(const struct process *p,
			       const struct process_change *c)
{
	if (!c || c->why != PROCESS_RESCANNED || c->added || c->removed)
		return true;
	return p->ctx && !p->ctx->in_kernel && has_location(&p->ctx->bpf);
}

static void on_maps(void *ctx, struct process *p,
		    const struct process_change *c)
{
	struct context_tracker *ct = ctx;
	uint64_t now = ct->last_tick_ns;

	if (tls_may_have_moved(p, c))
		resolve_tls(ct, p);
	probe_candidates(ct, p, now);
	refresh_pctx(ct, p, now);
}

static void on_remove(void *ctx, struct process *p)
{
	struct context_tracker *ct = ctx;

	if (!p->ctx)
		return;
	if (p->ctx->in_kernel && ct->ctx_procs_fd >= 0)
		bpf_map_delete_elem(ct->ctx_procs_fd, &p->pid);
	if (p->ctx->apm) {
		apm_channel_free(p->ctx->apm);
		ct->napm--;
	}
	process_context_free(&p->ctx->pctx);
	free(p->ctx);
	p->ctx = NULL;
}

void context_tracker_sync(struct context_tracker *ct, struct process *p,
			  const struct process_change *c)
{
	on_maps(ct, p, c);
}

void context_tracker_forget(struct context_tracker *ct, struct process *p)
{
	on_remove(ct, p);
}

/* host.id for the agent's registration message: the machine id (hex),
 * as OpenTelemetry's host detector reports it; "" if unreadable. */
static void read_host_id(char *out, size_t cap)
{
	FILE *f = fopen("/etc/machine-id", "re");
	size_t n = 0;
	int ch;

	out[0] = '\0';
	if (!f)
		return;
	while (n + 1 < cap && (ch = fgetc(f)) != EOF &&
	       ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
		out[n++] = (char)ch;
	out[n] = '\0';
	fclose(f);
}

void context_tracker_init(struct context_tracker *ct, struct process_table *t,
			  struct file_cache *files, int ctx_procs_fd)
{
	memset(ct, 0, sizeof(*ct));
	ct->procs = t;
	ct->files = files;
	ct->ctx_procs_fd = ctx_procs_fd;
	ct->read_mem = process_memory_read;
	read_host_id(ct->host_id, sizeof(ct->host_id));
}

bool context_tracker_flush_apm(struct context_tracker *ct, uint64_t now)
{
	struct process_table *t = ct->procs;
	bool waiting = false;

	for (uint32_t i = 0, seen = 0; seen < ct->napm && i < t->nslots; i++) {
		struct process *p = t->procs[i];

		if (!p || !p->ctx || !p->ctx->apm)
			continue;
		seen++;
		if (!p->exited)
			apm_channel_flush(p->ctx->apm, t->proc_root, p->pid,
					  ct->host_id, now, &ct->apm);
		if (p->ctx->apm->npending && p->ctx->apm->fd >= 0)
			waiting = true;
	}
	return waiting;
}

/* An active process without a known OTEL_CTX: did it publish one (a memfd
 * publication sends no prctl event)? A cheap text search first. */
static void discover(struct context_tracker *ct, struct process *p)
{
	char path[96], *text;
	long n;

	snprintf(path, sizeof(path), "%s/%u/maps", ct->procs->proc_root,
		 p->pid);
	n = proc_read_file(path, &text, PROC_MAPS_MAX_BYTES);
	if (n < 0)
		return;
	if (memmem(text, (size_t)n, "OTEL_CTX", 8) && !p->ctx->rescan_wanted) {
		/* The caller rescans it (context_tracker_take_rescan): a
		 * rescan runs every consumer's sync, ours included. */
		p->ctx->rescan_wanted = true;
		ct->rescans_wanted++;
	}
	free(text);
}

/* When to look again: backing off while nothing turns up. */
static void schedule_discovery(struct process_ctx_state *st, uint64_t now)
{
	if (!st->discover_interval_ns)
		st->discover_interval_ns = CTX_PCTX_DISCOVER_NS;
	else if (st->discover_interval_ns < CTX_PCTX_DISCOVER_MAX_NS / 2)
		st->discover_interval_ns *= 2;
	else
		st->discover_interval_ns = CTX_PCTX_DISCOVER_MAX_NS;
	st->next_discover_ns = now + st->discover_interval_ns;
}

void context_tracker_tick(struct context_tracker *ct, uint64_t now)
{
	struct process_table *t = ct->procs;

	if (now - ct->last_tick_ns < TICK_NS)
		return;
	ct->last_tick_ns = now;
	/* Walking every process each tick was 8% of the recorder's CPU
	 * under an exec churn (hundreds of slots, mostly nothing due). */
	if (now < ct->next_scan_ns)
		return;
	ct->next_scan_ns = now + CTX_SCAN_MAX_NS;
	for (uint32_t i = 0; i < t->nslots; i++) {
		struct process *p = t->procs[i];
		struct process_ctx_state *st;

		if (!p || p->exited)
			continue;
		st = p->ctx;
		retry_probe(ct, p, now);
		if (st && (st->pctx_start || st->elastic_storage) &&
		    now >= st->next_pctx_ns)
			refresh_pctx(ct, p, now);
		/* What is still to come (a static context read once has
		 * nothing). */
		if (st && st->probes_left && st->next_probe_ns > now)
			due_at(ct, st->next_probe_ns);
		if (st && (st->pctx_start || st->elastic_storage) &&
		    st->next_pctx_ns > now)
			due_at(ct, st->next_pctx_ns);
		if (!p->maps.otel_ctx_start && !(st && st->pctx_start) &&
		    now - p->last_seen_ns < ACTIVE_WINDOW_NS) {
			st = state(p);
			if (!st)
				continue;
			/* Its first maps scan, just done, looked already. */
			if (!st->next_discover_ns) {
				schedule_discovery(st, now);
			} else if (now >= st->next_discover_ns) {
				schedule_discovery(st, now);
				discover(ct, p);
			}
			due_at(ct, st->next_discover_ns);
		}
	}
}

struct process *context_tracker_take_rescan(struct context_tracker *ct)
{
	struct process_table *t = ct->procs;

	for (uint32_t i = 0; ct->rescans_wanted && i < t->nslots; i++) {
		struct process *p = t->procs[i];

		if (p && p->ctx && p->ctx->rescan_wanted) {
			p->ctx->rescan_wanted = false;
			ct->rescans_wanted--;
			if (!p->exited)
				return p;
		}
	}
	ct->rescans_wanted = 0;
	return NULL;
}

void context_tracker_free(struct context_tracker *ct)
{
	struct process_table *t = ct->procs;

	for (uint32_t i = 0; t && i < t->nslots; i++) {
		struct process *p = t->procs[i];

		if (p && p->ctx) {
			apm_channel_free(p->ctx->apm);
			process_context_free(&p->ctx->pctx);
			free(p->ctx);
			p->ctx = NULL;
		}
	}
}
