// SPDX-License-Identifier: Apache-2.0
#include "process/proc_info.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

int proc_stat_parse_starttime(const char *text, size_t len, uint64_t *out)
{
	const char *p = NULL, *end = text + len;
	int field = 2; /* the ')' closes field 2 (comm) */
	uint64_t v = 0;
	int digits = 0;

	for (size_t i = len; i > 0; i--) {
		if (text[i - 1] == ')') {
			p = text + i;
			break;
		}
	}
	if (!p)
		return -EINVAL;
	while (p < end && field < 22) {
		if (*p == ' ') {
			field++;
			while (p < end && *p == ' ')
				p++;
			continue;
		}
		p++;
	}
	if (field != 22)
		return -EINVAL;
	while (p < end && *p >= '0' && *p <= '9' && digits < 20) {
		v = v * 10 + (uint64_t)(*p - '0');
		p++;
		digits++;
	}
	if (!digits)
		return -EINVAL;
	*out = v;
	return 0;
}

int proc_stat_parse_comm(const char *text, size_t len, char out[16])
{
	const char *open = memchr(text, '(', len), *close = NULL;
	size_t n;

	for (size_t i = len; i > 0 && open; i--) {
		if (text[i - 1] == ')') {
			close = text + i - 1;
			break;
		}
	}
	if (!open || !close || close <= open)
		return -EINVAL;
	n = (size_t)(close - open - 1);
	if (n > 15)
		n = 15;
	memcpy(out, open + 1, n);
	out[n] = '\0';
	return 0;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (c >= 'A' && c <= 'F');
}

int proc_cgroup_parse_container_id(const char *text, size_t len,
				   char out[CONTAINER_ID_LEN + 1])
{
	bool found = false;
	size_t i = 0;

	while (i < len) {
		size_t run;

		if (!is_hex(text[i])) {
			i++;
			continue;
		}
		for (run = 0; i + run < len && is_hex(text[i + run]); run++)
			;
		/* Exactly 64 hex digits, delimited by non-hex characters:
		 * avoids matching inside longer hex strings. */
		if (run == CONTAINER_ID_LEN) {
			for (size_t k = 0; k < CONTAINER_ID_LEN; k++) {
				char c = text[i + k];

				out[k] = (c >= 'A' && c <= 'F') ? (char)(c + 32)
								: c;
			}
			out[CONTAINER_ID_LEN] = '\0';
			found = true;
		}
		i += run;
	}
	return found ? 0 : -ENOENT;
}
