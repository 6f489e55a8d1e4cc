// SPDX-License-Identifier: Apache-2.0
/*
 * The public ABI (include/otelprofiler.h, docs/abi.md): argument checks,
 * locking and the sz-versioned structs. The work is in lib/agent/ (the
 * drain thread, the per-sample pipeline and handing a window out).
 */
#include "otelprofiler.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/options.h"
#include "agent/window.h"
#include "util/errmsg.h"

OTELPROF_API int otelprof_start(const struct otelprof_opts *opts,
				struct otelprof **out, char *errbuf,
				size_t errbuf_len)
{
	struct errmsg err = {errbuf, errbuf_len};
	struct otelprof_opts o;
	int e;

	if (errbuf && errbuf_len)
		errbuf[0] = '\0';
	if (!out)
		return errmsg_set(&err, -EINVAL, "out must not be NULL");
	*out = NULL;
	e = agent_parse_opts(opts, &o, &err);
	if (e)
		return e;
	return agent_start(&o, out, &err);
}

OTELPROF_API int otelprof_poll(struct otelprof *p, uint8_t **data, size_t *size)
{
	int e;

	if (!p || !data || !size)
		return -EINVAL;
	*data = NULL;
	*size = 0;
	pthread_mutex_lock(&p->poll_lock);
	p->errbuf[0] = '\0';
	e = deliver_window(p, data, size);
	pthread_mutex_unlock(&p->poll_lock);
	return e;
}

OTELPROF_API void otelprof_buffer_free(uint8_t *data)
{
	free(data);
}

OTELPROF_API int otelprof_stop(struct otelprof *p)
{
	int e = 0;

	if (!p)
		return -EINVAL;
	pthread_mutex_lock(&p->poll_lock);
	if (!p->stopped)
		e = agent_stop(p);
	pthread_mutex_unlock(&p->poll_lock);
	return e;
}

OTELPROF_API void otelprof_close(struct otelprof *p)
{
	if (!p)
		return;
	otelprof_stop(p);
	agent_free(p);
}

OTELPROF_API int otelprof_stats(struct otelprof *p, struct otelprof_stats *st)
{
	struct otelprof_stats s;
	size_t n;

	if (!p || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	s.sz = sizeof(s);
	pthread_mutex_lock(&p->poll_lock);
	pthread_mutex_lock(&p->state_lock);
	agent_stats(p, &s);
	pthread_mutex_unlock(&p->state_lock);
	pthread_mutex_unlock(&p->poll_lock);
	/* A caller built against an older header gets the fields it knows. */
	n = st->sz < sizeof(s) ? st->sz : sizeof(s);
	memcpy((char *)st + sizeof(size_t), (char *)&s + sizeof(size_t),
	       n - sizeof(size_t));
	return 0;
}

OTELPROF_API int otelprof_set_frequency(struct otelprof *p, uint32_t hz)
{
	int e;

	if (!p)
		return -EINVAL;
	/* poll_lock: never during a stop. */
	pthread_mutex_lock(&p->poll_lock);
	p->errbuf[0] = '\0';
	e = agent_set_frequency(p, hz);
	pthread_mutex_unlock(&p->poll_lock);
	return e;
}

OTELPROF_API const char *otelprof_errmsg(struct otelprof *p)
{
	return p ? p->errbuf : "no profiler handle";
}

OTELPROF_API const char *otelprof_version(void)
{
	return OTELPROF_VERSION_STRING;
}
