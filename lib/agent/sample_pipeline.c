// SPDX-License-Identifier: Apache-2.0
/*
 * The path of one sample, top to bottom: agent_handle_sample calls each
 * stage once, in this order (2 and 4 a second time after a rescan, see
 * below).
 *
 *   1. event -> process      process_table_get_sample (lib/process/)
 *   2. user stack            unwound by BPF already, or unwound here from
 *                            the stack copy (lib/unwind/process_unwind.c);
 *                            held while its tables are being built
 *   3. resource              the process's OTLP resource (lib/encode/)
 *   4. frames -> stack       stack_symbolize (lib/frames/): kernel,
 *                            native, JIT and interpreter frames, then
 *                            pb_frames_stack (lib/encode/); a raw stack
 *                            seen in this window is taken from the
 *                            stack cache (lib/encode/stack_cache.c)
 *   5. thread context        trace link and attributes (lib/context/);
 *                            Elastic APM: stack-trace id, queued for
 *                            the agent (lib/context/apm_channel.c)
 *   6. profile builder       pb_add_sample (lib/encode/profile_builder.c)
 *
 * lib/agent/window.c encodes the window at the next poll. Every sample
 * the builder could not take is counted in add_errors.
 *
 * Stages 2 and 4 do not rescan a process themselves: they report a pc in
 * no known mapping, and the stage is run again here after the process table's
 * rescan (process_table_rescan_asked, within the process's gap and the
 * shared budget), whose changes the stages take (process_sync.c) as for
 * every rescan. At most one rescan per stage and sample.
 */
#include <string.h>

#include "agent/agent.h"
#include "context/thread_attrs.h"

_Static_assert(SYMBOLIZED_MAX_FRAMES <= PB_MAX_FRAMES,
	       "a symbolized stack must fit the builder");

/* Stage 3: the resource of proc, with what its process context publishes. */
static int sample_resource(struct otelprof *p, struct profile_builder *b,
			   const struct process *proc, uint32_t *res)
{
	struct pb_attr_in published[ENV_MAX_NAMES + PCTX_MAX_ATTRS];
	const struct process_context *pc = context_of(proc);
	struct pb_resource_info ri;
	size_t n = 0;

	memset(&ri, 0, sizeof(ri));
	ri.key = proc->serial;
	ri.pid = proc->pid;
	ri.exe_name = *proc->exe_name ? proc->exe_name : proc->comm;
	ri.exe_path = proc->exe_path;
	ri.container_id = proc->container_id;
	ri.host_name = p->host_name;
	/* include_env_vars (read once, at first sight), then what the
	 * process publishes (never process.*: denied at the source). */
	for (uint32_t i = 0; proc->env && i < proc->env->n; i++) {
		published[n].key = p->env_names.key[proc->env->v[i].name];
		published[n].str = proc->env->v[i].value;
		published[n++].i = 0;
	}
	for (size_t i = 0; pc && i < pc->nattrs && i < PCTX_MAX_ATTRS; i++) {
		published[n].key = pc->attrs[i].key;
		published[n].str = pc->attrs[i].str;
		published[n++].i = pc->attrs[i].i;
	}
	ri.nextra = n;
	ri.extra = published;
	ri.extra_gen = pc ? pc->published_at_ns : 0;
	return pb_resource(b, &ri, res);
}

/* Stage 5: the sample's thread context: a Link for its trace/span, and
 * its attributes named through the process context's key map. */
static void sample_context(struct otelprof *p, struct profile_builder *b,
			   const struct process *proc,
			   const struct otelprof_sample_event *e, int32_t *link,
			   int32_t *extra, uint32_t *nextra)
{
	static const uint8_t zero[16];
	const struct process_context *pc = context_of(proc);
	struct thread_attr attrs[PB_MAX_CTX_ATTRS];
	size_t n;

	if (memcmp(e->ctx.trace_id, zero, 16)) {
		*link = pb_link(b, e->ctx.trace_id, e->ctx.span_id);
		if (*link < 0) {
			*link = 0;
			p->counters.add_errors++;
		}
	}
	n = thread_attrs_decode((const uint8_t *)e->words +
					otelprof_sample_attrs_off(e->n_user),
				e->ctx.attrs_size, pc ? pc->keys : NULL,
				pc ? pc->nkeys : 0, attrs, PB_MAX_CTX_ATTRS,
				&p->counters.ctx_attrs_dropped);
	for (size_t i = 0; i < n; i++) {
		int32_t r = pb_attr_string(b, attrs[i].key, attrs[i].value);

		if (r <= 0)
			p->counters.add_errors++;
		else
			extra[(*nextra)++] = r;
	}
}

/* Elastic APM agent attached: the sample's stack-trace id goes on the
 * sample (so the profile joins the agent's transactions) and is queued
 * for the agent's return channel (sent by the drain pass, not here). */
