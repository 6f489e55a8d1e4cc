// SPDX-License-Identifier: Apache-2.0
/* The Elastic APM agent's return channel: wire format, checks on the
 * socket path and its owner, queueing, sending to a real datagram
 * socket, what is kept and dropped when the agent does not read. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "context/apm_channel.h"

#define SEC 1000000000ull

static void checks_socket_paths(void **state)
{
	(void)state;
	assert_true(apm_socket_path_ok("/tmp/essock1", 12));
	assert_true(apm_socket_path_ok("/a/..b/c..", 10));
	assert_false(apm_socket_path_ok("tmp/essock1", 11)); /* relative */
	assert_false(apm_socket_path_ok("/tmp/../etc/x", 13));
	assert_false(apm_socket_path_ok("/..", 3));
	assert_false(apm_socket_path_ok("/a/b\0c", 6));
	assert_false(apm_socket_path_ok("", 0));
	{
		char big[APM_SOCKET_PATH_MAX + 2];

		memset(big, 'a', sizeof(big));
		big[0] = '/';
		assert_true(apm_socket_path_ok(big, APM_SOCKET_PATH_MAX));
		assert_false(apm_socket_path_ok(big, APM_SOCKET_PATH_MAX + 1));
	}
}

static void parses_effective_uid(void **state)
{
	static const char ok[] = "Name:\tjava\nUmask:\t0022\n"
				 "Uid:\t1000\t1001\t1000\t1000\n"
				 "Gid:\t100\t100\t100\t100\n";
	static const char *bad[] = {
		"Name:\tjava\n",	     /* no Uid line */
		"Uid:\t1000\n",		     /* no effective field */
		"Uid:\t1000\tx\t1\t1\n",     /* not a number */
		"Uid:\t1000\t99999999999\n", /* over 32 bits */
		"Uid:\t1000\t12a\t1\t1\n",
	};
	uint32_t euid = 7;

	(void)state;
	assert_int_equal(apm_status_euid(ok, sizeof(ok) - 1, &euid), 0);
	assert_int_equal(euid, 1001);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(apm_status_euid(bad[i], strlen(bad[i]), &euid),
				 -EINVAL);
	/* Cut anywhere (an exact-size copy: ASan sees any read past it):
	 * no Uid line yet is an error. */
	for (size_t n = 0; n < sizeof(ok) - 1; n++) {
		char *cut = malloc(n ? n : 1);
		int r;

		memcpy(cut, ok, n);
		r = apm_status_euid(cut, n, &euid);
		if (n < 28)
			assert_int_equal(r, -EINVAL);
		free(cut);
	}
}

static void encodes_messages(void **state)
{
	uint8_t buf[64];
	struct apm_pending e;
	uint16_t u16;
	uint32_t u32;

	(void)state;
	assert_int_equal(apm_encode_registration(buf, sizeof(buf), 1000, "abc"),
			 15);
	memcpy(&u16, buf, 2);
	assert_int_equal(u16, APM_MSG_REGISTRATION);
	memcpy(&u16, buf + 2, 2);
	assert_int_equal(u16, 1);
	memcpy(&u32, buf + 4, 4);
	assert_int_equal(u32, 1000);
	memcpy(&u32, buf + 8, 4);
	assert_int_equal(u32, 3);
	assert_memory_equal(buf + 12, "abc", 3);
	assert_int_equal(apm_encode_registration(buf, 12, 1000, "abc"), 0);

	for (int i = 0; i < 16; i++) {
		e.trace_id[i] = (uint8_t)i;
		e.stack_id[i] = (uint8_t)(0x80 + i);
	}
	for (int i = 0; i < 8; i++)
		e.tx_id[i] = (uint8_t)(0x40 + i);
	assert_int_equal(apm_encode_correlation(buf, &e, 513),
			 APM_CORRELATION_SIZE);
	memcpy(&u16, buf, 2);
	assert_int_equal(u16, APM_MSG_CORRELATION);
	memcpy(&u16, buf + 2, 2);
	assert_int_equal(u16, 1);
	assert_memory_equal(buf + 4, e.trace_id, 16);
	assert_memory_equal(buf + 20, e.tx_id, 8);
	assert_memory_equal(buf + 28, e.stack_id, 16);
	memcpy(&u16, buf + 44, 2);
	assert_int_equal(u16, 513);
}

