// SPDX-License-Identifier: Apache-2.0
#include "runtimes/perl/perl_tracker.h"

#include <bpf/bpf.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "context/tls_location.h"
#include "elf/elf_dynsym.h"
#include "elf/elf_file.h"
#include "elf/tls_symbols.h"
#include "filestore/file_cache.h"
#include "process/mapped_file.h"
#include "process/process_table.h"
#include "rt_perl.skel.h"
#include "util/debug_log.h"

/* The op loop every Perl runs its code in (exported: PL_runops points at
 * it); Perl's frames go above it. */
#define PERL_RUNOPS_SYMBOL "Perl_runops_standard"
/* Stack copy of a Perl process: 7 KiB, so 64 of its frames (2 words
 * each, appended by its walk) still fit after it. */
#define PERL_COPY_KB 7

static void kernel_write(struct perl_tracker *t, struct process *p)
{
	struct perl_process *pp = p->perl;
	int fd;

	if (!pp || !pp->layout || pp->in_kernel)
		return;
	switch (runtime_programs_want(t->progs, OTELPROF_RT_PERL,
				      &perl_runtime.program)) {
	case RUNTIME_PROGRAM_READY:
		break;
	case RUNTIME_PROGRAM_LOADING:
		t->counters.waited++;
		return;
	default:
		return; /* no kernel walk here: native frames */
	}
	fd = runtime_programs_map_fd(t->progs, OTELPROF_RT_PERL, "perl_procs");
	if (fd < 0 || bpf_map_update_elem(fd, &p->pid, &pp->bpf, BPF_ANY) ||
	    runtime_programs_attach(t->progs, p->pid, OTELPROF_RT_PERL,
				    OTELPROF_RT_MODE_AFTER, PERL_COPY_KB)) {
		t->counters.map_errors++;
		return;
	}
	pp->in_kernel = true;
}

/* Where PL_current_context is in the file open at fd (loaded at bias). */
static bool interp_location(int fd, uint64_t bias, bool is_main,
			    struct otelprof_tls_loc *out)
{
	struct tls_ctx_symbol s;
	Elf *e;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return false;
	(void)tls_symbol_lookup(e, "PL_current_context", &s, NULL);
	elf_end(e);
	return !tls_location_of(&s, bias, is_main, out);
}

static struct perl_process *state(struct perl_tracker *t, struct process *p)
{
	if (!p->perl) {
		p->perl = calloc(1, sizeof(*p->perl));
		if (p->perl)
			p->perl->pid = p->pid;
	}
	(void)t;
	return p->perl;
}

/* Not usable: said once, its stacks stay native. */
static void unknown(struct perl_tracker *t, struct process *p, const char *why,
		    unsigned version, unsigned size)
{
	struct perl_process *pp = state(t, p);

	if (!pp)
		return;
	pp->unknown_reported = true;
	t->counters.unknown_versions++;
	debug_log("pid %u: Perl 5.%u (interpreter %u bytes): %s; native "
		  "frames only",
		  p->pid, version, size, why);
}

static void sync_process(struct perl_tracker *t, struct process *p,
			 const struct process_change *c)
{
	bool fresh_only = c->why == PROCESS_RESCANNED && !p->perl;

	if (p->perl && (p->perl->layout || p->perl->unknown_reported))
		return; /* an interpreter does not move */
	if (fresh_only && !c->added)
		return;
	for (size_t i = 0; i < p->maps.n; i++) {
		/* PL_curcop and PL_curstackinfo are symbols of a
		 * non-threaded build only (a threaded one's are fields of
		 * its struct interpreter). */
		static const char *const names[] = {
			"PL_revision", "PL_version", "PL_interp_size",
			"PL_curcop", "PL_curstackinfo"};
		struct proc_mapping *m = &p->maps.v[i];
		const struct elf_sym *runops;
		const struct perl_layout *l;
		struct otelprof_tls_loc loc;
		struct perl_process *pp;
		struct elf_file *f;
		uint64_t bias, v[5];
		uint8_t revision = 0, version = 0;
		uint16_t size = 0;
		bool is_main, located, threaded;
		int fd;

		if (m->kind != PROC_MAPPING_FILE || !m->path ||
		    (fresh_only && !m->fresh) || !strstr(m->path, "perl"))
			continue;
		f = file_cache_of(t->files, m->file);
		if (!f ||
		    !(runops = elf_symbols_find(&f->sym, PERL_RUNOPS_SYMBOL)) ||
		    !file_mapping_bias(m, f, &bias))
			continue;
		fd = mapped_file_open((pid_t)p->pid, m);
		if (fd < 0) {
			(void)state(t, p); /* looked for again */
			continue;
		}
		(void)elf_dynsym_lookup(fd, "PL_", names, 5, v);
		is_main = p->exe_path && !strcmp(m->path, p->exe_path);
		threaded = !v[3] || !v[4];
		located = threaded && interp_location(fd, bias, is_main, &loc);
		close(fd);
		/* A non-threaded build exports no PL_interp_size (its struct
		 * interpreter is a 1-byte stand-in); its stackinfo, contexts,
		 * COPs and SVs are laid out as the threaded build's of its
		 * version (make check-perl-layouts compares the headers). */
		if (!v[0] || !v[1] || (threaded && !v[2]) ||
		    t->read_mem(&p->pid, v[0] + bias, &revision, 1) ||
		    t->read_mem(&p->pid, v[1] + bias, &version, 1) ||
		    (threaded && t->read_mem(&p->pid, v[2] + bias, &size, 2)) ||
		    revision != 5) {
			unknown(t, p, "no version symbols", version, size);
			return;
		}
		l = threaded ? perl_layout_find(version, size)
			     : perl_layout_find_any(version);
		if (!l || !perl_layout_sane(l)) {
			unknown(t, p, "no known layout", version, size);
			return;
		}
		if (threaded && !located) {
			/* threaded builds before 5.36 (PL_thr_key) are not
			 * walked yet */
			unknown(t, p, "no PL_current_context", version, size);
			return;
		}
		pp = state(t, p);
		if (!pp)
			return;
		pp->layout = l;
		/* Where Perl's frames go, by address: the file's names may
		 * be evicted, or not read yet, when a sample is named. */
		pp->loop_lo = runops->addr + bias;
		pp->loop_hi =
			runops->addr + (runops->size ? runops->size : 1) + bias;
		pp->bpf = l->walk;
		if (threaded) {
			pp->bpf.ctx = loc;
		} else {
			pp->bpf.global_curcop = v[3] + bias;
			pp->bpf.global_curstackinfo = v[4] + bias;
		}
		perl_reader_init(&pp->reader, l, !threaded, t->read_mem,
				 &pp->pid);
		t->counters.found++;
		kernel_write(t, p);
		return;
	}
}

