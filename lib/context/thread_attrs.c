// SPDX-License-Identifier: Apache-2.0
#include "context/thread_attrs.h"

#include <stdbool.h>
#include <string.h>

#include "context/process_context.h"
#include "util/utf8.h"

size_t thread_attrs_decode(const uint8_t *data, size_t len, char *const *keys,
			   size_t nkeys, struct thread_attr *out, size_t max,
			   uint64_t *dropped)
{
	size_t off = 0, n = 0;

	if (max > THREAD_ATTRS_MAX)
		max = THREAD_ATTRS_MAX;
	while (len - off >= 2) {
		uint8_t key = data[off], vlen = data[off + 1];
		const char *name;
		bool dup = false;

		off += 2;
		if (vlen > len - off) {
			(*dropped)++; /* truncated: the rest is unusable */
			break;
		}
		name = keys && key < nkeys ? keys[key] : NULL;
		for (size_t k = 0; name && k < n; k++)
			dup |= out[k].key == name;
		/* thread.id, thread.name, cpu.*: the sample's own, which a
		 * thread must not be able to shadow. */
		if (name && (pctx_key_observer_owned(name) ||
			     !strncmp(name, "cpu.", 4)))
			name = NULL;
		if (!name || dup || n >= max || memchr(data + off, 0, vlen) ||
		    !utf8_valid((const char *)data + off, vlen)) {
			(*dropped)++;
			off += vlen;
			continue;
		}
		out[n].key = name;
		memcpy(out[n].value, data + off, vlen);
		out[n].value[vlen] = '\0';
		off += vlen;
		n++;
	}
	return n;
}
