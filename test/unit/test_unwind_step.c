// SPDX-License-Identifier: Apache-2.0
/*
 * The unwinding step the BPF program runs (ebpf/unwind_step.h), compiled
 * into userspace and run on a snapshot of this very process: registers and
 * the top 16 KiB of stack taken inside a known call chain, built with
 * -O2 (no frame pointers). The snapshot is unwound through
 * process_unwind_copy exactly as a sample's stack copy would be, and the
 * frames must name the chain up to _start.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filestore/file_cache.h"
#include "process/proc_file.h"
#include "process/process_table.h"
#include "profiler_types.h"
#include "unwind/process_unwind.h"
#include "unwind_alone.h"

/* Decoded symbol names (elf_symbols_name). */
static char name_buf[ELF_SYM_NAME_BUF];

static struct otelprof_sample_event snap;
static int snap_whole; /* the copy reached the top of the stack */

static uint64_t stack_end(uint64_t sp)
{
	char *text;
	long n = proc_read_file("/proc/self/maps", &text, PROC_MAPS_MAX_BYTES);
	uint64_t end = 0;

	/* proc_maps keeps executable mappings only: find [stack] here. */
	if (n > 0) {
		char *line = strstr(text, "[stack]");

		while (line && line > text && line[-1] != '\n')
			line--;
		if (line) {
			unsigned long long a, b;

			if (sscanf(line, "%llx-%llx", &a, &b) == 2 && sp >= a &&
			    sp < b)
				end = b;
		}
		free(text);
	}
	return end;
}

/* Reading the live stack crosses ASan's redzones on purpose. */
__attribute__((noinline, no_sanitize("address"))) static void
take_snapshot(void)
{
	uint64_t ip, sp, bp, end, len;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(ip), "=r"(sp), "=r"(bp));
	end = stack_end(sp);
	len = end > sp ? end - sp : 0;
	snap_whole = len <= OTELPROF_STACK_COPY_BYTES;
	if (len > OTELPROF_STACK_COPY_BYTES)
		len = OTELPROF_STACK_COPY_BYTES; /* what the kernel would copy
						  */
	for (uint64_t i = 0; i < len / 8; i++)
		snap.words[i] = ((const volatile uint64_t *)(uintptr_t)sp)[i];
	snap.user_ip = ip;
	snap.user_sp = sp;
	snap.user_bp = bp;
	snap.n_user = (uint32_t)(len / 8);
	snap.flags = OTELPROF_SAMPLE_F_STACK_COPY;
}

