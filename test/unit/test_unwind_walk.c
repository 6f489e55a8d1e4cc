// SPDX-License-Identifier: Apache-2.0
/*
 * Replays recorded stacks (registers, stack words, unwind rows, mappings)
 * through the shared walk (ebpf/unwind_walk.h) and checks the frames
 * against the known ones. Each case runs twice: through the accessors the
 * BPF program has (mappings inline in the process entry or in the big
 * mappings array, rows in a chunk), here over plain arrays, and through
 * the userspace stack-copy unwinder (process_unwind_copy: mappings from
 * the process table, rows from the chunks of unwind_maps, the stack from
 * the copy). Both must give the same frames.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "filestore/file_cache.h"
#include "process/process_table.h"
#include "unwind/process_unwind.h"
#include "unwind_alone.h"

#define STACK_BASE 0x7ffd00000000ull
#define S(i)	   (STACK_BASE + 8 * (uint64_t)(i))
#define FILE_A	   0x400000ull /* ELF vaddr 0 */
#define FILE_LEN   0x100000ull
#define FILE_HI	   0x500000ull /* ELF vaddr 4 GiB: no packed rows */
#define JIT	   0x7f0000000000ull
#define VSYSCALL   0xffffffffff600000ull /* above 2^63 */
#define FP	   OTELPROF_USTACK_FP_FRAME

/* The recorded sample. */
static struct otelprof_sample_event ev;

/* The table of file A, by ELF vaddr. */
static const struct unwind_row table_a[] = {
	{0x1000,
	 {16, 0, UNWIND_CFA_SP, UNWIND_FP_SAME,
	  UNWIND_RA_CFA_MINUS8}}, /* leaf */
	{0x2000,
	 {32, -16, UNWIND_CFA_SP, UNWIND_FP_CFA_OFFSET,
	  UNWIND_RA_CFA_MINUS8}}, /* caller */
	{0x3000,
	 {0, 0, UNWIND_CFA_STOP, UNWIND_FP_SAME,
	  UNWIND_RA_CFA_MINUS8}}, /* _start */
	{0x4000,
	 {0, 0, UNWIND_CFA_INVALID, UNWIND_FP_SAME,
	  UNWIND_RA_CFA_MINUS8}}, /* no CFI */
	{0x5000,
	 {8, 0, UNWIND_CFA_SP, UNWIND_FP_SAME,
	  UNWIND_RA_CFA_MINUS8}}, /* stub */
	{0x6000,
	 {0, 0, UNWIND_CFA_INVALID, UNWIND_FP_SAME, UNWIND_RA_CFA_MINUS8}},
};
#define NROWS_A (sizeof(table_a) / sizeof(table_a[0]))

/* ---- the BPF program's shape over plain arrays ---- */
static struct unwind_packed_row chunk[16];
static struct otelprof_bpf_mapping big[16];

static int replay_read(uint64_t addr, uint64_t *out)
{
	uint64_t off = addr - ev.user_sp, len = (uint64_t)ev.n_user * 8;

	if (addr < ev.user_sp || off >= len || len - off < 8)
		return -1;
	memcpy(out, (const unsigned char *)ev.words + off, 8);
	return 0;
}

static const struct otelprof_bpf_mapping *replay_big(uint32_t idx)
{
	return idx < 16 ? &big[idx] : NULL;
}

static const struct unwind_packed_row *replay_row(uint32_t idx)
{
	return idx < NROWS_A ? &chunk[idx] : NULL;
}

#define UNWIND_READ_U64(ctx, addr, out) ((void)(ctx), replay_read(addr, out))
#define UNWIND_BIG_MAPPING(ctx, idx)	((void)(ctx), replay_big(idx))
#define UNWIND_ROWS(ctx, id)		((void)(ctx), (id) == 1 ? chunk : NULL)
#define UNWIND_ROW(ctx, rows, idx)	((void)(rows), replay_row(idx))
#include "unwind_walk.h"

static const struct otelprof_bpf_mapping kernel_maps[4] = {
	{FILE_A, FILE_A + FILE_LEN, FILE_A, 1, NROWS_A, 0, 0},
	{FILE_HI, FILE_HI + FILE_LEN, FILE_HI - 0x100000000ull, 1, NROWS_A, 0,
	 0},
	{JIT, JIT + FILE_LEN, 0, 0, 0, 0, 0},
	{VSYSCALL, VSYSCALL + 0x1000, 0, 0, 0, 0, 0},
};

static struct unwind_walk w;

