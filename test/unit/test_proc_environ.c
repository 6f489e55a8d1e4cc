// SPDX-License-Identifier: Apache-2.0
/*
 * include_env_vars: the name list, picking values out of an environ image,
 * and what hostile images get (refused whole, values dropped), through the
 * file reader the process table uses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/proc_environ.h"

static void names(void **state)
{
	struct env_names n;
	const char *why = NULL;
	char many[64 * 17];

	(void)state;
	assert_int_equal(env_names_parse(NULL, &n, &why), 0);
	assert_int_equal(n.n, 0);
	assert_int_equal(env_names_parse("DEPLOY_ENV,HOME", &n, &why), 0);
	assert_int_equal(n.n, 2);
	assert_string_equal(n.name[1], "HOME");
	assert_string_equal(n.key[0],
			    "process.environment_variable.DEPLOY_ENV");
	assert_int_equal(env_names_parse("A,,B", &n, &why), -EINVAL);
	assert_int_equal(env_names_parse("A=1", &n, &why), -EINVAL);
	assert_int_equal(env_names_parse("A B", &n, &why), -EINVAL);
	assert_int_equal(env_names_parse("A,", &n, &why), -EINVAL);
	many[0] = '\0';
	for (int i = 0; i < 17; i++)
		sprintf(many + strlen(many), "%sV%d", i ? "," : "", i);
	assert_int_equal(env_names_parse(many, &n, &why), -EINVAL);
	assert_non_null(strstr(why, "16"));
	memset(many, 'N', 128);
	many[128] = '\0';
	assert_int_equal(env_names_parse(many, &n, &why), -EINVAL);
	many[127] = '\0';
	assert_int_equal(env_names_parse(many, &n, &why), 0);
}

static void pick(void **state)
{
	static const char env[] = "HOME=/root\0DEPLOY=canary\0NOEQ\0"
				  "DEPLOYX=no\0DEPLOY=second\0EMPTY=\0";
	struct env_names n;
	struct proc_env out;
	struct env_outcome o = {0, 0};
	const char *why;

	(void)state;
	assert_int_equal(env_names_parse("DEPLOY,EMPTY,ABSENT,HOME", &n, &why),
			 0);
	assert_int_equal(env_pick(env, sizeof(env) - 1, &n, &out, &o), 0);
	assert_int_equal(out.n, 3);
	assert_int_equal(out.v[0].name, 3); /* HOME, in environ order */
	assert_string_equal(out.v[0].value, "/root");
	assert_int_equal(out.v[1].name, 0); /* the first DEPLOY wins */
	assert_string_equal(out.v[1].value, "canary");
	assert_int_equal(out.v[2].name, 1);
	assert_string_equal(out.v[2].value, "");
	assert_int_equal(o.refused + o.dropped, 0);
}

static void hostile(void **state)
{
	struct env_names n;
	struct proc_env out;
	struct env_outcome o = {0, 0};
	const char *why;
	char buf[600];

	(void)state;
	assert_int_equal(env_names_parse("A,B,C", &n, &why), 0);
	/* Not NUL-terminated: refused whole. */
	assert_int_equal(env_pick("A=1\0B=2", 7, &n, &out, &o), -EINVAL);
	assert_int_equal(o.refused, 1);
	/* Binary, a control character, invalid UTF-8, too long: dropped,
	 * the good one kept. */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "A=\x1b[31mred", 10);
	memcpy(buf + 11, "B=\xff\xfe", 4);
	memcpy(buf + 16, "C=", 2);
	memset(buf + 18, 'x', 257);
	assert_int_equal(env_pick(buf, 18 + 257 + 1, &n, &out, &o), 0);
	assert_int_equal(out.n, 0);
	assert_int_equal(o.dropped, 3);
	/* 256 bytes is the limit, UTF-8 is kept. */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "C=", 2);
	memset(buf + 2, 'x', 254);
	memcpy(buf + 256, "\xc3\xa9", 2);
	assert_int_equal(env_pick(buf, 259, &n, &out, &o), 0);
	assert_int_equal(out.n, 1);
	assert_int_equal(strlen(out.v[0].value), 256);
}

/* The reader: a file over 64 KiB is refused whole (counted); an absent
 * file is not hostile (not counted). */
static void reader(void **state)
{
	char path[] = "/tmp/test_proc_environ.XXXXXX";
	struct env_names n;
	struct env_outcome o = {0, 0};
	struct proc_env *e;
	const char *why;
	char *big;
	int fd;

	(void)state;
	assert_int_equal(env_names_parse("A", &n, &why), 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "A=1\0", 4), 4);
	e = proc_env_read(path, &n, &o);
	assert_non_null(e);
	assert_string_equal(e->v[0].value, "1");
	free(e);
	big = calloc(1, ENV_MAX_BYTES + 8);
	assert_non_null(big);
	memset(big, 'y', ENV_MAX_BYTES);
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, "A=1\0", 4, 0), 4);
	assert_int_equal(pwrite(fd, big, ENV_MAX_BYTES + 1, 4),
			 ENV_MAX_BYTES + 1);
	assert_null(proc_env_read(path, &n, &o));
	assert_int_equal(o.refused, 1);
	close(fd);
	unlink(path);
	free(big);
	assert_null(proc_env_read(path, &n, &o));
	assert_int_equal(o.refused, 1);
	assert_int_equal(o.dropped, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names),
		cmocka_unit_test(pick),
		cmocka_unit_test(hostile),
		cmocka_unit_test(reader),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
