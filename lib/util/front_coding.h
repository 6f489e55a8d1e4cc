/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A list of strings in a fixed order, each stored as the number of leading
 * bytes it shares with the string before it (LEB128) and the rest of it,
 * NUL-terminated. Every FRONT_CODING_BLOCK-th record shares nothing, so any
 * string is decoded from its block's first record in at most
 * FRONT_CODING_BLOCK steps. Symbol tables in address order name neighbours
 * by the same package, class or namespace: a stripped Go daemon's names
 * shrink to about 30%, C++'s to 65-75%.
 *
 * Hand-written: the format is a dozen lines, and no library packaged for
 * Debian keeps a front-coded list whose records can be addressed one by
 * one from outside (the owner keeps each record's offset).
 */
#ifndef OTELPROF_UTIL_FRONT_CODING_H
#define OTELPROF_UTIL_FRONT_CODING_H

#include <stdbool.h>
#include <stddef.h>

#define FRONT_CODING_BLOCK 16u

/* Bytes of the record of s after prev (prev NULL or whole: a record
 * that shares nothing). */
size_t front_coding_size(const char *prev, const char *s, bool whole);
/* Write that record at out; returns its size. */
size_t front_coding_put(char *out, const char *prev, const char *s, bool whole);
/*
 * Decode the record at data[*pos] onto buf, which holds the string before
 * it (prev_len bytes; 0 for a block's first record). Returns the new
 * string's length with buf NUL-terminated, and moves *pos past the record;
 * SIZE_MAX for a record that runs past len, shares more than prev_len
 * bytes or does not fit in bufsz (buf is then "").
 */
size_t front_coding_next(const char *data, size_t len, size_t *pos, char *buf,
			 size_t bufsz, size_t prev_len);

#endif
