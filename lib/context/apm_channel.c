// SPDX-License-Identifier: Apache-2.0
#include "context/apm_channel.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "process/proc_file.h"

#define STATUS_MAX_BYTES (64 * 1024)
#define PROBE_LIMIT	 16 /* slots tried per insert */

struct apm_channel *apm_channel_new(const char *path)
{
	struct apm_channel *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->path = strdup(path);
	if (!c->path) {
		free(c);
		return NULL;
	}
	c->fd = -1;
	c->tokens = APM_BURST;
	return c;
}

void apm_channel_free(struct apm_channel *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->path);
	free(c);
}

void apm_channel_add(struct apm_channel *c, const uint8_t trace_id[16],
		     const uint8_t tx_id[8], const uint8_t stack_id[16],
		     uint64_t now_ns, struct apm_counters *n)
{
	uint32_t h = ((uint32_t)stack_id[0] | (uint32_t)stack_id[1] << 8) ^
		     ((uint32_t)tx_id[0] | (uint32_t)tx_id[1] << 8);

	for (uint32_t i = 0; i < PROBE_LIMIT; i++) {
		struct apm_pending *e =
			&c->pending[(h + i) % APM_PENDING_SLOTS];

		if (!e->count) {
			memcpy(e->trace_id, trace_id, 16);
			memcpy(e->tx_id, tx_id, 8);
			memcpy(e->stack_id, stack_id, 16);
			e->count = 1;
			e->first_ns = now_ns;
			c->npending++;
			return;
		}
		if (!memcmp(e->stack_id, stack_id, 16) &&
		    !memcmp(e->tx_id, tx_id, 8) &&
		    !memcmp(e->trace_id, trace_id, 16)) {
			if (e->count < UINT16_MAX)
				e->count++;
			else
				n->dropped++;
			return;
		}
	}
	n->dropped++; /* table full around this slot */
}

/* The socket file inside the process's root: a socket its user owns.
 * Returns a connected non-blocking datagram socket, or -errno. */
static int open_socket(const char *path, const char *proc_root, uint32_t pid)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	char p[96], *status;
	uint32_t euid;
	struct stat st;
	int root, f, s, err;
	long n;

	snprintf(p, sizeof(p), "%s/%u/status", proc_root, pid);
	n = proc_read_file(p, &status, STATUS_MAX_BYTES);
	if (n < 0)
		return (int)n;
	err = apm_status_euid(status, (size_t)n, &euid);
	free(status);
	if (err)
		return err;
	snprintf(p, sizeof(p), "%s/%u/root", proc_root, pid);
	root = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	f = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
	err = f < 0 ? -errno : 0;
	close(root);
	if (err)
		return err;
	if (fstat(f, &st) || !S_ISSOCK(st.st_mode) || st.st_uid != euid) {
		close(f);
		return -EPERM;
	}
	/* Connect through the file we checked: the kernel follows our fd,
	 * never a path that could be swapped after the check. */
	snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d", f);
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0) {
		err = -errno;
		close(f);
		return err;
	}
	if (connect(s, (struct sockaddr *)&addr, sizeof(addr))) {
		err = -errno;
		close(s);
		close(f);
		return err;
	}
	close(f);
	return s;
}

static void disconnect(struct apm_channel *c, uint64_t now_ns)
{
	close(c->fd);
	c->fd = -1;
	c->next_open_ns = now_ns + APM_RETRY_NS;
}

/* Entries the agent no longer waits for. */
static void expire(struct apm_channel *c, uint64_t now_ns,
		   struct apm_counters *n)
{
	const uint64_t max_age = APM_SAMPLES_DELAY_MS * 1000000ull;

	for (uint32_t i = 0; c->npending && i < APM_PENDING_SLOTS; i++) {
		struct apm_pending *e = &c->pending[i];

		/* A sample stamped after now (clock reads race) is new. */
		if (e->count && now_ns > e->first_ns &&
		    now_ns - e->first_ns > max_age) {
			e->count = 0;
			c->npending--;
			n->dropped++;
		}
	}
}

static bool send_or_keep(struct apm_channel *c, const uint8_t *buf, size_t len,
			 uint64_t now_ns)
{
	if (send(c->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)len)
		return true;
	/* EAGAIN: the agent's queue is full, try next pass. Anything else
	 * (it closed the socket, restarted): connect again later. */
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		disconnect(c, now_ns);
	return false;
}

void apm_channel_flush(struct apm_channel *c, const char *proc_root,
		       uint32_t pid, const char *host_id, uint64_t now_ns,
		       struct apm_counters *n)
{
	uint8_t buf[12 + APM_HOST_ID_MAX];
	size_t len;

	expire(c, now_ns, n);
	if (c->fd < 0) {
		int fd;

		if (now_ns < c->next_open_ns)
			return;
		fd = open_socket(c->path, proc_root, pid);
		if (fd < 0) {
			if (!c->next_open_ns)
				n->refused++; /* once per channel */
			c->next_open_ns = now_ns + APM_RETRY_NS;
			return;
		}
		c->fd = fd;
		/* The handshake: the agent holds each transaction back this
		 * long for our messages. */
		len = apm_encode_registration(buf, sizeof(buf),
					      APM_SAMPLES_DELAY_MS, host_id);
		if (!send_or_keep(c, buf, len, now_ns)) {
			if (c->fd >= 0)
				disconnect(c, now_ns);
			return;
		}
		n->channels++;
	}
	c->tokens += (double)(now_ns - c->refill_ns) * APM_RATE_PER_SEC / 1e9;
	if (c->tokens > APM_BURST || !c->refill_ns)
		c->tokens = APM_BURST;
	c->refill_ns = now_ns;
	for (uint32_t i = 0; c->npending && i < APM_PENDING_SLOTS; i++) {
		struct apm_pending *e = &c->pending[i];

		if (!e->count)
			continue;
		if (c->tokens < 1)
			break; /* over the rate: kept, expires if it lasts */
		len = apm_encode_correlation(buf, e, (uint16_t)e->count);
		if (!send_or_keep(c, buf, len, now_ns))
			break;
		c->tokens -= 1;
		e->count = 0;
		c->npending--;
		n->sent++;
	}
}