/* Walk ev with the mappings inline (big: in the big array from 5). */
static uint32_t walk_kernel_shape(bool use_big, uint64_t *frames, uint32_t max,
				  uint32_t *flags)
{
	memset(&w.proc, 0, sizeof(w.proc));
	for (uint32_t i = 0; i < NROWS_A; i++)
		unwind_row_pack(&table_a[i], &chunk[i]);
	if (use_big) {
		memcpy(&big[5], kernel_maps, sizeof(kernel_maps));
		w.proc.big_base = 5;
		w.proc.big_n = 4;
	} else {
		memcpy(w.proc.m, kernel_maps, sizeof(kernel_maps));
		w.proc.n = 4;
	}
	unwind_walk_begin(&w, ev.user_ip, ev.user_sp, ev.user_bp);
	while (!unwind_walk_frame(NULL, &w, frames, max))
		;
	*flags = w.flags;
	return w.n;
}

/* ---- userspace: the process table and unwind_maps ---- */
static struct file_table table;
static struct file_cache files;
static struct process_table procs;
static struct process_unwind pu;
/* Two files, and their symbols put straight into the cache's slots. */
static struct file fa = {.slot = 0}, fhi = {.slot = 1};
static struct elf_file file_a = {.file = &fa}, file_hi = {.file = &fhi};
static struct elf_file *entries[2] = {&file_a, &file_hi};
static struct proc_mapping maps[4];
static struct process proc;

static int setup(void **state)
{
	struct unwind_table t = {.rows = (struct unwind_row *)table_a,
				 .nrows = NROWS_A};

	(void)state;
	file_table_init(&table);
	file_cache_init(&files, &table);
	files.v = entries;
	files.nv = 2;
	process_table_init(&procs, &table);
	process_unwind_init(&pu, &procs, &files, -1, -1);
	file_a.sym.nloads = 1;
	file_a.sym.loads[0] = (struct elf_load){0, 0, FILE_LEN, 5};
	file_hi.sym.nloads = 1;
	file_hi.sym.loads[0] =
		(struct elf_load){0, 0x100000000ull, FILE_LEN, 5};
	assert_int_equal(
		unwind_maps_add_file(&pu.maps, &t,
				     &process_unwind_file(&pu, &fa)->slot),
		0);
	/* the same rows */
	process_unwind_file(&pu, &fhi)->slot =
		process_unwind_file(&pu, &fa)->slot;
	maps[0] = (struct proc_mapping){.start = FILE_A,
					.end = FILE_A + FILE_LEN,
					.kind = PROC_MAPPING_FILE,
					.path = "/replay/a",
					.file = &fa,
					.file_tried = 1};
	maps[1] = (struct proc_mapping){.start = FILE_HI,
					.end = FILE_HI + FILE_LEN,
					.kind = PROC_MAPPING_FILE,
					.path = "/replay/hi",
					.file = &fhi,
					.file_tried = 1};
	maps[2] = (struct proc_mapping){.start = JIT,
					.end = JIT + FILE_LEN,
					.kind = PROC_MAPPING_ANON,
					.path = "",
					.file_tried = 1};
	maps[3] = (struct proc_mapping){.start = VSYSCALL,
					.end = VSYSCALL + 0x1000,
					.kind = PROC_MAPPING_SPECIAL,
					.path = "[vsyscall]",
					.file_tried = 1};
	proc.pid = 1;
	proc.ghost = true; /* no /proc rescans */
	proc.maps.v = maps;
	proc.maps.n = 4;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unwind_maps_remove_file(&pu.maps, &process_unwind_file(&pu, &fa)->slot);
	process_unwind_free(&pu);
	process_table_free(&procs);
	files.v = NULL; /* not the cache's */
	files.nv = 0;
	file_cache_free(&files);
	file_table_free(&table);
	return 0;
}

static void record(uint64_t ip, uint64_t sp, uint64_t bp, uint32_t nwords)
{
	memset(&ev, 0, sizeof(ev));
	ev.hdr.type = OTELPROF_EVENT_SAMPLE;
	ev.flags = OTELPROF_SAMPLE_F_STACK_COPY;
	ev.user_ip = ip;
	ev.user_sp = sp;
	ev.user_bp = bp;
	ev.n_user = nwords;
}

static void set_word(uint64_t addr, uint64_t v)
{
	memcpy((unsigned char *)ev.words + (addr - ev.user_sp), &v, 8);
}

