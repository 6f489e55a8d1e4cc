// SPDX-License-Identifier: Apache-2.0
/*
 * debuginfod lookups (lib/filestore/debuginfod.c) against servers on
 * loopback made here: URL checks, the negative cache, a body over the
 * file's budget, a body that is not an ELF, and a server that never
 * answers (stop must not wait for it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "filestore/debuginfod.h"
#include "util/mem_budget.h"

#define BUILD_ID "962c8fc5eb7c986dba2eff12d18068856cb1cfe5"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A TCP socket on 127.0.0.1 (port in *port); listening or not. */
static int loopback_socket(bool listening, int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	if (listening)
		assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* Answers one request with 200 and body_len bytes of 'x'. */
struct server {
	int fd;
	size_t body_len;
	pthread_t thread;
};

static void *serve_one(void *arg)
{
	struct server *s = arg;
	char req[4096], hdr[256];
	char *body;
	int c = accept(s->fd, NULL, NULL);
	int n;

	if (c < 0)
		return NULL;
	if (read(c, req, sizeof(req)) <= 0) {
		close(c);
		return NULL;
	}
	body = malloc(s->body_len);
	memset(body, 'x', s->body_len);
	n = snprintf(hdr, sizeof(hdr),
		     "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n",
		     s->body_len);
	if (send(c, hdr, (size_t)n, MSG_NOSIGNAL) == n) {
		size_t done = 0;

		while (done < s->body_len) {
			ssize_t w = send(c, body + done, s->body_len - done,
					 MSG_NOSIGNAL);

			if (w <= 0)
				break;
			done += (size_t)w;
		}
	}
	free(body);
	close(c);
	return NULL;
}

static struct debuginfod_job *wait_done(struct debuginfod *d)
{
	uint64_t until = now_ns() + 10000000000ull;

	while (now_ns() < until) {
		struct debuginfod_job *j =
			debuginfod_job_of(debuginfod_take_done(d));

		if (j)
			return j;
		usleep(10000);
	}
	fail_msg("lookup did not finish in 10 s");
	return NULL;
}

static void urls_checked(void **state)
{
	struct debuginfod d;
	const char *why;

	(void)state;
	debuginfod_init(&d);
	assert_int_equal(debuginfod_set_urls(&d, NULL, &why), 0);
	assert_false(debuginfod_enabled(&d));
	assert_int_equal(debuginfod_set_urls(&d, "  ", &why), 0);
	assert_false(debuginfod_enabled(&d));
	assert_int_equal(
		debuginfod_set_urls(&d, " http://a:8002/  https://b//\n", &why),
		0);
	assert_int_equal(d.nurls, 2);
	assert_string_equal(d.urls[0], "http://a:8002");
	assert_string_equal(d.urls[1], "https://b");
	assert_int_equal(debuginfod_set_urls(&d, "http://a file:///etc", &why),
			 -EINVAL);
	assert_non_null(strstr(why, "http://"));
	assert_false(debuginfod_enabled(&d));
	assert_int_equal(debuginfod_set_urls(&d,
					     "http://1 http://2 http://3 "
					     "http://4 http://5 http://6 "
					     "http://7 http://8 http://9",
					     &why),
			 -EINVAL);
	/* Off: nothing starts, nothing is asked. */
	assert_int_equal(debuginfod_start(&d, -1), 0);
	{
		uint64_t retry;

		assert_int_equal(
			debuginfod_submit(&d, NULL, NULL, BUILD_ID, &retry),
			-ENODEV);
	}
	debuginfod_free(&d);
}

/* A server that refuses connections: a failure, remembered, and the
 * same build id not asked again before the backoff. */
static void failure_backs_off(void **state)
{
	struct debuginfod d;
	struct debuginfod_job *j;
	char url[64];
	const char *why;
	uint64_t retry;
	int port, fd = loopback_socket(false, &port);

	(void)state;
	debuginfod_init(&d);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	assert_int_equal(debuginfod_set_urls(&d, url, &why), 0);
	assert_int_equal(debuginfod_start(&d, -1), 0);
	assert_int_equal(debuginfod_submit(&d, NULL, NULL, BUILD_ID, &retry),
			 0);
	j = wait_done(&d);
	assert_int_equal(j->result, DEBUGINFOD_NOT_FOUND);
	assert_null(j->item.next);
	debuginfod_job_free(j);
	assert_int_equal(d.counters.lookups, 1);
	assert_int_equal(d.counters.failures, 1);
	assert_int_equal(debuginfod_submit(&d, NULL, NULL, BUILD_ID, &retry),
			 -EBUSY);
	assert_true(retry > now_ns() + 50000000000ull);
	assert_int_equal(d.counters.lookups, 1);
	/* Another build id is asked. */
	assert_int_equal(debuginfod_submit(&d, NULL, NULL,
					   "00112233445566778899aabbccddeeff",
					   &retry),
			 0);
	debuginfod_job_free(wait_done(&d));
	assert_int_equal(d.counters.lookups, 2);
	debuginfod_free(&d);
	close(fd);
}

static void run_server(size_t body_len, struct mem_account *acct,
		       int want_result, uint64_t *refused, uint64_t *failures)
{
	struct server s = {.body_len = body_len};
	struct debuginfod d;
	struct debuginfod_job *j;
	char url[64];
	const char *why;
	uint64_t retry;
	int port;

	s.fd = loopback_socket(true, &port);
	assert_int_equal(pthread_create(&s.thread, NULL, serve_one, &s), 0);
	debuginfod_init(&d);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
	assert_int_equal(debuginfod_set_urls(&d, url, &why), 0);
	assert_int_equal(debuginfod_start(&d, -1), 0);
	assert_int_equal(debuginfod_submit(&d, NULL, acct, BUILD_ID, &retry),
			 0);
	j = wait_done(&d);
	assert_int_equal(j->result, want_result);
	assert_int_equal(j->sym.n, 0);
	debuginfod_job_free(j);
	*refused = d.counters.refused;
	*failures = d.counters.failures;
	debuginfod_free(&d);
	shutdown(s.fd, SHUT_RDWR);
	pthread_join(s.thread, NULL);
	close(s.fd);
}

/* A body over the file's budget is cut off and refused; nothing stays
 * charged. A body that is not an ELF is a failure. */
static void budget_and_bad_file(void **state)
{
	struct mem_budget b;
	struct mem_account acct;
	uint64_t refused, failures;

	(void)state;
	mem_budget_init(&b, 1u << 20, 256u << 10);
	mem_account_init(&acct, &b);
	run_server(4u << 20, &acct, DEBUGINFOD_REFUSED, &refused, &failures);
	assert_int_equal(refused, 1);
	assert_int_equal(failures, 0);
	assert_int_equal(atomic_load(&acct.bytes), 0);
	run_server(4096, &acct, DEBUGINFOD_BAD_FILE, &refused, &failures);
	assert_int_equal(refused, 0);
	assert_int_equal(failures, 1);
	assert_int_equal(atomic_load(&acct.bytes), 0);
	mem_account_release(&acct);
}

/* A server that accepts and never answers: stop ends the lookup at once
 * (not at its 15 s deadline) and hands the job back. */
static void stop_does_not_wait(void **state)
{
	struct debuginfod d;
	struct debuginfod_job *j;
	struct work_item *it;
	char url[64];
	const char *why;
	uint64_t retry, t0;
	int port, fd = loopback_socket(true, &port), n = 0;

	(void)state;
	debuginfod_init(&d);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	assert_int_equal(debuginfod_set_urls(&d, url, &why), 0);
	assert_int_equal(debuginfod_start(&d, -1), 0);
	assert_int_equal(debuginfod_submit(&d, NULL, NULL, BUILD_ID, &retry),
			 0);
	usleep(300000);
	assert_true(debuginfod_busy(&d));
	t0 = now_ns();
	it = debuginfod_stop(&d);
	assert_true(now_ns() - t0 < 200000000ull);
	while (it) {
		j = debuginfod_job_of(it);
		it = it->next;
		assert_int_not_equal(j->result, DEBUGINFOD_HIT);
		debuginfod_job_free(j);
		n++;
	}
	assert_int_equal(n, 1);
	debuginfod_free(&d);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(urls_checked),
		cmocka_unit_test(failure_backs_off),
		cmocka_unit_test(budget_and_bad_file),
		cmocka_unit_test(stop_does_not_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
