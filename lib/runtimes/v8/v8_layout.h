/* SPDX-License-Identifier: Apache-2.0 */
/*
 * V8's object and frame layout, from the v8dbg_* symbols the binary
 * exports (V8's postmortem metadata: each an int variable in the
 * process's data). Read per process; where a constant the walk or the
 * naming needs is absent, the first missing one is named and the process
 * counts as unknown (native stacks only).
 */
#ifndef OTELPROF_RUNTIMES_V8_LAYOUT_H
#define OTELPROF_RUNTIMES_V8_LAYOUT_H

#include <stdint.h>

#include "process/process_memory.h"
#include "runtimes/v8/v8_position_table.h"

struct v8_layout {
	uint32_t tagged_size; /* 8, or 4 with pointer compression */
	uint32_t smi_shift;   /* a Smi's value: raw >> this */
	uint64_t smi_tag_mask, smi_tag, heap_tag_mask, heap_tag;
	int32_t off_fp_context, off_fp_function, off_fp_bytecode_offset;
	/* HeapObject, Map */
	uint32_t obj_map, map_instance_type;
	/* strings: instance type bits and fields */
	uint32_t first_nonstring, repr_mask, enc_mask;
	uint32_t seq_tag, cons_tag, thin_tag, sliced_tag, one_byte_tag, ext_tag;
	uint32_t str_length, seq1_chars, seq2_chars, cons_first, cons_second,
		thin_actual, sliced_parent, sliced_offset, ext_resource;
	/* functions and scripts */
	uint32_t fn_shared;
	uint32_t sfi_name_or_scope_info, sfi_script;
	uint32_t script_name, script_source;
	uint32_t type_sfi, type_script, type_scope_info;
	/* ScopeInfo: tagged slots from its header */
	uint32_t si_ncontextlocals, si_first_vars;
	/* StackFrame types of the entry frames (JSEntry and its construct
	 * variant); -1: not exported */
	int32_t type_entry_frame, type_construct_entry_frame;
	/*
	 * Optional (-1: the binary does not say): what the line at an
	 * optimized frame's pc needs. A process without them keeps its
	 * names, its frames' lines are unknown (0).
	 */
	int32_t fn_code;	   /* JSFunction's Code */
	int32_t code_start_inline; /* Code's instructions at this offset */
	int32_t code_start_field;  /* ... or their address in this field */
	int32_t code_size, code_flags, code_spt;
	int32_t code_kind_mask, code_kind_shift, code_kind_baseline;
	int32_t array_length; /* FixedArrayBase's length (a Smi) */
	int32_t type_code, type_byte_array, type_trusted_byte_array;
	int32_t is_start, type_instruction_stream; /* InstructionStream */
	int32_t code_is; /* derived (V8 11): the Code's InstructionStream */
	/* interpreted frames: the frame's BytecodeArray slot, the
	 * SharedFunctionInfo's BytecodeArray, its data and table */
	int32_t off_fp_bytecode_array; /* 0: none */
	int32_t sfi_function_data;
	int32_t type_bytecode_array, bca_data, bca_wrapper;
	int32_t bca_spt; /* derived */
	/* functions optimized code inlined: the Code's deoptimization
	 * data (derived where not named: the field before its position
	 * table), the data's elements (its inlined function count, literal
	 * array, inlining positions: V8 10's where the binary does not
	 * say), and the types those arrays may have across versions */
	int32_t code_deopt;
	/* V8 13 on: a function's parameter count, to tell its dispatch
	 * table entry (receiver included, as the entry has it) */
	int32_t sfi_params;
	int32_t deopt_count_idx, deopt_literals_idx, deopt_positions_idx;
	int32_t type_fixed_array, type_trusted_fixed_array,
		type_protected_fixed_array, type_weak_fixed_array,
		type_trusted_weak_fixed_array;
	/* baseline (Sparkplug) code's lines: each bytecode's size at each
	 * operand scale (1, 2, 4), from the binary's
	 * interpreter::Bytecodes::kBytecodeSizes; nbytecodes 0: not known,
	 * baseline frames without lines */
	uint16_t nbytecodes;
	uint8_t bytecode_size[3][V8_BYTECODES_MAX];
	/* how its source position tables are encoded: by the binary's V8
	 * version (v8dbg does not say), set by the caller; V8_SPT_UNKNOWN
	 * gives no lines */
	enum v8_spt_encoding spt_encoding;
};

/* The v8dbg_* names the layout may come from (alternatives of one
 * field across versions included), v8_layout_nsyms of them, for
 * elf_dynsym_lookup. */
const char *const *v8_layout_names(void);
extern const unsigned v8_layout_nsyms;

/*
 * Fill l from the runtime addresses of the symbols (addr[k] for
 * v8_layout_sym_names[k], 0: absent), each an int read with read().
 * 0, or -ENOENT with *missing the first absent constant needed, or
 * -EINVAL if the values do not describe a layout we can read.
 */
int v8_layout_read(struct v8_layout *l, const uint64_t *addr, mem_read_fn read,
		   void *ctx, const char **missing);

#endif
