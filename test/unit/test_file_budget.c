// SPDX-License-Identifier: Apache-2.0
/*
 * The memory budget of data derived from mapped files, beyond symbols:
 * MiniDebugInfo decompression (an xz bomb is refused at the budget, not at
 * the fixed output cap), files evicted for the total budget read again
 * when a sample needs them, and a big file's read put off while the
 * loader's queue is full.
 */
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
#include <sys/eventfd.h>
#include <unistd.h>

#include <lzma.h>

#include "elf/debug_info.h"
#include "filestore/file_cache.h"
#include "util/mem_budget.h"

/* Decoded symbol names (elf_symbols_name). */
static char name_buf[ELF_SYM_NAME_BUF];

/* An xz stream of n zero bytes (a few KiB for any n here). */
static uint8_t *xz_zeros(size_t n, size_t *len)
{
	uint8_t *zeros = calloc(1, n), *out = malloc(1u << 20);
	size_t pos = 0;

	assert_non_null(zeros);
	assert_non_null(out);
	assert_int_equal(lzma_easy_buffer_encode(0, LZMA_CHECK_CRC64, NULL,
						 zeros, n, out, &pos, 1u << 20),
			 LZMA_OK);
	free(zeros);
	*len = pos;
	return out;
}

/* 48 MiB of zeros from a few KiB: within an unlimited account it inflates
 * whole; an 8 MiB account refuses it (-EDQUOT) before holding more than
 * its budget, and gets every byte back either way. */
static void xz_bomb_refused_at_budget(void **state)
{
	const size_t n = 48u << 20;
	struct mem_budget b;
	struct mem_account a;
	uint8_t *xz, *out;
	size_t len, out_len;

	(void)state;
	xz = xz_zeros(n, &len);
	assert_true(len < (64u << 10));

	mem_budget_init(&b, 1ull << 30, 1ull << 30);
	mem_account_init(&a, &b);
	assert_int_equal(debug_info_unxz(xz, len, &out, &out_len, &a), 0);
	assert_int_equal(out_len, n);
	assert_int_equal(atomic_load(&a.bytes), n);
	free(out);
	mem_account_uncharge(&a, out_len);
	assert_int_equal(mem_budget_used(&b), 0);

	mem_budget_init(&b, 8u << 20, 8u << 20);
	mem_account_init(&a, &b);
	assert_int_equal(debug_info_unxz(xz, len, &out, &out_len, &a), -EDQUOT);
	assert_null(out);
	assert_int_equal(out_len, 0);
	assert_int_equal(atomic_load(&a.bytes), 0);
	assert_true(atomic_load(&b.refused) >= 1);
	free(xz);
}

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define LIBM "/lib/x86_64-linux-gnu/libm.so.6"

/* The files the cache's entries are of; the symbolizer alone reads them
 * (no unwinder here). */
static struct file_table table;

static void cache_init(struct file_cache *c)
{
	file_table_init(&table);
	file_cache_init(c, &table);
}

static void cache_free(struct file_cache *c)
{
	file_table_free(&table);
	file_cache_free(c);
}

static struct elf_file *load(struct file_cache *c, const char *path, int *fd)
{
	struct file_added a = {-1, NULL, 0, -1};
	struct file *file;
	bool added;
	int err = 0;

	*fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(*fd >= 0);
	file = file_table_get_fd(&table, *fd, path, 0, 0, &added, &err);
	assert_non_null(file);
	assert_true(added);
	a.fd = *fd;
	assert_true(file_cache_file_added(c, file, &a) >= 0);
	return file_cache_of(c, file);
}

/* What a file's symbols (with its debug file's) cost on their own. */
static uint64_t cost_of(const char *path)
{
	struct file_cache c;
	struct elf_file *f;
	uint64_t used;
	int fd;

	cache_init(&c);
	f = load(&c, path, &fd);
	used = mem_budget_used(&c.budget);
	file_table_put(&table, f->file);
	cache_free(&c);
	close(fd);
	return used;
}

static uint64_t libc_cost(void)
{
	return cost_of(LIBC);
}

