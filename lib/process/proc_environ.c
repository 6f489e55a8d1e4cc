// SPDX-License-Identifier: Apache-2.0
#include "process/proc_environ.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "process/proc_file.h"
#include "util/utf8.h"

int env_names_parse(const char *list, struct env_names *out, const char **why)
{
	const char *s = list;

	memset(out, 0, sizeof(*out));
	if (!list || !*list)
		return 0;
	for (;;) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);

		if (out->n == ENV_MAX_NAMES) {
			*why = "more than 16 names";
			return -EINVAL;
		}
		if (!len || len > ENV_MAX_NAME_LEN) {
			*why = "a name is empty or longer than 127 bytes";
			return -EINVAL;
		}
		for (size_t i = 0; i < len; i++)
			if (s[i] == '=' || (unsigned char)s[i] <= ' ' ||
			    s[i] == 0x7f) {
				*why = "a name holds '=', white space or a "
				       "control character";
				return -EINVAL;
			}
		memcpy(out->name[out->n], s, len);
		out->name[out->n][len] = '\0';
		memcpy(out->key[out->n], ENV_ATTR_PREFIX,
		       sizeof(ENV_ATTR_PREFIX) - 1);
		memcpy(out->key[out->n] + sizeof(ENV_ATTR_PREFIX) - 1, s, len);
		out->key[out->n][sizeof(ENV_ATTR_PREFIX) - 1 + len] = '\0';
		out->n++;
		if (!end)
			return 0;
		s = end + 1;
	}
}

/* A value fit for a resource attribute: bounded, UTF-8, no control
 * characters (terminal escapes, NULs smuggled in some other encoding). */
static bool value_ok(const char *v, size_t len)
{
	if (len > ENV_MAX_VALUE_LEN || !utf8_valid(v, len))
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)v[i] < ' ' || v[i] == 0x7f)
			return false;
	return true;
}

int env_pick(const char *buf, size_t len, const struct env_names *names,
	     struct proc_env *out, struct env_outcome *o)
{
	bool seen[ENV_MAX_NAMES] = {false};
	size_t pos = 0;

	memset(out, 0, offsetof(struct proc_env, v));
	if (!len)
		return 0;
	if (buf[len - 1] != '\0') {
		o->refused++;
		return -EINVAL;
	}
	while (pos < len) {
		const char *e = buf + pos;
		size_t elen = strlen(e); /* ends at the NUL checked above */
		const char *eq = memchr(e, '=', elen);

		pos += elen + 1;
		if (!eq)
			continue;
		for (uint32_t k = 0; k < names->n; k++) {
			size_t nlen = strlen(names->name[k]);
			size_t vlen = elen - nlen - 1;

			if (seen[k] || (size_t)(eq - e) != nlen ||
			    memcmp(e, names->name[k], nlen))
				continue;
			seen[k] = true;
			if (!value_ok(eq + 1, vlen)) {
				o->dropped++;
				break;
			}
			out->v[out->n].name = (uint8_t)k;
			memcpy(out->v[out->n].value, eq + 1, vlen);
			out->v[out->n].value[vlen] = '\0';
			out->n++;
			break;
		}
	}
	return 0;
}

struct proc_env *proc_env_read(const char *path, const struct env_names *names,
			       struct env_outcome *o)
{
	struct proc_env env, *copy;
	char *text;
	long len;

	if (!names || !names->n)
		return NULL;
	len = proc_read_file(path, &text, ENV_MAX_BYTES);
	if (len == -EFBIG)
		o->refused++;
	if (len < 0)
		return NULL; /* gone, a kernel thread, no permission */
	if (env_pick(text, (size_t)len, names, &env, o) || !env.n) {
		free(text);
		return NULL;
	}
	free(text);
	copy = malloc(offsetof(struct proc_env, v) + env.n * sizeof(env.v[0]));
	if (copy)
		memcpy(copy, &env,
		       offsetof(struct proc_env, v) + env.n * sizeof(env.v[0]));
	return copy;
}