static void stack_ids(void **state)
{
	static const uint64_t k[] = {0xffffffff81000010ull,
				     0xffffffff81000020ull};
	static const uint64_t u[] = {0x401000, 0x402000, 0x403000};
	uint8_t id[16], id2[16], seq[16];
	char text[23];

	(void)state;
	/* FNV-1a 128 over {nkernel, kernel..., user...} as LE bytes; the
	 * expected value computed independently (Python). */
	apm_stack_id(k, 2, u, 3, id);
	apm_stack_id_string(id, text);
	assert_string_equal(text, "rg-_ld3WAl1lKLvK_VNNtw");
	/* The same words split differently are another stack. */
	{
		const uint64_t all[] = {k[0], k[1], u[0], u[1], u[2]};

		apm_stack_id(all, 1, all + 1, 4, id2);
		assert_memory_not_equal(id, id2, 16);
	}
	for (int i = 0; i < 16; i++)
		seq[i] = (uint8_t)i;
	apm_stack_id_string(seq, text);
	assert_string_equal(text, "AAECAwQFBgcICQoLDA0ODw");
	memset(seq, 0, sizeof(seq));
	seq[0] = 0xfb;
	seq[1] = 0xff;
	apm_stack_id_string(seq, text);
	assert_string_equal(text, "-_8AAAAAAAAAAAAAAAAAAA");
}

struct agent {
	char dir[64], path[128];
	int fd;
};

static void agent_open(struct agent *a)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};

	strcpy(a->dir, "/tmp/apm-chan-XXXXXX");
	assert_non_null(mkdtemp(a->dir));
	snprintf(a->path, sizeof(a->path), "%s/essock", a->dir);
	a->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	assert_true(a->fd >= 0);
	strcpy(addr.sun_path, a->path);
	assert_int_equal(bind(a->fd, (struct sockaddr *)&addr, sizeof(addr)),
			 0);
}

static void agent_close(struct agent *a)
{
	if (a->fd >= 0)
		close(a->fd);
	unlink(a->path);
	rmdir(a->dir);
}

static void fill(uint8_t *p, size_t n, uint8_t v)
{
	memset(p, v, n);
}