static void rt_init(void *rt, struct process_table *procs,
		    struct file_cache *files, struct runtime_programs *progs)
{
	struct perl_tracker *t = rt;

	memset(t, 0, sizeof(*t));
	t->procs = procs;
	t->files = files;
	t->progs = progs;
	t->read_mem = process_memory_read;
}

static void rt_sync(void *rt, struct process *p, const struct process_change *c)
{
	sync_process(rt, p, c);
}

/* The walk program loaded: the processes found meanwhile go in. */
static void rt_kernel_ready(void *rt, struct process *p)
{
	kernel_write(rt, p);
}

static void rt_forget(void *rt, struct process *p)
{
	struct perl_tracker *t = rt;
	struct perl_process *pp = p->perl;

	if (!pp)
		return;
	if (pp->in_kernel) {
		int fd = runtime_programs_map_fd(t->progs, OTELPROF_RT_PERL,
						 "perl_procs");

		runtime_programs_detach(t->progs, p->pid);
		if (fd >= 0)
			bpf_map_delete_elem(fd, &p->pid);
	}
	t->counters.read_errors += pp->reader.read_errors;
	free(pp);
	p->perl = NULL;
}

static bool rt_name_frame(void *rt, struct process *p, uint64_t cv,
			  uint64_t cop, uint64_t now_ns,
			  struct runtime_frame *out)
{
	struct perl_process *pp = p->perl;
	struct perl_frame_info fi;

	(void)rt;
	if (!pp || !pp->layout ||
	    !perl_reader_frame(&pp->reader, cv, cop, now_ns, &fi))
		return false;
	*out = (struct runtime_frame){
		.name = fi.name, .file = fi.file, .line = fi.line};
	return true;
}

/* pc is a return address: the call in the loop is just before it. */
static bool rt_is_loop(void *rt, struct process *p, uint64_t pc)
{
	const struct perl_process *pp = p->perl;

	(void)rt;
	return pp && pp->layout && pc > pp->loop_lo && pc <= pp->loop_hi;
}

static void rt_counters(const void *rt, struct runtime_counters *out)
{
	const struct perl_tracker *t = rt;
	uint64_t read_errors = t->counters.read_errors;

	for (uint32_t i = 0; t->procs && i < t->procs->nslots; i++) {
		const struct process *p = t->procs->procs[i];

		if (p && p->perl)
			read_errors += p->perl->reader.read_errors;
	}
	*out = (struct runtime_counters){
		.found = t->counters.found,
		.unknown = t->counters.unknown_versions,
		.map_errors = t->counters.map_errors,
		.frame_errors = read_errors,
		.waited = t->counters.waited,
	};
}

static void rt_free(void *rt)
{
	struct perl_tracker *t = rt;

	/* The processes still in the table: their kernel entries go with
	 * the map. */
	for (uint32_t i = 0; t->procs && i < t->procs->nslots; i++) {
		struct process *p = t->procs->procs[i];

		if (p) {
			free(p->perl);
			p->perl = NULL;
		}
	}
	memset(t, 0, sizeof(*t));
}

static const void *program_elf(size_t *size)
{
	return perl_bpf__elf_bytes(size);
}

const struct runtime_ops perl_runtime = {
	.name = "perl",
	.id = OTELPROF_RT_PERL,
	.mode = OTELPROF_RT_MODE_AFTER,
	.copy_kb = PERL_COPY_KB,
	.loop_function = PERL_RUNOPS_SYMBOL,
	.is_loop = rt_is_loop,
	.state_size = sizeof(struct perl_tracker),
	.program = {"perl", program_elf},
	.init = rt_init,
	.sync = rt_sync,
	.kernel_ready = rt_kernel_ready,
	.forget = rt_forget,
	.name_frame = rt_name_frame,
	.counters = rt_counters,
	.free = rt_free,
};
