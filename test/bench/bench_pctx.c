// SPDX-License-Identifier: Apache-2.0
/*
 * Process-context decoding (a row of make bench): the time and the heap
 * allocations of one decode of a hostile 64 KiB payload, 32,766 empty
 * attributes, and of a real one (a resource of two attributes and a key map
 * of two). Allocations are counted by wrapping malloc, calloc and realloc
 * at link time (-Wl,--wrap); what a decode keeps (the names and values it
 * copies out) is counted too.
 *   bench_pctx [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "context/process_context.h"

static size_t allocs;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);

void *__wrap_malloc(size_t n)
{
	allocs++;
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	allocs++;
	return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	allocs++;
	return __real_realloc(p, n);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void run(const char *what, const uint8_t *buf, size_t len, int rounds)
{
	struct process_context c;
	size_t per = 0, nattrs = 0, nkeys = 0;
	unsigned skipped = 0;
	double t0 = now();

	for (int i = 0; i < rounds; i++) {
		size_t a0 = allocs;

		if (process_context_decode(buf, len, &c)) {
			fprintf(stderr, "bench_pctx: %s does not decode\n",
				what);
			exit(1);
		}
		per = allocs - a0;
		nattrs = c.nattrs;
		nkeys = c.nkeys;
		skipped = c.skipped;
		process_context_free(&c);
	}
	printf("%s\t%.1f us per decode, %zu allocations (%zu attributes, "
	       "%zu keys, %u skipped)\n",
	       what, (now() - t0) / rounds * 1e6, per, nattrs, nkeys, skipped);
}

int main(int argc, char **argv)
{
	/* ProcessContext{resource{service.name=checkout,
	 * service.version=1.2.3}, attributes{threadlocal.attribute_key_map=
	 * [http.route, user.id]}} */
	static const uint8_t real[] =
		"\x0a\x38\x0a\x1a\x0a\x0c\x73\x65\x72\x76\x69\x63\x65\x2e\x6e"
		"\x61\x6d\x65\x12\x0a\x0a\x08\x63\x68\x65\x63\x6b\x6f\x75\x74"
		"\x0a\x1a\x0a\x0f\x73\x65\x72\x76\x69\x63\x65\x2e\x76\x65\x72"
		"\x73\x69\x6f\x6e\x12\x07\x0a\x05\x31\x2e\x32\x2e\x33\x12\x3c"
		"\x0a\x1d\x74\x68\x72\x65\x61\x64\x6c\x6f\x63\x61\x6c\x2e\x61"
		"\x74\x74\x72\x69\x62\x75\x74\x65\x5f\x6b\x65\x79\x5f\x6d\x61"
		"\x70\x12\x1b\x2a\x19\x0a\x0c\x0a\x0a\x68\x74\x74\x70\x2e\x72"
		"\x6f\x75\x74\x65\x0a\x09\x0a\x07\x75\x73\x65\x72\x2e\x69\x64";
	static uint8_t hostile[PCTX_MAX_PAYLOAD];
	int rounds = argc > 1 ? atoi(argv[1]) : 200;
	size_t n = 0, body = PCTX_MAX_PAYLOAD - 4;

	if (rounds < 1)
		rounds = 1;
	/* resource (field 1, a 3-byte length), then empty attributes */
	hostile[n++] = 0x0a;
	hostile[n++] = (uint8_t)(0x80 | (body & 0x7f));
	hostile[n++] = (uint8_t)(0x80 | ((body >> 7) & 0x7f));
	hostile[n++] = (uint8_t)(body >> 14);
	while (n + 2 <= PCTX_MAX_PAYLOAD) {
		hostile[n++] = 0x0a;
		hostile[n++] = 0;
	}
	run("process context: hostile 64 KiB (32,766 empty attributes)",
	    hostile, n, rounds);
	run("process context: real (2 attributes, a key map of 2)", real,
	    sizeof(real) - 1, rounds * 100);
	return 0;
}
