// SPDX-License-Identifier: Apache-2.0
#include "sample/runtime_programs.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sample/bpf_sampler.h"
#include "util/debug_log.h"
#include "util/errmsg.h"

int runtime_programs_init(struct runtime_programs *rp,
			  struct bpf_sampler *sampler)
{
	memset(rp, 0, sizeof(*rp));
	rp->sampler = sampler;
	rp->inited = true;
	pthread_mutex_init(&rp->lock, NULL);
	rp->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return rp->notify_fd < 0 ? -errno : 0;
}

/* The loader thread: every runtime asked for, one after the other, until
 * none is left (a thread per burst of first sightings, not one that
 * lives for nothing on hosts without runtimes). */
static void *loader(void *arg)
{
	struct runtime_programs *rp = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&rp->lock);
	for (;;) {
		uint32_t id = 0;
		const struct runtime_program_def *def;
		struct bpf_object *obj = NULL;
		char msg[160];
		struct errmsg err = {msg, sizeof(msg)};
		const void *elf;
		size_t size = 0;
		int e;

		for (uint32_t i = 1; i < OTELPROF_RT_MAX && !rp->stopping; i++)
			if (rp->rt[i].state == RUNTIME_PROGRAM_LOADING &&
			    !rp->rt[i].obj) {
				id = i;
				break;
			}
		if (!id)
			break;
		def = rp->rt[id].def;
		pthread_mutex_unlock(&rp->lock);
		msg[0] = '\0';
		elf = def->elf(&size);
		e = bpf_sampler_load_runtime(rp->sampler, id, elf, size, &obj,
					     &err);
		pthread_mutex_lock(&rp->lock);
		if (e) {
			rp->rt[id].state = RUNTIME_PROGRAM_FAILED;
			snprintf(rp->rt[id].error, sizeof(rp->rt[id].error),
				 "%s", msg);
			rp->failed++;
			debug_log("runtime %s: %s; its processes keep native "
				  "stacks",
				  def->name, msg);
		} else {
			rp->rt[id].obj = obj;
			rp->rt[id].state = RUNTIME_PROGRAM_READY;
		}
		if (write(rp->notify_fd, &one, sizeof(one)) < 0) {
			/* only on counter overflow: already readable */
		}
		/* After the write: a drain pass that took the flag reads
		 * the eventfd empty. */
		atomic_store(&rp->finished, true);
	}
	rp->thread_running = false;
	pthread_mutex_unlock(&rp->lock);
	return NULL;
}

enum runtime_program_state
runtime_programs_want(struct runtime_programs *rp, uint32_t id,
		      const struct runtime_program_def *def)
{
	enum runtime_program_state st;

	if (!rp || id == OTELPROF_RT_NONE || id >= OTELPROF_RT_MAX)
		return RUNTIME_PROGRAM_FAILED;
	if (!rp->sampler)
		return RUNTIME_PROGRAM_FAILED;
	pthread_mutex_lock(&rp->lock);
	st = rp->rt[id].state;
	if (st == RUNTIME_PROGRAM_ABSENT && !rp->stopping) {
		rp->rt[id].def = def;
		rp->rt[id].state = st = RUNTIME_PROGRAM_LOADING;
		if (!rp->thread_running) {
			/* The last burst's thread has ended (or is about
			 * to, without touching rp again): reap it. */
			if (rp->thread_joinable) {
				pthread_mutex_unlock(&rp->lock);
				pthread_join(rp->thread, NULL);
				pthread_mutex_lock(&rp->lock);
				rp->thread_joinable = false;
			}
			if (!rp->thread_running) {
				if (pthread_create(&rp->thread, NULL, loader,
						   rp)) {
					rp->rt[id].state = st =
						RUNTIME_PROGRAM_FAILED;
					atomic_store(&rp->finished, true);
					snprintf(rp->rt[id].error,
						 sizeof(rp->rt[id].error),
						 "cannot start the loader "
						 "thread");
				} else {
					rp->thread_running = true;
					rp->thread_joinable = true;
				}
			}
		}
	}
	pthread_mutex_unlock(&rp->lock);
	return st;
}