__attribute__((noinline)) void chain_level_c(int x)
{
	volatile char pad[200]; /* a frame with locals: CFA = rsp + N */

	pad[x & 7] = 1;
	take_snapshot();
	x = pad[x & 7];
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void chain_level_b(int x)
{
	chain_level_c(x + 1);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void chain_level_a(int x)
{
	chain_level_b(x + 1);
	__asm__ volatile("" ::: "memory");
}

static struct file_table table;
static struct file_cache files;

static const char *name_of(struct process_table *t, struct process *p,
			   uint64_t pc, int return_address)
{
	struct proc_mapping *m = proc_maps_find_mut(&p->maps, pc);
	struct elf_file *f;
	const struct elf_sym *sym;
	uint64_t vaddr;

	if (!m)
		return "?";
	(void)t;
	(void)p;
	f = file_cache_of(&files, m->file); /* resolved by the sync */
	if (!f ||
	    !elf_symbols_vaddr(&f->sym, pc - m->start + m->offset, &vaddr))
		return "?";
	sym = elf_symbols_lookup(&f->sym, vaddr - (uint64_t)return_address);
	return sym ? elf_symbols_name(&f->sym, sym, name_buf) : "?";
}

static void unwinds_own_stack_snapshot(void **state)
{
	struct process_table procs;
	struct process_unwind pu;
	struct process *p;
	/* static: 4 KiB off the stack, which an 8 KiB copy must cover. */
	static uint64_t frames[OTELPROF_MAX_USER_FRAMES];
	struct unwind_copy walk;
	uint32_t n;
	const char *want[] = {"take_snapshot", "chain_level_c", "chain_level_b",
			      "chain_level_a", "unwinds_own_stack_snapshot"};
	int found_main = 0;

	(void)state;
	chain_level_a(0);
	assert_true(snap.n_user > 64);

	file_table_init(&table);
	file_cache_init(&files, &table);
	process_table_init(&procs, &table);
	process_unwind_init(&pu, &procs, &files, -1, -1);
	p = process_table_get(&procs, (uint32_t)getpid(), NULL, 0, 1);
	unwind_alone_sync(&pu);
	assert_non_null(p);
	process_unwind_copy(&pu, p, &snap, frames, OTELPROF_MAX_USER_FRAMES,
			    &walk);
	n = walk.n;
	assert_true(n >= 8);
	/* Tables were built for this binary and libc at least. */
	assert_true(pu.maps.counters.files >= 2);
	for (uint32_t i = 0; i < n; i++)
		print_message("  #%u %s\n", i,
			      name_of(&procs, p, frames[i], i > 0));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_string_equal(name_of(&procs, p, frames[i], i > 0),
				    want[i]);
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(name_of(&procs, p, frames[i], 1), "main"))
			found_main = 1;
	if (walk.flags & OTELPROF_SAMPLE_F_COMPLETE) {
		assert_true(found_main);
		assert_string_equal(name_of(&procs, p, frames[n - 1], 1),
				    "_start");
	} else {
		/* Only a copy shorter than the stack may cut the walk (a
		 * sanitizer build's frames are bigger than 8 KiB). */
		print_message("  (copy shorter than the stack: cut)\n");
		assert_false(snap_whole);
	}

	/* A cut copy stops cleanly, not complete, never past the copy. */
	snap.n_user = 8;
	process_unwind_copy(&pu, p, &snap, frames, OTELPROF_MAX_USER_FRAMES,
			    &walk);
	n = walk.n;
	assert_true(n >= 1 && n < 8);
	assert_false(walk.flags & OTELPROF_SAMPLE_F_COMPLETE);

	/* A frame limit truncates. */
	chain_level_a(0);
	process_unwind_copy(&pu, p, &snap, frames, 3, &walk);
	n = walk.n;
	assert_int_equal(n, 3);
	assert_true(walk.flags & OTELPROF_SAMPLE_F_TRUNCATED);

	/* Garbage registers: no crash, a short stack. */
	snap.user_ip = 0x1234;
	snap.user_sp = 0x10;
	process_unwind_copy(&pu, p, &snap, frames, OTELPROF_MAX_USER_FRAMES,
			    &walk);
	n = walk.n;
	assert_true(n <= 1);

	/* Identity is pid + start time: the same start finds the same
	 * entry, another start is a reused pid and gets a fresh one. */
	{
		uint64_t serial = p->serial,
			 tick = 1000000000ull / (uint64_t)procs.clk_tck;

		assert_true(p->start_time > 0);
		p = process_table_get(&procs, (uint32_t)getpid(), NULL,
				      p->start_time * tick + tick / 2, 6);
		unwind_alone_sync(&pu);
		assert_int_equal(p->serial, serial);
		p = process_table_get(&procs, (uint32_t)getpid(), NULL,
				      (p->start_time + 1) * tick, 7);
		unwind_alone_sync(&pu);
		assert_non_null(p);
		assert_true(p->serial != serial);
		assert_int_equal(procs.counters.pid_reuses, 1);
	}

	process_table_free(&procs);
	file_table_free(&table);
	file_cache_free(&files);
	/* After the files: dropping their tables frees row chunk ids. */
	process_unwind_free(&pu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unwinds_own_stack_snapshot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
