// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for include_env_vars through the production path: the
 * input is written to a file that proc_env_read reads (bounded read, then
 * the environ parser), as the process table reads /proc/PID/environ.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/proc_environ.h"

/* A real file: proc_read_file opens with O_NOFOLLOW, so /dev/fd links
 * would not do. Left in /tmp (one per fuzzing process). */
static char path[] = "/tmp/fuzz_environ.XXXXXX";
static int fd = -1;
static struct env_names names;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct env_outcome o = {0, 0};
	struct proc_env *e;
	const char *why;

	if (fd < 0) {
		fd = mkstemp(path);
		if (fd < 0)
			abort();
		if (env_names_parse("HOME,A,DEPLOY_ENV,X", &names, &why))
			abort();
	}
	if (ftruncate(fd, 0) ||
	    (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
	e = proc_env_read(path, &names, &o);
	/* What is kept is bounded and printable. */
	for (uint32_t i = 0; e && i < e->n; i++) {
		size_t len = strlen(e->v[i].value);

		if (e->v[i].name >= names.n || len > ENV_MAX_VALUE_LEN)
			__builtin_trap();
		for (size_t k = 0; k < len; k++)
			if ((unsigned char)e->v[i].value[k] < ' ')
				__builtin_trap();
	}
	if (o.refused > 1)
		__builtin_trap();
	free(e);
	return 0;
}
