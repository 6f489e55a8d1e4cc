// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for mapped files the way production reads them: a real
 * file descriptor (memfd) through elf_symbols_load_fd (ELF shape checks,
 * streamed symbol tables, string tables, notes, TLS scan, .gopclntab, PLT)
 * with a memory budget, then unwind_table_build_fd and elf_htlhash_fd on
 * the same file. The file may be sparse and large:
 *   input = u64 apparent size (little-endian; clamped to 1 GiB) || bytes
 *           written at offset 0
 * so a few KiB describe 8M section headers or overlapping 256 MiB symbol
 * tables (test/fuzz/regressions/elf_file/). Checks: the budget's books
 * balance (nothing charged after free), it is never exceeded, every kept
 * symbol resolves to a terminated name.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf/elf_file.h"
#include "unwind/unwind_table.h"
#include "util/mem_budget.h"

#define MAX_APPARENT (1ull << 30)

static int fd = -1;
static char name_buf[ELF_SYM_NAME_BUF];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem_budget budget;
	struct mem_account acct;
	struct elf_symbols s;
	struct unwind_table t;
	struct unwind_table_stats st = {0};
	uint64_t apparent;
	char htl[33];

	if (size < 8)
		return 0;
	memcpy(&apparent, data, 8);
	data += 8;
	size -= 8;
	if (apparent > MAX_APPARENT)
		apparent = MAX_APPARENT;
	if (apparent < size)
		apparent = size;
	if (fd < 0)
		fd = memfd_create("fuzz_elf_file", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) || ftruncate(fd, (off_t)apparent) ||
	    pwrite(fd, data, size, 0) != (ssize_t)size)
		__builtin_trap();

	mem_budget_init(&budget, 64ull << 20, 32ull << 20);
	mem_account_init(&acct, &budget);
	if (!elf_symbols_load_fd(fd, &s, &acct)) {
		/* Go lines are read when a frame needs them: the same bytes. */
		(void)elf_symbols_load_go_lines(&s, fd);
		if (mem_budget_used(&budget) > budget.limit ||
		    atomic_load(&acct.bytes) != s.charged)
			__builtin_trap();
		for (size_t i = 0; i < s.n; i++) {
			const struct elf_sym *sym =
				elf_symbols_lookup(&s, s.syms[i].addr);

			if (!sym || s.syms[i].name >= s.names.len ||
			    !*elf_symbols_name(&s, sym, name_buf))
				__builtin_trap();
		}
		elf_symbols_free(&s);
	}
	if (mem_budget_used(&budget) || atomic_load(&acct.bytes))
		__builtin_trap(); /* a charge without its uncharge */
	if (!unwind_table_build_fd(fd, &t, &st)) {
		for (size_t i = 1; i < t.nrows; i++)
			if (t.rows[i - 1].pc >= t.rows[i].pc)
				__builtin_trap();
		unwind_table_free(&t);
	}
	(void)elf_htlhash_fd(fd, htl);
	return 0;
}
