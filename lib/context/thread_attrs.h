/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OTEP 4947 attrs_data, as a sampled thread published it: entries
 * {u8 key_index, u8 len, value[len]}, names from the process context's
 * threadlocal.attribute_key_map. Bytes from another process: bounded,
 * validated, and what cannot be used is dropped and counted.
 */
#ifndef OTELPROF_CONTEXT_THREAD_ATTRS_H
#define OTELPROF_CONTEXT_THREAD_ATTRS_H

#include <stddef.h>
#include <stdint.h>

#define THREAD_ATTRS_MAX 8 /* kept per sample */

struct thread_attr {
	const char *key; /* from the key map */
	char value[256]; /* NUL-terminated UTF-8 */
};

/*
 * Decode data[0..len) with key map keys[0..nkeys) (NULL entries unusable).
 * Keeps at most max (<= THREAD_ATTRS_MAX) entries, the first of each key;
 * entries with an unknown key, a repeated key, a NUL or invalid UTF-8, and
 * a truncated last entry are dropped and counted in *dropped. Returns the
 * number kept.
 */
size_t thread_attrs_decode(const uint8_t *data, size_t len, char *const *keys,
			   size_t nkeys, struct thread_attr *out, size_t max,
			   uint64_t *dropped);

#endif
