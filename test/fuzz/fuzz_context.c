// SPDX-License-Identifier: Apache-2.0
/*
 * Context parsers: the OTEP 4719 header protocol and ProcessContext
 * payload, Elastic v1 process storage (and its socket path), OTEP 4947
 * thread attributes, the Uid line of /proc/PID/status. The first
 * byte picks the parser; for the header protocol the rest is a fake address
 * space at 0x10000.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "context/apm_channel.h"
#include "context/process_context.h"
#include "context/thread_attrs.h"

struct fake_mem {
	const uint8_t *p;
	size_t n;
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct fake_mem *m = ctx;

	if (addr < 0x10000 || addr - 0x10000 > m->n ||
	    len > m->n - (addr - 0x10000))
		return -14;
	memcpy(buf, m->p + (addr - 0x10000), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct process_context c;
	struct fake_mem m;

	if (!size)
		return 0;
	memset(&c, 0, sizeof(c));
	m.p = data + 1;
	m.n = size - 1;
	switch (data[0] % 6) {
	case 0:
		if (!process_context_decode(data + 1, size - 1, &c))
			process_context_free(&c);
		break;
	case 1:
		if (!elastic_storage_decode(data + 1, size - 1, &c)) {
			if (c.socket_path &&
			    !apm_socket_path_ok(c.socket_path,
						strlen(c.socket_path)))
				__builtin_trap();
			process_context_free(&c);
		}
		break;
	case 5: {
		uint32_t euid;

		(void)apm_status_euid((const char *)data + 1, size - 1, &euid);
		(void)apm_socket_path_ok((const char *)data + 1, size - 1);
		break;
	}
	case 2:
		process_context_read(0x10000, 0x10000 + m.n, fake_read, &m, &c);
		process_context_free(&c);
		break;
	case 4: {
		static char k0[] = "http.route", k2[] = "user.id";
		static char *const keys[] = {k0, NULL, k2};
		struct thread_attr attrs[THREAD_ATTRS_MAX];
		uint64_t dropped = 0;
		size_t n =
			thread_attrs_decode(data + 1, size - 1, keys, 3, attrs,
					    THREAD_ATTRS_MAX, &dropped);

		for (size_t i = 0; i < n; i++)
			if (strlen(attrs[i].value) > 255)
				__builtin_trap();
		break;
	}
	default:
		if (size >= 9) {
			uint64_t a;

			memcpy(&a, data + 1, 8);
			elastic_storage_read(a, fake_read, &m, &c);
			process_context_free(&c);
		}
		break;
	}
	return 0;
}