/* The frames of ev, by every path, must be want[0..n) with flags. */
static void expect(const uint64_t *want, uint32_t n, uint32_t max,
		   uint32_t want_flags, uint32_t want_error)
{
	uint64_t frames[OTELPROF_MAX_USER_FRAMES];
	struct unwind_copy copy;
	uint32_t got, flags;

	for (int use_big = 0; use_big < 2; use_big++) {
		memset(frames, 0, sizeof(frames));
		got = walk_kernel_shape(use_big, frames, max, &flags);
		assert_int_equal(got, n);
		for (uint32_t i = 0; i < n; i++)
			assert_int_equal(frames[i], want[i]);
		assert_int_equal(flags, want_flags);
		assert_int_equal(w.error, want_error);
	}
	memset(frames, 0, sizeof(frames));
	process_unwind_copy(&pu, &proc, &ev, frames, max, &copy);
	assert_int_equal(copy.n, n);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(frames[i], want[i]);
	assert_int_equal(copy.flags, want_flags);
	assert_int_equal(copy.error, want_error);
}

/* Leaf (CFA = rsp + 16), caller (CFA = rsp + 32, rbp saved at CFA - 16),
 * _start. */
static void record_cfi_chain(uint32_t nwords)
{
	record(FILE_A + 0x1010, S(0), 0x1111, nwords);
	set_word(S(1), FILE_A + 0x2010); /* leaf's return address */
	set_word(S(4), S(25));		 /* caller's saved rbp */
	set_word(S(5), FILE_A + 0x3005); /* caller's return address */
}

static void walks_cfi_to_the_root(void **state)
{
	const uint64_t want[] = {FILE_A + 0x1010, FILE_A + 0x2010,
				 FILE_A + 0x3005};

	(void)state;
	record_cfi_chain(64);
	expect(want, 3, OTELPROF_MAX_USER_FRAMES, OTELPROF_SAMPLE_F_COMPLETE,
	       0);
	assert_int_equal(w.r.fp, S(25)); /* the rbp rule was applied */
}

static void cuts_at_the_frame_limit(void **state)
{
	const uint64_t want[] = {FILE_A + 0x1010, FILE_A + 0x2010};

	(void)state;
	record_cfi_chain(64);
	expect(want, 2, 2, OTELPROF_SAMPLE_F_TRUNCATED, 0);
}

static void stops_at_the_end_of_the_copy(void **state)
{
	const uint64_t want[] = {FILE_A + 0x1010, FILE_A + 0x2010};

	(void)state;
	record_cfi_chain(5); /* the caller's return address is not in it */
	expect(want, 2, OTELPROF_MAX_USER_FRAMES, 0,
	       OTELPROF_CNT_UNWIND_ERR_READ);
}

/* A stub that left rsp 4 bytes off: its return address is unaligned,
 * which bpf_probe_read_user reads and so must the stack-copy reader. */
static void reads_unaligned_stack_slots(void **state)
{
	const uint64_t want[] = {FILE_A + 0x5000, FILE_A + 0x3005};

	(void)state;
	record(FILE_A + 0x5000, S(0) + 4, 0, 64);
	set_word(S(0) + 4, FILE_A + 0x3005);
	expect(want, 2, OTELPROF_MAX_USER_FRAMES, OTELPROF_SAMPLE_F_COMPLETE,
	       0);
}

/* No CFI row for the pc: the frame pointer, flagged as such. */
static void falls_back_to_a_plausible_frame_pointer(void **state)
{
	const uint64_t want[] = {FILE_A + 0x4010, (FILE_A + 0x2010) | FP,
				 FILE_A + 0x3005};

	(void)state;
	record(FILE_A + 0x4010, S(0), S(2), 64);
	set_word(S(2), S(30));		 /* caller's rbp */
	set_word(S(3), FILE_A + 0x2010); /* return address */
	/* the caller: CFA = S(4) + 32 */
	set_word(S(6), S(31));
	set_word(S(7), FILE_A + 0x3005);
	expect(want, 3, OTELPROF_MAX_USER_FRAMES, OTELPROF_SAMPLE_F_COMPLETE,
	       0);
}

/* ... but not one returning into code no mapping holds. */
static void refuses_a_frame_pointer_into_unknown_code(void **state)
{
	const uint64_t want[] = {FILE_A + 0x4010};

	(void)state;
	record(FILE_A + 0x4010, S(0), S(2), 64);
	set_word(S(2), S(30));
	set_word(S(3), 0x900000);
	expect(want, 1, OTELPROF_MAX_USER_FRAMES, 0,
	       OTELPROF_CNT_UNWIND_ERR_RULE);
}

