// SPDX-License-Identifier: Apache-2.0
#include "symbolize/demangle.h"

#include <libiberty/demangle.h>
#include <string.h>

/* The demangler writes its result in pieces; keep them in a fixed buffer
 * and note overflow instead of allocating (the callback API allocates
 * nothing on the heap). */
struct sink {
	char *buf;
	size_t len;
	int overflow;
};

static void put(const char *s, size_t n, void *opaque)
{
	struct sink *k = opaque;

	if (!n) /* the Rust demangler may hand out (NULL, 0) */
		return;
	if (k->overflow || n >= DEMANGLE_MAX_OUTPUT - k->len) {
		k->overflow = 1;
		return;
	}
	memcpy(k->buf + k->len, s, n);
	k->len += n;
}

#define DEMANGLE_MAX_V0_NESTING 16

size_t symbol_demangle(const char *raw, char out[DEMANGLE_MAX_OUTPUT])
{
	/* Parameters and cv-qualifiers, as perf and gdb print them. The
	 * default recursion limit stays on (hostile names nest deeply). */
	const int opts = DMGL_PARAMS | DMGL_ANSI;
	struct sink k = {out, 0, 0};
	size_t n = strnlen(raw, DEMANGLE_MAX_INPUT + 1);
	int ok;

	if (n > DEMANGLE_MAX_INPUT || n < 3 || raw[0] != '_' ||
	    (raw[1] != 'Z' && raw[1] != 'R'))
		return 0;
	/* libiberty's Rust v0 demangler takes time exponential in nested
	 * fn types and back-references ('F', 'B'): a 118-byte hostile name
	 * ran for minutes. Names with many of them stay raw. */
	if (raw[1] == 'R') {
		size_t fb = 0;
		for (size_t i = 2; i < n; i++)
			fb += raw[i] == 'F' || raw[i] == 'B';
		if (fb > DEMANGLE_MAX_V0_NESTING)
			return 0;
	}
	/* Rust first: its legacy names are valid Itanium names too (the
	 * C++ demangler would keep the ::h<hash> and the $..$ escapes). */
	ok = rust_demangle_callback(raw, opts, put, &k);
	if ((!ok || k.overflow) && raw[1] == 'Z') {
		k.len = 0;
		k.overflow = 0;
		ok = cplus_demangle_v3_callback(raw, opts, put, &k);
	}
	if (!ok || k.overflow || !k.len)
		return 0;
	out[k.len] = '\0';
	return k.len;
}
