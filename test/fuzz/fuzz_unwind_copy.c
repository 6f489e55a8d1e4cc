// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the stack-copy unwinder (process_unwind_copy, the
 * userspace twin of the BPF walk for samples whose process the kernel did
 * not know yet): registers, an unwind table and the copied stack all come
 * from the input, as they come from a hostile process. A process with one
 * executable file mapping at 0x400000 (table from the input) and one
 * without a file (frame-pointer steps). Checks: at most max frames, and
 * the walk ends (libFuzzer's -timeout catches a loop).
 *   input = u64 ip, sp, bp || u8 nrows || u8 n_interp || nrows x {u32 pc
 *           delta, i32 cfa_offset, i16 fp_offset, u8 cfa_base,
 *           u8 fp_rule} || stack words
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "process/process_table.h"
#include "unwind/process_unwind.h"
#include "unwind_alone.h"

#define ROW_BYTES 12
#define MAP_START 0x400000ull
#define MAP_LEN	  0x100000ull

static struct file_table table;
static struct file_cache files;
static struct process_table procs;
static struct process_unwind pu;
static struct otelprof_sample_event ev;
static uint64_t frames[OTELPROF_MAX_USER_FRAMES];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	static struct file file = {.slot = 0};
	static struct elf_file f;
	static struct elf_file *entries[1] = {&f};
	struct proc_mapping maps[2];
	struct process p;
	struct unwind_row *rows;
	uint64_t pc = 0;
	size_t nrows, off, nwords;
	struct unwind_copy walk;

	if (!ready) {
		file_table_init(&table);
		file_cache_init(&files, &table);
		files.v = entries; /* its symbols straight into the slot */
		files.nv = 1;
		process_table_init(&procs, &table);
		process_unwind_init(&pu, &procs, &files, -1, -1);
		ready = 1;
	}
	if (size < 26)
		return 0;
	memset(&ev, 0, sizeof(ev));
	memcpy(&ev.user_ip, data, 8);
	memcpy(&ev.user_sp, data + 8, 8);
	memcpy(&ev.user_bp, data + 16, 8);
	if (ev.user_ip < MAP_LEN)
		ev.user_ip += MAP_START; /* help the fuzzer into the file */
	nrows = data[24];
	ev.n_interp = data[25] & 3;
	off = 26;
	if (size - off < nrows * ROW_BYTES)
		nrows = (size - off) / ROW_BYTES;
	rows = calloc(nrows ? nrows : 1, sizeof(*rows));
	if (!rows)
		return 0;
	for (size_t i = 0; i < nrows; i++, off += ROW_BYTES) {
		uint32_t delta;

		memcpy(&delta, data + off, 4);
		pc += (uint64_t)(delta % MAP_LEN) + 1; /* strictly increasing */
		rows[i].pc = pc;
		memcpy(&rows[i].rule.cfa_offset, data + off + 4, 4);
		memcpy(&rows[i].rule.fp_offset, data + off + 8, 2);
		rows[i].rule.cfa_base = data[off + 10];
		rows[i].rule.fp_rule = data[off + 11];
	}
	nwords = (size - off) / 8;
	if (nwords > OTELPROF_USTACK_WORDS)
		nwords = OTELPROF_USTACK_WORDS;
	memcpy(ev.words, data + off, nwords * 8);
	ev.n_user = (uint32_t)nwords;
	ev.flags = OTELPROF_SAMPLE_F_STACK_COPY;

	memset(&f, 0, sizeof(f));
	f.file = &file;
	{
		/* Into a row chunk, as a loaded file's table. */
		struct unwind_table t = {.rows = rows, .nrows = nrows};

		unwind_maps_add_file(&pu.maps, &t,
				     &process_unwind_file(&pu, &file)->slot);
	}
	f.sym.nloads = 1;
	f.sym.loads[0].filesz = MAP_LEN;
	f.sym.loads[0].flags = 5; /* PF_R | PF_X */
	memset(maps, 0, sizeof(maps));
	maps[0] = (struct proc_mapping){.start = MAP_START,
					.end = MAP_START + MAP_LEN,
					.kind = PROC_MAPPING_FILE,
					.path = "/fuzz/file",
					.file = &file,
					.file_tried = 1};
	maps[1] = (struct proc_mapping){.start = 0x7f0000000000ull,
					.end = 0x7f0000100000ull,
					.kind = PROC_MAPPING_FILE,
					.path = "/fuzz/nocfi",
					.file_tried = 1};
	memset(&p, 0, sizeof(p));
	p.pid = 1;
	p.ghost = true; /* no /proc rescans */
	p.maps.v = maps;
	p.maps.n = 2;
	process_unwind_copy(&pu, &p, &ev, frames, OTELPROF_MAX_USER_FRAMES,
			    &walk);
	if (walk.n > OTELPROF_MAX_USER_FRAMES)
		__builtin_trap();
	unwind_maps_remove_file(&pu.maps,
				&process_unwind_file(&pu, &file)->slot);
	free(rows);
	return 0;
}