static void sample_apm(struct otelprof *p, struct profile_builder *b,
		       const struct process *proc,
		       const struct otelprof_sample_event *e,
		       const uint64_t *user, uint32_t nuser, int32_t *extra,
		       uint32_t *nextra)
{
	uint8_t id[16];
	char text[23];
	int32_t r;

	apm_stack_id(otelprof_sample_kstack(e), e->n_kernel, user, nuser, id);
	apm_stack_id_string(id, text);
	r = pb_attr_string(b, APM_STACK_ID_ATTR, text);
	if (r <= 0)
		p->counters.add_errors++;
	else
		extra[(*nextra)++] = r;
	apm_channel_add(proc->ctx->apm, e->ctx.trace_id, e->ctx.local_root_id,
			id, e->hdr.ktime_boot_ns, &p->context.apm);
}

/* A rescan of proc as its gap and the shared budget allow; the stages
 * see what it found before the stage that asked runs again. */
static bool agent_rescan_asked(struct otelprof *p, struct process *proc)
{
	bool done = process_table_rescan_asked(&p->procs, proc, 0);

	agent_sync_processes(p);
	return done;
}

/* What the symbolizer found missing in the stack's files, done now: files
 * resolved, evicted symbols read again, debuginfod asked. True: names may
 * have come (name the stack again). Whatever was done, the stack is not
 * reused from the stack cache (its names may still change). */
static bool sample_wants(struct otelprof *p, struct process *proc,
			 struct symbolized_stack *frames)
{
	bool named = false;

	for (uint32_t i = 0; i < frames->nwant; i++) {
		struct symbolized_want *w = &frames->wants[i];

		switch (w->kind) {
		case SYMBOLIZED_WANT_RESOLVE:
			named |= agent_resolve_mapping(p, proc, w->m) != NULL;
			break;
		case SYMBOLIZED_WANT_RELOAD:
			named |= agent_reload_evicted(p, proc, w->m, w->file);
			break;
		case SYMBOLIZED_WANT_LINES:
		case SYMBOLIZED_WANT_GO_LINES:
			named |= agent_load_lines(
				p, proc, w->m, w->file,
				w->kind == SYMBOLIZED_WANT_GO_LINES);
			break;
		case SYMBOLIZED_WANT_DEBUGINFOD:
			file_cache_debuginfod_check(&p->symfiles, w->file);
			break;
		}
	}
	/* Loads may have evicted files. */
	agent_forget_gone_files(p);
	frames->cacheable = false;
	return named;
}

/* Stage 4: the stack's index in b. A raw stack seen before in this window
 * is found in the stack cache; otherwise the symbolizer makes its frames
 * (those named before in this window, from its frame memo: only their
 * Location) and the builder interns them. */
static int32_t sample_stack(struct otelprof *p, struct profile_builder *b,
			    struct process *proc,
			    const struct otelprof_sample_event *e,
			    const uint64_t *user, uint32_t nuser,
			    uint32_t ninterp)
{
	struct symbolized_stack *frames = &p->symbolized;
	struct raw_stack raw = {proc->serial, otelprof_sample_kstack(e), user,
				e->n_kernel, nuser};
	int32_t stack;
	int err;

	if (stack_cache_find(&p->stack_cache, &raw, &stack))
		return stack;
	err = stack_symbolize(&p->symbolizer, proc, otelprof_sample_kstack(e),
			      e->n_kernel, user, nuser, ninterp, e->interp_kind,
			      e->hdr.ktime_boot_ns, frames);
	/* A pc in no known mapping: new code since the last scan (dlopen,
	 * JIT)? Look again, as the process's gap and the shared budget
	 * allow, and symbolize with what the scan found. */
	if (!err && frames->unmapped && agent_rescan_asked(p, proc))
		err = stack_symbolize(&p->symbolizer, proc,
				      otelprof_sample_kstack(e), e->n_kernel,
				      user, nuser, ninterp, e->interp_kind,
				      e->hdr.ktime_boot_ns, frames);
	/* Files the frames need that the process's sync left for a later
	 * slice (or evicted symbols): done here and named at once. Once:
	 * what the second naming still wants (a debuginfod lookup for a
	 * file just read) is asked for; its names come with a later
	 * sample. */
	if (!err && frames->nwant && sample_wants(p, proc, frames))
		err = stack_symbolize(&p->symbolizer, proc,
				      otelprof_sample_kstack(e), e->n_kernel,
				      user, nuser, ninterp, e->interp_kind,
				      e->hdr.ktime_boot_ns, frames);
	if (!err && frames->nwant)
		sample_wants(p, proc, frames);
	if (err)
		return err;
	if (frames->strings_dropped)
		p->counters.add_errors++;
	stack = pb_frames_stack(b, frames->frames, frames->n, p->frame_locs);
	if (stack < 0)
		return stack;
	/* What each frame became, for the next stacks that share it. */
	stack_symbolizer_encoded(&p->symbolizer, frames->frames, frames->n,
				 p->frame_locs);
	if (frames->cacheable)
		stack_cache_put(&p->stack_cache, &raw, stack);
	return stack;
}

/* One event down stages 1-6: a CPU sample (offcpu false), or an
 * off-CPU event of off_ns nanoseconds, which never waits for a table
 * (its thread ran again meanwhile: the stack is emitted as it unwinds). */