/* Code above 4 GiB of file vaddr has no packed rows: the validated
 * frame-pointer fallback, never a row of low code (the file's rows are
 * those of file A, whose 0x1000 row would give another frame). */
static void takes_the_frame_pointer_above_4_gib(void **state)
{
	const uint64_t want[] = {FILE_HI + 0x1010, (FILE_A + 0x2010) | FP,
				 FILE_A + 0x3005};

	(void)state;
	record(FILE_HI + 0x1010, S(0), S(2), 64);
	set_word(S(1), 0x5555); /* what the 0x1000 row would take */
	set_word(S(2), S(30));
	set_word(S(3), FILE_A + 0x2010);
	set_word(S(6), S(31));
	set_word(S(7), FILE_A + 0x3005);
	expect(want, 3, OTELPROF_MAX_USER_FRAMES, OTELPROF_SAMPLE_F_COMPLETE,
	       0);
}

/* JIT code (no file): frame-pointer steps. */
static void walks_jit_code_by_frame_pointer(void **state)
{
	const uint64_t want[] = {JIT + 0x100, (JIT + 0x200) | FP,
				 (FILE_A + 0x2010) | FP, FILE_A + 0x3005};

	(void)state;
	record(JIT + 0x100, S(0), S(2), 64);
	set_word(S(2), S(10)); /* rbp chain */
	set_word(S(3), JIT + 0x200);
	set_word(S(10), S(20));
	set_word(S(11), FILE_A + 0x2010);
	/* the caller at sp S(12): CFA = S(16), ra at S(15) */
	set_word(S(14), S(40));
	set_word(S(15), FILE_A + 0x3005);
	expect(want, 4, OTELPROF_MAX_USER_FRAMES, OTELPROF_SAMPLE_F_COMPLETE,
	       0);
}

/* A stack switch (Go's asmcgocall, systemstack): the caller's frame,
 * found by rbp, lies below this frame's sp, on the stack the function
 * came from. UNWIND_CFA_FP_SWITCH takes it; the same rule as plain
 * UNWIND_CFA_FP is a loop, and a zero rbp no frame. */
static void crosses_a_stack_switch_by_rbp(void **state)
{
	struct unwind_regs r;

	(void)state;
	memset(&ev, 0, sizeof(ev));
	ev.user_sp = S(0);
	ev.n_user = 16;
	ev.words[2] = S(12);	/* the caller's rbp, at CFA - 16 */
	ev.words[3] = 0x402345; /* the return address, at CFA - 8 */
	r = (struct unwind_regs){.pc = 0x401000, .sp = S(10), .fp = S(2)};
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_FP, 16,
				     UNWIND_FP_CFA_OFFSET, -16,
				     UNWIND_RA_CFA_MINUS8, &r),
			 UNWIND_STEP_ERR_LOOP);
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_FP_SWITCH, 16,
				     UNWIND_FP_CFA_OFFSET, -16,
				     UNWIND_RA_CFA_MINUS8, &r),
			 UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x402345);
	assert_int_equal(r.sp, S(4));
	assert_int_equal(r.fp, S(12));
	r = (struct unwind_regs){.pc = 0x401000, .sp = S(10), .fp = 0};
	assert_int_equal(unwind_step(NULL, UNWIND_CFA_FP_SWITCH, 16,
				     UNWIND_FP_CFA_OFFSET, -16,
				     UNWIND_RA_CFA_MINUS8, &r),
			 UNWIND_STEP_ERR_READ);
}

static void stops_at_code_no_mapping_holds(void **state)
{
	const uint64_t want[] = {0x900000};

	(void)state;
	record(0x900000, S(0), S(2), 64);
	expect(want, 1, OTELPROF_MAX_USER_FRAMES, 0,
	       OTELPROF_CNT_UNWIND_NO_MAPPING);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(walks_cfi_to_the_root),
		cmocka_unit_test(cuts_at_the_frame_limit),
		cmocka_unit_test(stops_at_the_end_of_the_copy),
		cmocka_unit_test(reads_unaligned_stack_slots),
		cmocka_unit_test(falls_back_to_a_plausible_frame_pointer),
		cmocka_unit_test(refuses_a_frame_pointer_into_unknown_code),
		cmocka_unit_test(takes_the_frame_pointer_above_4_gib),
		cmocka_unit_test(walks_jit_code_by_frame_pointer),
		cmocka_unit_test(stops_at_code_no_mapping_holds),
		cmocka_unit_test(crosses_a_stack_switch_by_rbp),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