static void sends_to_the_agent(void **state)
{
	struct apm_counters n = {0};
	struct agent a;
	struct apm_channel *c;
	uint8_t tr[16], tx[8], st[16], st2[16], buf[128];
	uint16_t u16;
	ssize_t got;

	(void)state;
	agent_open(&a);
	c = apm_channel_new(a.path);
	assert_non_null(c);
	fill(tr, 16, 1);
	fill(tx, 8, 2);
	fill(st, 16, 3);
	fill(st2, 16, 4);
	apm_channel_add(c, tr, tx, st, 1 * SEC, &n);
	apm_channel_add(c, tr, tx, st, 1 * SEC, &n);
	apm_channel_add(c, tr, tx, st2, 1 * SEC, &n);
	assert_int_equal(c->npending, 2);
	apm_channel_flush(c, "/proc", (uint32_t)getpid(), "host1", 1 * SEC, &n);
	assert_int_equal(n.channels, 1);
	assert_int_equal(n.sent, 2);
	assert_int_equal(n.dropped, 0);
	assert_int_equal(c->npending, 0);
	/* The handshake first, then one message per distinct stack. */
	got = recv(a.fd, buf, sizeof(buf), 0);
	assert_int_equal(got, 12 + 5);
	memcpy(&u16, buf, 2);
	assert_int_equal(u16, APM_MSG_REGISTRATION);
	assert_memory_equal(buf + 12, "host1", 5);
	for (int i = 0; i < 2; i++) {
		got = recv(a.fd, buf, sizeof(buf), 0);
		assert_int_equal(got, APM_CORRELATION_SIZE);
		memcpy(&u16, buf + 44, 2);
		assert_int_equal(u16, buf[28] == 3 ? 2 : 1);
		assert_memory_equal(buf + 4, tr, 16);
		assert_memory_equal(buf + 20, tx, 8);
	}
	assert_int_equal(recv(a.fd, buf, sizeof(buf), 0), -1);

	/* The agent stops reading: what its queue cannot take is kept,
	 * then dropped (counted) once older than the promised delay. */
	for (int i = 0; i < 100; i++) {
		st[0] = (uint8_t)i;
		st[1] = (uint8_t)(i * 7);
		apm_channel_add(c, tr, tx, st, 2 * SEC, &n);
	}
	assert_int_equal(c->npending + n.dropped, 100);
	apm_channel_flush(c, "/proc", (uint32_t)getpid(), "host1", 2 * SEC, &n);
	assert_true(n.sent > 2 && n.sent < 2 + 100);
	assert_true(c->npending > 0);
	assert_true(c->fd >= 0); /* EAGAIN keeps the connection */
	{
		uint64_t before = n.dropped + c->npending;

		apm_channel_flush(
			c, "/proc", (uint32_t)getpid(), "host1",
			2 * SEC + APM_SAMPLES_DELAY_MS * 1000000ull + 1, &n);
		assert_int_equal(c->npending, 0);
		assert_int_equal(n.dropped, before);
	}

	/* The agent goes away: the connection is dropped (to be tried
	 * again later), what is queued stays until it expires. */
	close(a.fd);
	a.fd = -1;
	unlink(a.path);
	apm_channel_add(c, tr, tx, st2, 10 * SEC, &n);
	apm_channel_flush(c, "/proc", (uint32_t)getpid(), "host1", 10 * SEC,
			  &n);
	assert_int_equal(c->fd, -1);
	assert_int_equal(c->npending, 1);
	apm_channel_free(c);
	agent_close(&a);
}

static void refuses_what_is_not_the_agents(void **state)
{
	struct apm_counters n = {0};
	struct agent a;
	struct apm_channel *c;
	uint8_t z[16] = {1};
	char file[160];
	FILE *f;

	(void)state;
	agent_open(&a);
	/* A regular file where the socket should be. */
	snprintf(file, sizeof(file), "%s/plain", a.dir);
	f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	c = apm_channel_new(file);
	apm_channel_add(c, z, z, z, SEC, &n);
	apm_channel_flush(c, "/proc", (uint32_t)getpid(), "", SEC, &n);
	assert_int_equal(n.refused, 1);
	assert_int_equal(n.channels, 0);
	assert_int_equal(c->fd, -1);
	/* Not tried again before the retry interval: counted once. */
	apm_channel_flush(c, "/proc", (uint32_t)getpid(), "", 2 * SEC, &n);
	assert_int_equal(n.refused, 1);
	apm_channel_free(c);
	unlink(file);

	/* A socket another user owns (needs root to make one). */
	if (geteuid() == 0) {
		assert_int_equal(chown(a.path, 12345, 12345), 0);
		c = apm_channel_new(a.path);
		apm_channel_flush(c, "/proc", (uint32_t)getpid(), "", SEC, &n);
		assert_int_equal(n.refused, 2);
		assert_int_equal(c->fd, -1);
		apm_channel_free(c);
	}
	/* A process that does not exist. */
	c = apm_channel_new(a.path);
	apm_channel_flush(c, "/proc", 0x7ffffff0u, "", SEC, &n);
	assert_int_equal(c->fd, -1);
	apm_channel_free(c);
	agent_close(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(checks_socket_paths),
		cmocka_unit_test(parses_effective_uid),
		cmocka_unit_test(encodes_messages),
		cmocka_unit_test(stack_ids),
		cmocka_unit_test(sends_to_the_agent),
		cmocka_unit_test(refuses_what_is_not_the_agents),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