uint64_t runtime_programs_loaded(struct runtime_programs *rp)
{
	uint64_t n = 0;

	if (!rp || !rp->inited)
		return 0;
	pthread_mutex_lock(&rp->lock);
	for (uint32_t i = 1; i < OTELPROF_RT_MAX; i++)
		n += rp->rt[i].state == RUNTIME_PROGRAM_READY;
	pthread_mutex_unlock(&rp->lock);
	return n;
}

enum runtime_program_state runtime_programs_state(struct runtime_programs *rp,
						  uint32_t id)
{
	enum runtime_program_state st;

	if (!rp || id >= OTELPROF_RT_MAX)
		return RUNTIME_PROGRAM_FAILED;
	pthread_mutex_lock(&rp->lock);
	st = rp->rt[id].state;
	pthread_mutex_unlock(&rp->lock);
	return st;
}

int runtime_programs_map_fd(struct runtime_programs *rp, uint32_t id,
			    const char *map)
{
	struct bpf_map *m = NULL;

	if (!rp || id >= OTELPROF_RT_MAX)
		return -1;
	pthread_mutex_lock(&rp->lock);
	if (rp->rt[id].state == RUNTIME_PROGRAM_READY)
		m = bpf_object__find_map_by_name(rp->rt[id].obj, map);
	pthread_mutex_unlock(&rp->lock);
	return m ? bpf_map__fd(m) : -1;
}

int runtime_programs_notify_fd(const struct runtime_programs *rp)
{
	return rp && rp->inited ? rp->notify_fd : -1;
}

uint32_t runtime_programs_take_finished(struct runtime_programs *rp)
{
	uint32_t done = 0;
	uint64_t v;

	if (!rp || !atomic_exchange(&rp->finished, false))
		return 0;
	if (rp->notify_fd >= 0 && read(rp->notify_fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing new since the last read */
	}
	pthread_mutex_lock(&rp->lock);
	for (uint32_t i = 1; i < OTELPROF_RT_MAX; i++) {
		if (rp->rt[i].taken ||
		    (rp->rt[i].state != RUNTIME_PROGRAM_READY &&
		     rp->rt[i].state != RUNTIME_PROGRAM_FAILED))
			continue;
		rp->rt[i].taken = true;
		done |= 1u << i;
	}
	pthread_mutex_unlock(&rp->lock);
	return done;
}

int runtime_programs_attach(struct runtime_programs *rp, uint32_t tgid,
			    uint32_t id, uint8_t mode, uint8_t copy_kb)
{
	struct otelprof_runtime_proc v;

	if (!rp || !rp->sampler)
		return -ENODEV;
	memset(&v, 0, sizeof(v));
	v.runtime = (uint8_t)id;
	v.mode = mode;
	v.copy_kb = copy_kb;
	if (bpf_map_update_elem(bpf_sampler_runtime_procs_fd(rp->sampler),
				&tgid, &v, BPF_ANY))
		return -errno;
	return 0;
}

void runtime_programs_detach(struct runtime_programs *rp, uint32_t tgid)
{
	if (rp && rp->sampler)
		bpf_map_delete_elem(bpf_sampler_runtime_procs_fd(rp->sampler),
				    &tgid);
}

void runtime_programs_free(struct runtime_programs *rp)
{
	bool join;

	if (!rp || !rp->inited)
		return;
	pthread_mutex_lock(&rp->lock);
	rp->stopping = true;
	join = rp->thread_joinable;
	rp->thread_joinable = false;
	pthread_mutex_unlock(&rp->lock);
	/* A load in progress finishes (the verifier cannot be
	 * interrupted); nothing new starts. */
	if (join)
		pthread_join(rp->thread, NULL);
	for (uint32_t i = 0; i < OTELPROF_RT_MAX; i++)
		bpf_object__close(rp->rt[i].obj);
	if (rp->notify_fd >= 0)
		close(rp->notify_fd);
	pthread_mutex_destroy(&rp->lock);
	memset(rp, 0, sizeof(*rp));
	rp->notify_fd = -1;
}
