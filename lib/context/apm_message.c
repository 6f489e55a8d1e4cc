// SPDX-License-Identifier: Apache-2.0
/*
 * The Elastic APM return channel's pure parts (apm_channel.h): checks on
 * what the process says (its socket path, its status), the stack-trace
 * id, the message encoders. No I/O: fuzzed with the context parsers.
 */
#include <errno.h>
#include <string.h>

#include "context/apm_channel.h"

bool apm_socket_path_ok(const char *path, size_t len)
{
	if (!len || len > APM_SOCKET_PATH_MAX || path[0] != '/' ||
	    memchr(path, '\0', len))
		return false;
	for (size_t i = 0; i < len;) {
		size_t j = i;

		while (j < len && path[j] != '/')
			j++;
		if (j - i == 2 && path[i] == '.' && path[i + 1] == '.')
			return false;
		i = j + 1;
	}
	return true;
}

int apm_status_euid(const char *text, size_t len, uint32_t *euid)
{
	const char *end = text + len;

	for (const char *l = text; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		const char *le = nl ? nl : end;

		if (le - l > 4 && !memcmp(l, "Uid:", 4)) {
			const char *q = l + 4;
			uint64_t v = 0;
			int digits = 0;

			/* Real, then effective: skip one number. */
			for (int field = 0; field < 2; field++) {
				while (q < le && (*q == ' ' || *q == '\t'))
					q++;
				v = 0;
				digits = 0;
				while (q < le && *q >= '0' && *q <= '9' &&
				       digits < 11) {
					v = v * 10 + (uint64_t)(*q - '0');
					q++;
					digits++;
				}
				if (!digits || v > UINT32_MAX ||
				    (q < le && *q != ' ' && *q != '\t'))
					return -EINVAL;
			}
			*euid = (uint32_t)v;
			return 0;
		}
		if (!nl)
			break;
		l = nl + 1;
	}
	return -EINVAL;
}

void apm_stack_id(const uint64_t *kernel, uint32_t nkernel,
		  const uint64_t *user, uint32_t nuser, uint8_t out[16])
{
	/* FNV-1a, 128 bits: prime 2^88 + 0x13b. */
	const unsigned __int128 prime = ((unsigned __int128)1 << 88) + 0x13b;
	unsigned __int128 h = ((unsigned __int128)0x6c62272e07bb0142ull << 64) |
			      0x62b821756295c58dull;
	uint64_t w;

	/* The kernel/user split is part of the stack. */
	for (uint32_t i = 0; i < 1 + nkernel + nuser; i++) {
		w = i == 0	   ? nkernel
		    : i <= nkernel ? kernel[i - 1]
				   : user[i - 1 - nkernel];
		for (int b = 0; b < 8; b++) {
			h ^= (uint8_t)(w >> (8 * b));
			h *= prime;
		}
	}
	for (int i = 0; i < 16; i++)
		out[i] = (uint8_t)(h >> (8 * (15 - i)));
}

void apm_stack_id_string(const uint8_t id[16], char out[23])
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t o = 0;

	for (int i = 0; i < 16; i += 3) {
		uint32_t v = (uint32_t)id[i] << 16;
		int n = 16 - i >= 3 ? 3 : 16 - i;

		if (n > 1)
			v |= (uint32_t)id[i + 1] << 8;
		if (n > 2)
			v |= id[i + 2];
		out[o++] = b64[(v >> 18) & 63];
		out[o++] = b64[(v >> 12) & 63];
		if (n > 1)
			out[o++] = b64[(v >> 6) & 63];
		if (n > 2)
			out[o++] = b64[v & 63];
	}
	out[o] = '\0';
}

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2); /* native order, as the agent reads it */
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

size_t apm_encode_registration(uint8_t *buf, size_t cap, uint32_t delay_ms,
			       const char *host_id)
{
	size_t n = host_id ? strnlen(host_id, APM_HOST_ID_MAX) : 0;

	if (cap < 12 + n)
		return 0;
	put16(buf, APM_MSG_REGISTRATION);
	put16(buf + 2, 1);
	put32(buf + 4, delay_ms);
	put32(buf + 8, (uint32_t)n);
	memcpy(buf + 12, host_id, n);
	return 12 + n;
}

size_t apm_encode_correlation(uint8_t *buf, const struct apm_pending *e,
			      uint16_t count)
{
	put16(buf, APM_MSG_CORRELATION);
	put16(buf + 2, 1);
	memcpy(buf + 4, e->trace_id, 16);
	memcpy(buf + 20, e->tx_id, 8);
	memcpy(buf + 28, e->stack_id, 16);
	put16(buf + 44, count);
	return APM_CORRELATION_SIZE;
}
