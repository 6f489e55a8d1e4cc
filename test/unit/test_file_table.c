// SPDX-License-Identifier: Apache-2.0
/* The file table shares files by content: a copy becomes the known file's
 * alias, a file with the same size and ends but other bytes does not, a
 * known file that cannot be reread shares nothing, and an alias leaves
 * with its file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files/file_table.h"

#define SIZE (40u << 10)

static char dir[] = "/tmp/otelprof-file-table-XXXXXX";
static unsigned char bytes[SIZE];

/* dir/name holding bytes, with byte at flip (if < SIZE) changed. */
static void write_file(char *path, size_t len, const char *name, size_t flip)
{
	unsigned char *b = malloc(SIZE);
	int fd;

	assert_non_null(b);
	memcpy(b, bytes, SIZE);
	if (flip < SIZE)
		b[flip] ^= 0x5a;
	snprintf(path, len, "%s/%s", dir, name);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, SIZE), SIZE);
	close(fd);
	free(b);
}

/* The reopen the agent gives (through a process); here by path. */
static int reopen_by_path(void *ctx, const struct file *f)
{
	int fd;

	(void)ctx;
	fd = open(f->path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int reopen_fails(void *ctx, const struct file *f)
{
	(void)ctx;
	(void)f;
	return -ENOENT;
}

static struct file *get(struct file_table *t, const char *path, bool *added)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	struct file *f;

	assert_true(fd >= 0);
	f = file_table_get_fd(t, fd, path, 1, 1, added, &err);
	close(fd);
	assert_non_null(f);
	return f;
}

static void copies_shared_others_apart(void **state)
{
	char a[256], b[256], mid[256], head[256];
	struct file_table t;
	struct file *fa, *fb, *fm, *fh;
	struct file_id idb;
	bool added;
	int fd;

	(void)state;
	write_file(a, sizeof(a), "a", SIZE);
	write_file(b, sizeof(b), "b", SIZE);	       /* a copy */
	write_file(mid, sizeof(mid), "mid", SIZE / 2); /* same ends */
	write_file(head, sizeof(head), "head", 10);    /* other key */
	file_table_init(&t);
	file_table_share_by_content(&t, reopen_by_path, NULL);

	fa = get(&t, a, &added);
	assert_true(added);
	fb = get(&t, b, &added);
	assert_false(added);
	assert_ptr_equal(fb, fa);
	assert_int_equal(fa->refcnt, 2);
	assert_int_equal(fa->naliases, 1);
	assert_int_equal(t.counters.shared, 1);
	/* b's identity now finds a without a comparison. */
	fb = get(&t, b, &added);
	assert_ptr_equal(fb, fa);
	assert_int_equal(t.counters.shared, 1);

	fm = get(&t, mid, &added);
	assert_true(added);
	assert_ptr_not_equal(fm, fa);
	assert_int_equal(t.counters.share_mismatch, 1);
	fh = get(&t, head, &added);
	assert_true(added);
	assert_int_equal(t.counters.share_mismatch, 1);

	/* The alias leaves with its file. */
	fd = open(b, O_RDONLY);
	assert_int_equal(file_id_of_fd(fd, &idb), 0);
	close(fd);
	for (int i = 0; i < 3; i++)
		file_table_put(&t, fa);
	file_table_sweep(&t, 0);
	assert_null(file_table_find(&t, &idb));
	file_table_free(&t);

	/* A file takes at most FILE_MAX_ALIASES aliases; further copies are
	 * files of their own. */
	file_table_init(&t);
	file_table_share_by_content(&t, reopen_by_path, NULL);
	fa = get(&t, a, &added);
	for (uint32_t i = 0; i <= FILE_MAX_ALIASES; i++) {
		char cp[256], name[32];

		snprintf(name, sizeof(name), "copy%u", i);
		write_file(cp, sizeof(cp), name, SIZE);
		fb = get(&t, cp, &added);
		assert_int_equal(added, i == FILE_MAX_ALIASES);
		unlink(cp);
	}
	assert_int_equal(fa->naliases, FILE_MAX_ALIASES);
	file_table_free(&t);

	/* A known file that cannot be read again shares nothing. */
	file_table_init(&t);
	file_table_share_by_content(&t, reopen_fails, NULL);
	fa = get(&t, a, &added);
	fb = get(&t, b, &added);
	assert_true(added);
	assert_ptr_not_equal(fa, fb);
	assert_int_equal(t.counters.shared, 0);
	assert_int_equal(t.counters.share_unverified, 1);
	file_table_free(&t);

	/* Without sharing (the default) a copy is a file of its own. */
	file_table_init(&t);
	fa = get(&t, a, &added);
	fb = get(&t, b, &added);
	assert_true(added);
	assert_ptr_not_equal(fa, fb);
	file_table_free(&t);
	(void)fh;
	unlink(a);
	unlink(b);
	unlink(mid);
	unlink(head);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(copies_shared_others_apart),
	};
	int r;

	srand(11);
	for (size_t i = 0; i < SIZE; i++)
		bytes[i] = (unsigned char)rand();
	if (!mkdtemp(dir))
		return 1;
	r = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return r;
}