/* Puts back two files loaded into c and frees the cache. */
static void two_files_done(struct file_cache *c, struct elf_file *a,
			   struct elf_file *b, int fa, int fb)
{
	file_table_put(&table, a->file);
	file_table_put(&table, b->file);
	cache_free(c);
	close(fa);
	close(fb);
}

/* libc loses its symbols to make room for libm (the total budget holds
 * one of them and a file's budget), is read again when due, named again,
 * and counted; a different file is never taken for it. */
static void evicted_file_reloaded(void **state)
{
	uint64_t cost = libc_cost(), per_file = cost + (1u << 20);
	struct file_cache c;
	struct elf_file *a, *b;
	const struct elf_sym *sym;
	uint64_t malloc_addr;
	int fa, fb;

	(void)state;
	assert_true(cost > (64u << 10));
	cache_init(&c);
	file_cache_set_budget(&c, cost + per_file - 1, per_file);
	a = load(&c, LIBC, &fa);
	assert_true(a->sym.n > 1000);
	sym = NULL;
	for (size_t i = 0; i < a->sym.n && !sym; i++)
		if (!strcmp(elf_symbols_name(&a->sym, &a->sym.syms[i],
					     name_buf),
			    "malloc"))
			sym = &a->sym.syms[i];
	assert_non_null(sym);
	malloc_addr = sym->addr;

	b = load(&c, LIBM, &fb);
	assert_true(a->evicted);
	assert_int_equal(a->sym.n, 0);
	assert_null(elf_symbols_lookup(&a->sym, malloc_addr));
	assert_int_equal(c.counters.evictions, 1);
	/* Not at once: a second after the eviction. */
	assert_false(file_cache_reload_due(a));
	a->reload_after_ns = 0;
	assert_true(file_cache_reload_due(a));
	assert_int_equal(file_cache_reload(&c, a, fb, LIBM, -1), -ESTALE);
	assert_true(a->evicted);
	a->reload_after_ns = 0;
	assert_int_equal(file_cache_reload(&c, a, fa, LIBC, -1), 0);
	assert_false(a->evicted);
	sym = elf_symbols_lookup(&a->sym, malloc_addr);
	assert_non_null(sym);
	assert_string_equal(elf_symbols_name(&a->sym, sym, name_buf), "malloc");
	assert_int_equal(c.counters.reloads, 1);
	assert_true(mem_budget_used(&c.budget) <= c.budget.limit);
	two_files_done(&c, a, b, fa, fb);
}

/* A small file read again makes room for what it held before, not for a
 * whole file's budget: libm, evicted for libc's first read, comes back
 * beside libc instead of evicting it (which, when the big file was read
 * again in turn, left neither named for long). */
static void small_reload_keeps_big_file(void **state)
{
	uint64_t big = libc_cost(), small = cost_of(LIBM),
		 per_file = 2 * big + (1u << 20);
	struct file_cache c;
	struct elf_file *a, *b;
	int fa, fb;

	(void)state;
	assert_true(small < big / 4);
	cache_init(&c);
	/* libc's first read needs a whole file's budget: libm goes */
	file_cache_set_budget(&c, small + per_file - 1, per_file);
	b = load(&c, LIBM, &fb);
	assert_false(b->evicted);
	a = load(&c, LIBC, &fa);
	assert_true(b->evicted);
	assert_false(a->evicted);
	assert_int_equal(c.counters.evictions, 1);
	assert_true(atomic_load(&b->acct.peak) >= small);

	b->reload_after_ns = 0;
	assert_int_equal(file_cache_reload(&c, b, fb, LIBM, -1), 0);
	assert_false(b->evicted);
	assert_false(a->evicted);
	assert_true(a->sym.n > 1000);
	assert_int_equal(c.counters.evictions, 1);
	assert_int_equal(c.counters.reloads, 1);
	assert_true(mem_budget_used(&c.budget) <= c.budget.limit);
	two_files_done(&c, a, b, fa, fb);
}

/* An idle file (no mapping refers to it) evicted for the budget goes
 * whole: the cache's entry at once, the file itself out of the table's
 * index and into its gone files, its slot kept until released (the other
 * stages' tables are by slot). */
