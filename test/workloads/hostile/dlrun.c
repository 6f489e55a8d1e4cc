// SPDX-License-Identifier: Apache-2.0
/*
 * dlopen a library (a possibly corrupted copy of libhot.so) and run its
 * hot_entry for SECONDS. Usage: dlrun LIB SECONDS. Prints "loaded" once
 * the library is in, "rounds N" at the end; exits 3 if it cannot load.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

typedef uint64_t (*hot_fn)(double);

NOINLINE static uint64_t run_lib(hot_fn fn, double seconds)
{
	uint64_t r = fn(seconds);

	__asm__ volatile("" ::: "memory"); /* keep the frame: no tail call */
	return r;
}

int main(int argc, char **argv)
{
	void *h;
	hot_fn fn;

	if (argc < 3) {
		fprintf(stderr, "usage: dlrun LIB SECONDS\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlrun: %s\n", dlerror());
		return 3;
	}
	fn = (hot_fn)(uintptr_t)dlsym(h, "hot_entry");
	if (!fn) {
		fprintf(stderr, "dlrun: %s\n", dlerror());
		return 3;
	}
	printf("loaded\n");
	fflush(stdout);
	printf("rounds %llu\n", (unsigned long long)run_lib(fn, atof(argv[2])));
	return 0;
}
