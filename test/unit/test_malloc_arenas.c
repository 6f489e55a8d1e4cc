// SPDX-License-Identifier: Apache-2.0
/* malloc_arenas_limit: the environment's setting wins; otherwise threads
 * started after it allocate from one arena (glibc's malloc_info lists the
 * arenas as <heap> elements). Under ASan glibc's allocator is not in use
 * and nothing is set. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/malloc_arenas.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static void environment_wins(void **state)
{
	setenv("MALLOC_ARENA_MAX", "4", 1);
	assert_false(malloc_arenas_limit());
	unsetenv("MALLOC_ARENA_MAX");
	setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2", 1);
	assert_false(malloc_arenas_limit());
	unsetenv("GLIBC_TUNABLES");
}

#ifndef UNDER_ASAN
#define NTHREADS 4

static pthread_barrier_t all_allocated;

/* Allocate, then hold it until every thread has: each would take an arena
 * of its own while another holds the lock of the one it used. */
static void *allocate(void *arg)
{
	void *held[64];

	(void)arg;
	for (int i = 0; i < 64; i++)
		held[i] = malloc(4096 + (size_t)i);
	pthread_barrier_wait(&all_allocated);
	for (int i = 0; i < 64; i++)
		free(held[i]);
	return NULL;
}

static unsigned arenas(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	unsigned n = 0;

	assert_non_null(f);
	assert_int_equal(malloc_info(0, f), 0);
	fclose(f);
	for (const char *s = text; (s = strstr(s, "<heap nr=")); s++)
		n++;
	free(text);
	return n;
}
#endif

static void threads_share_one_arena(void **state)
{
#ifdef UNDER_ASAN
	assert_false(malloc_arenas_limit());
#else
	pthread_t t[NTHREADS];

	assert_true(malloc_arenas_limit());
	pthread_barrier_init(&all_allocated, NULL, NTHREADS);
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, allocate, NULL),
				 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&all_allocated);
	assert_int_equal(arenas(), 1);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(environment_wins),
		cmocka_unit_test(threads_share_one_arena),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
