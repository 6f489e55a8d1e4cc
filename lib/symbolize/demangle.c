// SPDX-License-Identifier: Apache-2.0
#include "symbolize/demangle.h"

#include <libiberty/demangle.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <string.h>

/* The demangler writes its result in pieces; keep them in a fixed buffer
 * and note overflow instead of allocating (the callback API allocates
 * nothing on the heap).
 *
 * On overflow the demangler is left at once (longjmp): substitutions let
 * a short name print an output exponential in its length (each S<n>_
 * naming the previous template-id twice: 22 levels, a 256-byte name,
 * print 109 MB in 1.7 s, 30 levels minutes), and libiberty keeps printing
 * what the sink no longer takes. Leaving is safe for C++ and for Rust
 * names without Punycode identifiers: there the callback interface keeps
 * all its state on the stack (no heap, no locks). The Rust demangler
 * decodes a Punycode identifier ("u" before its length) into a malloc'd
 * buffer while it prints: such names are not left mid-way (that leaked the
 * buffer); past the limit their output is dropped until the demangler
 * returns, bounded in time by the nesting limit below. */
struct sink {
	char *buf;
	size_t len;
	int overflow;
	jmp_buf *leave;
};

static _Atomic uint64_t refused;

uint64_t symbol_demangle_refused(void)
{
	return atomic_load(&refused);
}

static void put(const char *s, size_t n, void *opaque)
{
	struct sink *k = opaque;

	if (!n) /* the Rust demangler may hand out (NULL, 0) */
		return;
	if (k->overflow || n >= DEMANGLE_MAX_OUTPUT - k->len) {
		k->overflow = 1;
		if (k->leave)
			longjmp(*k->leave, 1);
		return;
	}
	memcpy(k->buf + k->len, s, n);
	k->len += n;
}

#define DEMANGLE_MAX_V0_NESTING		16
#define DEMANGLE_MAX_V0_BOUND_LIFETIMES 64

/* A v0 fn or dyn type ('F' or 'D') may open a binder: 'G' and a base-62
 * count of late-bound lifetimes. libiberty loops that many times even
 * where nothing is printed (an impl's own path is parsed silently), so
 * "FGzzzzzzzzzz_" spins for 2^59 rounds. Real code binds a handful; a
 * count past the limit (or one that does not parse) leaves the name raw.
 * Counted as the demangler counts: digits up to '_', or to the end. */
static bool v0_binders_bounded(const char *raw, size_t n)
{
	for (size_t i = 3; i < n; i++) {
		uint64_t x = 0;

		if (raw[i] != 'G' || (raw[i - 1] != 'F' && raw[i - 1] != 'D'))
			continue;
		for (size_t j = i + 1; j < n && raw[j] != '_'; j++) {
			char c = raw[j];
			unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
				     : c >= 'a' && c <= 'z'
					     ? 10u + (unsigned)(c - 'a')
				     : c >= 'A' && c <= 'Z'
					     ? 36u + (unsigned)(c - 'A')
					     : 62u;

			if (d ==
			    62u) /* the demangler stops here with an error */
				break;
			x = x * 62 + d;
			if (x > DEMANGLE_MAX_V0_BOUND_LIFETIMES)
				return false;
		}
	}
	return true;
}

/* A Rust v0 name that may hold a Punycode identifier: "u" then a digit.
 * ("u" is also the unit type: a false match only costs the early exit.) */
static bool v0_may_have_punycode(const char *raw, size_t n)
{
	for (size_t i = 2; i + 1 < n; i++)
		if (raw[i] == 'u' && raw[i + 1] >= '0' && raw[i + 1] <= '9')
			return true;
	return false;
}

static size_t demangle_name(const char *raw, char out[DEMANGLE_MAX_OUTPUT])
{
	/* Parameters and cv-qualifiers, as perf and gdb print them. The
	 * default recursion limit stays on (hostile names nest deeply). */
	const int opts = DMGL_PARAMS | DMGL_ANSI;
	jmp_buf leave;
	struct sink k = {out, 0, 0, &leave};
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
		if (fb > DEMANGLE_MAX_V0_NESTING ||
		    !v0_binders_bounded(raw, n)) {
			atomic_fetch_add(&refused, 1);
			return 0;
		}
	}
	/* Rust first: its legacy names are valid Itanium names too (the
	 * C++ demangler would keep the ::h<hash> and the $..$ escapes). A
	 * Rust name too long to print is not tried as C++. */
	if (setjmp(leave)) {
		atomic_fetch_add(&refused, 1);
		return 0;
	}
	if (raw[1] == 'R' && v0_may_have_punycode(raw, n))
		k.leave = NULL;
	ok = rust_demangle_callback(raw, opts, put, &k);
	if (!ok && !k.overflow && raw[1] == 'Z') {
		k.len = 0;
		k.leave = &leave;
		ok = cplus_demangle_v3_callback(raw, opts, put, &k);
	}
	if (k.overflow) {
		atomic_fetch_add(&refused, 1);
		return 0;
	}
	if (!ok || !k.len)
		return 0;
	out[k.len] = '\0';
	return k.len;
}

size_t symbol_demangle(const char *raw, char out[DEMANGLE_MAX_OUTPUT])
{
	/* "target@plt" (a PLT stub, named as binutils and perf name it) and
	 * versioned names ("name@@GLIBCXX_3.4"): no mangled name holds an
	 * '@', so the part before it is demangled and the rest kept as is,
	 * as perf prints them. */
	char name[DEMANGLE_MAX_INPUT + 1];
	size_t n = strnlen(raw, DEMANGLE_MAX_INPUT + 1);
	const char *at = memchr(raw, '@', n);
	size_t len, tail;

	if (!at || n > DEMANGLE_MAX_INPUT)
		return demangle_name(raw, out);
	memcpy(name, raw, (size_t)(at - raw));
	name[at - raw] = '\0';
	tail = n - (size_t)(at - raw);
	len = demangle_name(name, out);
	if (!len || tail >= DEMANGLE_MAX_OUTPUT - len)
		return 0;
	memcpy(out + len, at, tail);
	out[len + tail] = '\0';
	return len + tail;
}