static void idle_file_evicted_whole(void **state)
{
	uint64_t cost = libc_cost(), per_file = cost + (1u << 20);
	struct file_cache c;
	struct elf_file *a, *b;
	struct file *fa_file;
	struct file_id id;
	uint32_t slot;
	int fa, fb;

	(void)state;
	cache_init(&c);
	file_cache_set_budget(&c, cost + per_file - 1, per_file);
	a = load(&c, LIBC, &fa);
	fa_file = a->file;
	slot = fa_file->slot;
	id = fa_file->id;
	file_table_put(&table, fa_file); /* idle now */
	b = load(&c, LIBM, &fb);
	assert_non_null(b);
	assert_int_equal(c.counters.evictions, 1);
	assert_null(file_cache_of(&c, fa_file)); /* the entry went */
	assert_null(file_table_find(&table, &id));
	assert_true(fa_file->gone);
	assert_ptr_equal(file_table_at(&table, slot), fa_file);
	assert_ptr_equal(file_table_take_gone(&table), fa_file);
	assert_null(file_table_take_gone(&table));
	file_table_release(&table, fa_file);
	assert_null(file_table_at(&table, slot));
	file_table_put(&table, b->file);
	cache_free(&c);
	close(fa);
	close(fb);
}

/* FILE_LOADER_MAX_JOBS + 1 big files added at once (one scan of a process
 * that maps hundreds): the loader's queue takes FILE_LOADER_MAX_JOBS, the
 * next is refused (-EAGAIN), counted, and leaves no entry, so that its
 * mapping tries again in a later pass; once the finished loads are taken,
 * the same file is accepted. Loads count until taken, so this does not
 * depend on how fast the loader reads. */
static void full_loader_queue_puts_a_read_off(void **state)
{
	enum { N = FILE_LOADER_MAX_JOBS + 1 };
	char dir[] = "/tmp/otelprof-loaderq-XXXXXX", path[64];
	struct file_added a = {-1, NULL, 0, -1};
	struct file *files[N];
	struct file_cache c;
	int fds[N], efd, busy_ms = 0;
	bool added;

	(void)state;
	assert_non_null(mkdtemp(dir));
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	cache_init(&c);
	assert_int_equal(file_cache_start_loader(&c, efd), 0);
	for (int i = 0; i < N; i++) {
		int err = 0;

		snprintf(path, sizeof(path), "%s/big-%02d", dir, i);
		fds[i] = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		assert_true(fds[i] >= 0);
		/* distinct files of the loader's size: not ELF (read, and
		 * refused as malformed, on the loader) */
		assert_int_equal(pwrite(fds[i], &i, sizeof(i), 0), sizeof(i));
		assert_int_equal(ftruncate(fds[i], FILE_LOADER_MIN_BYTES), 0);
		files[i] = file_table_get_fd(&table, fds[i], path, 0, 0, &added,
					     &err);
		assert_non_null(files[i]);
		assert_true(added);
		a.fd = fds[i];
		assert_int_equal(file_cache_file_added(&c, files[i], &a),
				 i < N - 1 ? 1 : -EAGAIN);
	}
	assert_int_equal(c.counters.loads_retried, 1);
	assert_null(file_cache_of(&c, files[N - 1]));
	/* Every load taken back: the queue has room again. */
	for (int taken = 0; taken < N - 1;) {
		int fd;

		if (file_cache_take_load(&c, &fd)) {
			taken++;
			continue;
		}
		assert_true(busy_ms++ < 20000);
		usleep(1000);
	}
	a.fd = fds[N - 1];
	assert_int_equal(file_cache_file_added(&c, files[N - 1], &a), 1);
	assert_int_equal(c.counters.loads_retried, 1);
	file_cache_stop_loader(&c);
	for (int i = 0; i < N; i++) {
		file_table_put(&table, files[i]);
		close(fds[i]);
		snprintf(path, sizeof(path), "%s/big-%02d", dir, i);
		unlink(path);
	}
	rmdir(dir);
	cache_free(&c);
	close(efd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(xz_bomb_refused_at_budget),
		cmocka_unit_test(evicted_file_reloaded),
		cmocka_unit_test(small_reload_keeps_big_file),
		cmocka_unit_test(idle_file_evicted_whole),
		cmocka_unit_test(full_loader_queue_puts_a_read_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
