// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the V8 readers: the input is a Node process's
 * memory from address FUZZ_BASE on. Its first words are the v8dbg_*
 * variables (v8_layout_read, as the tracker reads them from the
 * binary's data), so every constant is the fuzzer's to choose; then,
 * with the layout read (or, if the input's does not describe one, Node
 * 20's), words of the image are taken as JSFunctions and named the way
 * the tracker names a frame: JSFunction -> SharedFunctionInfo -> name,
 * ScopeInfo, Script -> name, source -> line starts. Reads outside the
 * input fail, as a process's unmapped memory does.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/v8/v8_heap.h"
#include "runtimes/v8/v8_layout.h"
#include "runtimes/v8/v8_position_table.h"

#define FUZZ_BASE 0x10000ull

struct image {
	const uint8_t *data;
	size_t size;
};

static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = ctx;

	if (addr < FUZZ_BASE || addr - FUZZ_BASE >= im->size ||
	    len > im->size - (addr - FUZZ_BASE))
		return -EFAULT;
	memcpy(buf, im->data + (addr - FUZZ_BASE), len);
	return 0;
}

/* Node 20's layout (v8dbg_* of node 20.20, x86_64): the heap readers
 * meet hostile heaps even when the input's constants are not a layout. */
static void node20(struct v8_layout *l)
{
	memset(l, 0, sizeof(*l));
	*l = (struct v8_layout){.tagged_size = 8,
				.smi_shift = 32,
				.smi_tag_mask = 1,
				.smi_tag = 0,
				.heap_tag_mask = 3,
				.heap_tag = 1,
				.off_fp_context = -8,
				.off_fp_function = -16,
				.off_fp_bytecode_offset = -32,
				.obj_map = 0,
				.map_instance_type = 12,
				.first_nonstring = 128,
				.repr_mask = 7,
				.enc_mask = 8,
				.seq_tag = 0,
				.cons_tag = 1,
				.thin_tag = 5,
				.sliced_tag = 3,
				.one_byte_tag = 8,
				.ext_tag = 2,
				.str_length = 12,
				.seq1_chars = 16,
				.seq2_chars = 16,
				.cons_first = 16,
				.cons_second = 24,
				.thin_actual = 16,
				.sliced_parent = 16,
				.sliced_offset = 24,
				.ext_resource = 16,
				.fn_shared = 24,
				.sfi_name_or_scope_info = 16,
				.sfi_script = 32,
				.script_name = 16,
				.script_source = 8,
				.type_sfi = 180,
				.type_script = 176,
				.type_scope_info = 250,
				.si_ncontextlocals = 2,
				.si_first_vars = 3,
				/* the line at the pc: Node 22's */
				.fn_code = 48,
				.code_start_inline = -1,
				.code_start_field = 40,
				.code_size = 52,
				.code_flags = 48,
				.code_spt = 16,
				.code_kind_mask = 15,
				.code_kind_shift = 0,
				.code_kind_baseline = 10,
				.array_length = 8,
				.type_code = 206,
				.type_byte_array = 186,
				.type_trusted_byte_array = 212,
				.is_start = 32,
				.type_instruction_stream = 210,
				.code_is = -1,
				.off_fp_bytecode_array = -32,
				.sfi_function_data = 8,
				.type_bytecode_array = 191,
				.bca_data = 54,
				.bca_wrapper = -1,
				.bca_spt = 32,
				/* inlined functions: Node 22's */
				.code_deopt = 8,
				.sfi_params = 42,
				.deopt_count_idx = 1,
				.deopt_literals_idx = 2,
				.deopt_positions_idx = 7,
				.type_fixed_array = 174,
				.type_trusted_fixed_array = 213,
				.type_protected_fixed_array = 211,
				.type_weak_fixed_array = 247,
				.type_trusted_weak_fixed_array = -1};
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image im = {data, size};
	uint64_t addr[256];
	struct v8_layout l;
	const char *missing;
	char s[64];

	for (unsigned k = 0; k < v8_layout_nsyms && k < 256; k++)
		addr[k] = FUZZ_BASE + 4 * (uint64_t)k;
	int64_t raw;
	int32_t inlined;
	/* V8 13's dispatch table: its isolate group's pointer in the
	 * input too */
	struct v8_dispatch d = {.group_sym = FUZZ_BASE + 8};

	if (v8_layout_read(&l, addr, image_read, &im, &missing))
		node20(&l);
	/* each table encoding (the binary's version says which), chosen by
	 * the input */
	l.spt_encoding =
		size ? (enum v8_spt_encoding)(data[0] % 3) : V8_SPT_SIGNED;
	/* the input as a table: any offset, no read past it */
	for (int enc = V8_SPT_UNKNOWN; enc <= V8_SPT_FLAGGED; enc++)
		if (v8_position_at(data, size, (enum v8_spt_encoding)enc,
				   (uint32_t)size * 7, &raw) &&
		    v8_source_position_offset(raw, &inlined) < -1)
			__builtin_trap();
	/* the input's halves as a baseline offset table and its bytecodes,
	 * sizes 1-5 by bytecode (prefixes 1): any off, no read past them */
	{
		static uint8_t sizes[3][V8_BYTECODES_MAX];

		for (unsigned k = 0; k < V8_BYTECODES_MAX; k++)
			for (unsigned sc = 0; sc < 3; sc++)
				sizes[sc][k] =
					(uint8_t)(k < 4 ? 1
							: (1 + k % 5) << sc);
		for (uint32_t o = 0; o < 64; o += 7)
			if (v8_baseline_bytecode_offset(
				    (const uint8_t(*)[V8_BYTECODES_MAX])sizes,
				    200, data, size / 2, data + size / 2,
				    (uint32_t)(size - size / 2),
				    o * (uint32_t)size) >= (int32_t)size)
				__builtin_trap();
		if (l.nbytecodes == 0) {
			memcpy(l.bytecode_size, sizes, sizeof(sizes));
			l.nbytecodes = 200;
		}
	}
	for (size_t off = 0; off + 8 <= size && off < 4096; off += 8) {
		struct v8_reader r = {.l = &l,
				      .read = image_read,
				      .ctx = &im,
				      .budget = V8_READ_BUDGET,
				      .dispatch = &d},
				 r1, r2;
		static struct v8_code_memo memo;
		int32_t p1;
		static struct v8_function fn;
		static struct v8_inlined inl;
		uint64_t w, sfi;

		memcpy(&w, data + off, 8);
		sfi = v8_function_shared(&r, w);
		if (sfi && v8_function_read(&r, sfi, &fn)) {
			if (memchr(fn.name, 0, sizeof(fn.name)) == NULL ||
			    memchr(fn.file, 0, sizeof(fn.file)) == NULL)
				__builtin_trap();
			if (fn.source) {
				uint32_t n,
					*st = v8_line_starts(&r, fn.source, &n);

				if (st && fn.start >= 0 &&
				    v8_line_of(st, n, (uint32_t)fn.start) >
					    n + 1)
					__builtin_trap();
				free(st);
			}
		}
		if (off + 16 <= size) {
			uint64_t pc;

			memcpy(&pc, data + off + 8, 8);
			/* the position, with the functions the code inlined
			 * followed through its deoptimization data */
			inl.n = 0;
			if (v8_code_position(&r, w, pc, off & 8, &inl) < -1 ||
			    inl.n > V8_INLINE_MAX ||
			    /* the word as a Code, the next as a position */
			    v8_inlining_chain(&r, w, (int64_t)pc, &inl) < -1 ||
			    inl.n > V8_INLINE_MAX ||
			    v8_code_position(&r, w, pc, off & 8, NULL) < -1 ||
			    (sfi && v8_bytecode_position(&r, sfi, pc) < -1))
				__builtin_trap();
			/* a code memo answers as the reads it saves did */
			memset(&memo, 0, sizeof(memo));
			r1 = (struct v8_reader){.l = &l,
						.read = image_read,
						.ctx = &im,
						.budget = V8_READ_BUDGET,
						.dispatch = &d,
						.memo = &memo,
						.now_ns = 1};
			r2 = r1;
			p1 = v8_code_position(&r1, w, pc, off & 8, NULL);
			if (v8_code_memo_find(&memo, pc, 1) >= 0 &&
			    v8_code_position(&r2, w, pc, off & 8, NULL) != p1)
				__builtin_trap();
		}
		if (v8_string_read(&r, w, s, sizeof(s)) &&
		    strlen(s) >= sizeof(s))
			__builtin_trap();
		if (r.budget > V8_READ_BUDGET)
			__builtin_trap();
	}
	return 0;
}