static void handle(struct otelprof *p, const struct otelprof_sample_event *e,
		   size_t size, bool may_park, bool offcpu, int64_t off_ns)
{
	struct profile_builder *b = &p->windows[p->cur];
	uint64_t now = e->hdr.ktime_boot_ns;
	bool copy = e->flags & OTELPROF_SAMPLE_F_STACK_COPY;
	/* Pairs a runtime's walk added after the native frames, if a
	 * runtime of the table names them. */
	uint32_t ninterp =
		stack_symbolizer_has_runtime(&p->symbolizer, e->interp_kind)
			? e->n_interp
			: 0;
	const uint64_t *user = e->words;
	uint32_t nuser = e->n_user, res;
	int32_t stack, link = 0, extra[PB_MAX_CTX_ATTRS];
	uint32_t nextra = 0;
	char comm[OTELPROF_COMM_LEN + 1];
	struct process *proc;

	/* 1. event -> process (read from /proc on first sight). */
	memcpy(comm, e->comm, OTELPROF_COMM_LEN);
	comm[OTELPROF_COMM_LEN] = '\0';
	proc = process_table_get_sample(&p->procs, e->hdr.pid, e->hdr.tid, comm,
					e->hdr.proc_start_ns, now);
	agent_sync_processes(p);
	if (!proc) {
		p->counters.add_errors++;
		return;
	}

	/* 2. user stack: a stack copy is unwound here; the interpreter
	 * frames BPF read follow the native ones. */
	if (copy) {
		struct unwind_copy walk;

		process_unwind_copy(&p->unwinder, proc, e, p->frames,
				    p->max_user_frames, &walk);
		/* Code mapped since the last scan (ld.so loading libraries
		 * of a new process): look again, as the process's gap and
		 * the shared budget allow, and walk with what it found. */
		if (walk.error == OTELPROF_CNT_UNWIND_NO_MAPPING &&
		    agent_rescan_asked(p, proc))
			process_unwind_copy(&p->unwinder, proc, e, p->frames,
					    p->max_user_frames, &walk);
		/* A file the process's sync left for a later slice: resolved
		 * now (its table read as a first load reads it), walked
		 * again. */
		if (walk.unresolved &&
		    agent_resolve_mapping(p, proc, walk.unresolved)) {
			agent_forget_gone_files(p);
			process_unwind_copy(&p->unwinder, proc, e, p->frames,
					    p->max_user_frames, &walk);
		}
		/* A big file's table is being built: hold the sample rather
		 * than emit a cut stack. */
		if (walk.error == OTELPROF_CNT_UNWIND_PENDING && may_park &&
		    agent_park(p, e, size))
			return;
		process_unwind_count_copy(&p->unwinder, &walk);
		nuser = walk.n;
	}

	/* 3. resource. */
	if (sample_resource(p, b, proc, &res)) {
		p->counters.add_errors++;
		return;
	}

	/* 4. frames -> one interned stack. */
	if (copy) {
		memcpy(p->frames + nuser, e->words + e->n_user - 2 * ninterp,
		       2 * ninterp * sizeof(uint64_t));
		user = p->frames;
		nuser += 2 * ninterp;
	}
	stack = sample_stack(p, b, proc, e, user, nuser, ninterp);

	/* 5. thread context. */
	if (e->ctx.format != OTELPROF_CTX_NONE)
		sample_context(p, b, proc, e, &link, extra, &nextra);
	if (e->ctx.format == OTELPROF_CTX_ELASTIC_V1 && proc->ctx &&
	    proc->ctx->apm && stack >= 0 && nextra < PB_MAX_CTX_ATTRS)
		sample_apm(p, b, proc, e, user, nuser, extra, &nextra);

	/* 6. into the window: a CPU sample weighted by the rate it was
	 * taken at, an off-CPU event with its duration. */
	b->period_ns = agent_period_at(p, e->hdr.ktime_boot_ns);
	if (stack < 0)
		p->counters.add_errors++;
	else if (offcpu) {
		if (pb_add_offcpu_sample(b, res, stack, e->hdr.tid, comm,
					 e->hdr.cpu, link, extra, nextra,
					 e->hdr.ktime_boot_ns +
						 (uint64_t)p->boot_to_unix_ns,
					 off_ns))
			p->counters.add_errors++;
		else
			p->counters.offcpu_events++;
	} else if (pb_add_sample(b, res, stack, e->hdr.tid, comm, e->hdr.cpu,
				 link, extra, nextra,
				 e->hdr.ktime_boot_ns +
					 (uint64_t)p->boot_to_unix_ns))
		p->counters.add_errors++;
}

void agent_handle_sample(struct otelprof *p,
			 const struct otelprof_sample_event *e, size_t size,
			 bool may_park)
{
	handle(p, e, size, may_park, false, 0);
}

void agent_handle_offcpu(struct otelprof *p,
			 const struct otelprof_sample_event *e, size_t size,
			 int64_t off_ns)
{
	handle(p, e, size, false, true, off_ns);
}
