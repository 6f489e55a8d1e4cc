/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Demangling of C++ (Itanium ABI) and Rust (legacy and v0) symbol names
 * through libiberty, GCC's demangler (the one binutils and gdb use):
 * Function.name gets the demangled form, Function.system_name the raw one.
 */
#ifndef OTELPROF_SYMBOLIZE_DEMANGLE_H
#define OTELPROF_SYMBOLIZE_DEMANGLE_H

#include <stddef.h>
#include <stdint.h>

/* Longest mangled name we hand to the demangler, and longest result kept:
 * libiberty sizes its work arrays on the stack by the input length, and
 * substitutions can make the output far longer than the input. */
#define DEMANGLE_MAX_INPUT  4096u
#define DEMANGLE_MAX_OUTPUT 8192u

/*
 * Demangle raw into out (NUL-terminated, at most DEMANGLE_MAX_OUTPUT
 * bytes including the NUL). Returns the length, or 0 if raw is not a
 * mangled C++/Rust name, is too long, fails to demangle or demangles to
 * more than the buffer holds (the caller keeps the raw name).
 */
size_t symbol_demangle(const char *raw, char out[DEMANGLE_MAX_OUTPUT]);

/* Names this process refused as hostile (their output would overflow the
 * buffer, or a Rust v0 name nests too deeply): they stay raw. */
uint64_t symbol_demangle_refused(void);

#endif
