// SPDX-License-Identifier: Apache-2.0
#include "runtimes/v8/v8_layout.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

/* Each field and the symbols that may carry it, the first present wins
 * (V8 renamed a few across versions). */
#define ALT_MAX 3
static const struct field {
	size_t off; /* in struct v8_layout (an int32 or uint32) */
	const char *names[ALT_MAX];
} fields[] = {
#define F(m, ...)                                                              \
	{                                                                      \
		offsetof(struct v8_layout, m),                                 \
		{                                                              \
			__VA_ARGS__                                            \
		}                                                              \
	}
	F(off_fp_context, "v8dbg_off_fp_context_or_frame_type",
	  "v8dbg_off_fp_context"),
	F(off_fp_function, "v8dbg_off_fp_function"),
	F(off_fp_bytecode_offset, "v8dbg_off_fp_bytecode_offset"),
	F(obj_map, "v8dbg_class_HeapObject__map__*"),
	F(map_instance_type, "v8dbg_class_Map__instance_type__*"),
	F(first_nonstring, "v8dbg_FirstNonstringType"),
	F(repr_mask, "v8dbg_StringRepresentationMask"),
	F(enc_mask, "v8dbg_StringEncodingMask"),
	F(seq_tag, "v8dbg_SeqStringTag"),
	F(cons_tag, "v8dbg_ConsStringTag"),
	F(thin_tag, "v8dbg_ThinStringTag"),
	F(sliced_tag, "v8dbg_SlicedStringTag"),
	F(one_byte_tag, "v8dbg_OneByteStringTag"),
	F(ext_tag, "v8dbg_ExternalStringTag"),
	F(ext_resource, "v8dbg_class_ExternalString__resource__*"),
	F(str_length, "v8dbg_class_String__length__*"),
	F(seq1_chars, "v8dbg_class_SeqOneByteString__chars__*"),
	F(seq2_chars, "v8dbg_class_SeqTwoByteString__chars__*"),
	F(cons_first, "v8dbg_class_ConsString__first__*"),
	F(cons_second, "v8dbg_class_ConsString__second__*"),
	F(thin_actual, "v8dbg_class_ThinString__actual__*"),
	F(sliced_parent, "v8dbg_class_SlicedString__parent__*"),
	F(sliced_offset, "v8dbg_class_SlicedString__offset__*"),
	F(fn_shared, "v8dbg_class_JSFunction__shared__*"),
	F(sfi_name_or_scope_info,
	  "v8dbg_class_SharedFunctionInfo__name_or_scope_info__*"),
	F(sfi_script, "v8dbg_class_SharedFunctionInfo__script_or_debug_info__*",
	  "v8dbg_class_SharedFunctionInfo__script__*",
	  "v8dbg_class_SharedFunctionInfo__raw_script__*"),
	F(script_name, "v8dbg_class_Script__name__*"),
	F(script_source, "v8dbg_class_Script__source__*"),
	F(type_sfi, "v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE"),
	F(type_script, "v8dbg_type_Script__SCRIPT_TYPE"),
	F(type_scope_info, "v8dbg_type_ScopeInfo__SCOPE_INFO_TYPE"),
	F(si_ncontextlocals, "v8dbg_scopeinfo_idx_ncontextlocals"),
	F(si_first_vars, "v8dbg_scopeinfo_idx_first_vars"),
#undef F
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/* Optional fields: each one symbol, -1 where the binary lacks it. */
static const struct field optional[] = {
#define O(m, n)                                                                \
	{                                                                      \
		offsetof(struct v8_layout, m),                                 \
		{                                                              \
			n                                                      \
		}                                                              \
	}
	O(fn_code, "v8dbg_class_JSFunction__code__*"),
	/* the same field's two forms: V8 before 11 kept the instructions
	 * inside the Code object (an offset), later ones point at them */
	O(code_start_inline, "v8dbg_class_Code__instruction_start__uintptr_t"),
	O(code_start_field, "v8dbg_class_Code__instruction_start__Address"),
	O(code_size, "v8dbg_class_Code__instruction_size__*"),
	O(code_flags, "v8dbg_class_Code__flags__*"),
	O(code_spt, "v8dbg_class_Code__source_position_table__*"),
	O(code_kind_mask, "v8dbg_CodeKindFieldMask"),
	O(code_kind_shift, "v8dbg_CodeKindFieldShift"),
	O(code_kind_baseline, "v8dbg_CodeKindBaseline"),
	O(array_length, "v8dbg_class_FixedArrayBase__length__*"),
	O(type_code, "v8dbg_type_Code__CODE_TYPE"),
	O(type_byte_array, "v8dbg_type_ByteArray__BYTE_ARRAY_TYPE"),
	O(type_trusted_byte_array,
	  "v8dbg_type_TrustedByteArray__TRUSTED_BYTE_ARRAY_TYPE"),
	O(is_start, "v8dbg_class_InstructionStream__instruction_start__*"),
	O(sfi_function_data,
	  "v8dbg_class_SharedFunctionInfo__function_data__*"),
	O(type_bytecode_array, "v8dbg_type_BytecodeArray__BYTECODE_ARRAY_TYPE"),
	O(bca_data, "v8dbg_class_BytecodeArray__data__*"),
	O(bca_wrapper, "v8dbg_class_BytecodeArray__wrapper__*"),
	O(type_instruction_stream,
	  "v8dbg_type_InstructionStream__INSTRUCTION_STREAM_TYPE"),
	O(code_deopt, "v8dbg_class_Code__deoptimization_data__*"),
	O(sfi_params,
	  "v8dbg_class_SharedFunctionInfo__internal_formal_parameter_count__*"),
	O(deopt_count_idx, "v8dbg_DeoptimizationDataInlinedFunctionCountIndex"),
	O(deopt_literals_idx, "v8dbg_DeoptimizationDataLiteralArrayIndex"),
	O(deopt_positions_idx,
	  "v8dbg_DeoptimizationDataInliningPositionsIndex"),
	O(type_fixed_array, "v8dbg_type_FixedArray__FIXED_ARRAY_TYPE"),
	O(type_trusted_fixed_array,
	  "v8dbg_type_TrustedFixedArray__TRUSTED_FIXED_ARRAY_TYPE"),
	O(type_protected_fixed_array,
	  "v8dbg_type_ProtectedFixedArray__PROTECTED_FIXED_ARRAY_TYPE"),
	O(type_weak_fixed_array,
	  "v8dbg_type_WeakFixedArray__WEAK_FIXED_ARRAY_TYPE"),
	O(type_trusted_weak_fixed_array,
	  "v8dbg_type_TrustedWeakFixedArray__TRUSTED_WEAK_FIXED_ARRAY_TYPE"),
#undef O
};
#define NOPTIONAL (sizeof(optional) / sizeof(optional[0]))
/* Not a symbol: where a field the binary does not name is derived. */
#define SYM_CODE_WRAPPER      (SYM_FIRST_FIELD + (NFIELDS + NOPTIONAL) * ALT_MAX)
#define SYM_FP_BYTECODE_ARRAY (SYM_CODE_WRAPPER + 1)

/* The tagging scheme, read apart from the fields. */
enum {
	SYM_TAGGED_SIZE,
	SYM_SMI_TAG,
	SYM_SMI_TAG_MASK,
	SYM_SMI_SHIFT,
	SYM_SMI_VALUE_SHIFT,
	SYM_HEAP_TAG,
	SYM_HEAP_TAG_MASK,
	SYM_FT_ENTRY, /* optional: the entry frames' types */
	SYM_FT_CONSTRUCT_ENTRY,
	SYM_FIRST_FIELD
};

static const char *const scheme_names[SYM_FIRST_FIELD] = {
	"v8dbg_TaggedSize",
	"v8dbg_SmiTag",
	"v8dbg_SmiTagMask",
	"v8dbg_SmiShiftSize",
	"v8dbg_SmiValueShift",
	"v8dbg_HeapObjectTag",
	"v8dbg_HeapObjectTagMask",
	"v8dbg_frametype_EntryFrame",
	"v8dbg_frametype_ConstructEntryFrame"};

static const char *sym_table[SYM_FP_BYTECODE_ARRAY + 1];

/* The table in one flat array: the scheme, then each field's
 * alternatives (NULL where a field has fewer: never found). */
static void table_init(void)
{
	if (sym_table[0])
		return;
	for (unsigned k = 0; k < SYM_FIRST_FIELD; k++)
		sym_table[k] = scheme_names[k];
	for (unsigned f = 0; f < NFIELDS; f++)
		for (unsigned a = 0; a < ALT_MAX; a++)
			sym_table[SYM_FIRST_FIELD + f * ALT_MAX + a] =
				fields[f].names[a] ? fields[f].names[a]
						   : "v8dbg_\001none";
	for (unsigned f = 0; f < NOPTIONAL; f++)
		for (unsigned a = 0; a < ALT_MAX; a++)
			sym_table[SYM_FIRST_FIELD + (NFIELDS + f) * ALT_MAX +
				  a] = optional[f].names[a]
					       ? optional[f].names[a]
					       : "v8dbg_\001none";
	sym_table[SYM_CODE_WRAPPER] = "v8dbg_class_Code__wrapper__*";
	sym_table[SYM_FP_BYTECODE_ARRAY] = "v8dbg_off_fp_bytecode_array";
}

const unsigned v8_layout_nsyms = SYM_FP_BYTECODE_ARRAY + 1;

const char *const *v8_layout_names(void)
{
	table_init();
	return sym_table;
}

static int read_int(uint64_t addr, mem_read_fn read, void *ctx, int32_t *v)
{
	return addr ? read(ctx, addr, v, sizeof(*v)) : -ENOENT;
}

/*
 * Where an optimized Code keeps its source position table, when the
 * binary does not name the field (it does in V8 11 only). V8's layout,
 * not v8dbg, says where: from V8 12 on (the Code with a wrapper) the
 * field just before the wrapper; before 11 two fields before the
 * instruction size. The table read there is type-checked (a ByteArray)
 * and its positions checked against the function's; a wrong field gives
 * unknown lines, never wrong ones.
 */
static void derive_code_positions(struct v8_layout *l, uint64_t wrapper_sym,
				  mem_read_fn read, void *ctx, int32_t tagged)
{
	int32_t wrapper = -1;

	l->code_is = -1;
	if (l->code_spt >= 0) {
		/* V8 11 names the table but not where the instructions are:
		 * its Code's next fields are the InstructionStream, the
		 * instructions' address, the flags (with the builtin id and
		 * kind-specific flags) and the size. The address read there
		 * is checked against the InstructionStream's. */
		if (l->code_start_field < 0 && l->code_start_inline < 0 &&
		    l->is_start >= 0 && l->type_instruction_stream >= 0) {
			l->code_is = l->code_spt + tagged;
			l->code_start_field = l->code_is + tagged;
			if (l->code_flags < 0)
				l->code_flags = l->code_start_field + 8;
			if (l->code_size < 0)
				l->code_size = l->code_start_field + 16;
		}
		return;
	}
	if (!read_int(wrapper_sym, read, ctx, &wrapper) &&
	    wrapper >= 2 * tagged && wrapper <= 4096)
		l->code_spt = wrapper - tagged;
	else if (l->code_start_inline >= 0 && l->code_size >= 3 * tagged)
		l->code_spt = l->code_size - 2 * tagged;
}

/*
 * Where optimized code says what it inlined: its deoptimization data,
 * named by the binary in V8 11 only, is the field before the position
 * table in every version (10 to 14). The data's indices are exported
 * from V8 11 on; V8 10 (Node 18) has the same three (1, 2, 7), taken
 * only when the binary names none of them. Everything read through
 * them is type-checked (arrays, a ByteArray of 16-byte entries,
 * SharedFunctionInfos): a wrong guess gives no inlined frames.
 */
static void derive_deopt(struct v8_layout *l, int32_t tagged)
{
	if (l->code_deopt < 0 && l->code_spt >= 2 * tagged)
		l->code_deopt = l->code_spt - tagged;
	if (l->deopt_count_idx < 0 && l->deopt_literals_idx < 0 &&
	    l->deopt_positions_idx < 0) {
		l->deopt_count_idx = 1;
		l->deopt_literals_idx = 2;
		l->deopt_positions_idx = 7;
	}
}

/*
 * An interpreted frame's line: the frame's BytecodeArray slot (v8dbg),
 * the SharedFunctionInfo's BytecodeArray (v8dbg names the field before
 * V8 12; from 12 on it is the first field, its trusted function data)
 * and the array's source position table, which v8dbg does not name:
 * from V8 12 on (an array with a wrapper) the field after the wrapper,
 * before it the third after the length. Type-checked where read.
 */
static void derive_bytecode_positions(struct v8_layout *l, uint64_t fp_sym,
				      mem_read_fn read, void *ctx,
				      int32_t tagged)
{
	int32_t fp = 0;

	l->off_fp_bytecode_array = 0; /* none */
	l->bca_spt = -1;
	if (!read_int(fp_sym, read, ctx, &fp) && fp < 0 && fp >= -128 &&
	    !(fp % 8))
		l->off_fp_bytecode_array = fp; /* < 0: below fp */
	if (l->sfi_function_data < 0)
		l->sfi_function_data = tagged;
	if (l->bca_wrapper >= 0)
		l->bca_spt = l->bca_wrapper + tagged;
	else if (l->array_length >= 0)
		l->bca_spt = l->array_length + 3 * tagged;
}

int v8_layout_read(struct v8_layout *l, const uint64_t *addr, mem_read_fn read,
		   void *ctx, const char **missing)
{
	int32_t s[SYM_FIRST_FIELD];

	table_init();
	memset(l, 0, sizeof(*l));
	*missing = NULL;
	for (unsigned k = 0; k < SYM_FIRST_FIELD; k++) {
		if (k == SYM_SMI_VALUE_SHIFT || k == SYM_FT_ENTRY ||
		    k == SYM_FT_CONSTRUCT_ENTRY) {
			s[k] = -1; /* optional */
			if (read_int(addr[k], read, ctx, &s[k]))
				s[k] = -1;
			continue;
		}
		if (read_int(addr[k], read, ctx, &s[k])) {
			*missing = scheme_names[k];
			return -ENOENT;
		}
	}
	for (unsigned f = 0; f < NFIELDS; f++) {
		int32_t v = 0;
		unsigned a;

		for (a = 0; a < ALT_MAX; a++)
			if (fields[f].names[a] &&
			    !read_int(addr[SYM_FIRST_FIELD + f * ALT_MAX + a],
				      read, ctx, &v))
				break;
		if (a == ALT_MAX) {
			*missing = fields[f].names[0];
			return -ENOENT;
		}
		memcpy((char *)l + fields[f].off, &v, sizeof(v));
	}
	for (unsigned f = 0; f < NOPTIONAL; f++) {
		int32_t v = -1;

		if (read_int(addr[SYM_FIRST_FIELD + (NFIELDS + f) * ALT_MAX],
			     read, ctx, &v) ||
		    v < 0 || v > 4096)
			v = -1; /* absent, or not a field we can use */
		memcpy((char *)l + optional[f].off, &v, sizeof(v));
	}
	if (s[SYM_TAGGED_SIZE] != 8 && s[SYM_TAGGED_SIZE] != 4)
		return -EINVAL;
	derive_code_positions(l, addr[SYM_CODE_WRAPPER], read, ctx,
			      s[SYM_TAGGED_SIZE]);
	derive_bytecode_positions(l, addr[SYM_FP_BYTECODE_ARRAY], read, ctx,
				  s[SYM_TAGGED_SIZE]);
	derive_deopt(l, s[SYM_TAGGED_SIZE]);
	l->tagged_size = (uint32_t)s[SYM_TAGGED_SIZE];
	l->smi_tag = (uint32_t)s[SYM_SMI_TAG];
	l->smi_tag_mask = (uint32_t)s[SYM_SMI_TAG_MASK];
	l->heap_tag = (uint32_t)s[SYM_HEAP_TAG];
	l->heap_tag_mask = (uint32_t)s[SYM_HEAP_TAG_MASK];
	/* the tag's one bit and the shift size (v8dbg_SmiValueShift is
	 * not that on every version) */
	l->smi_shift = 1 + (uint32_t)s[SYM_SMI_SHIFT];
	/* frame markers are type << 1 in a byte (the walk's view) */
	l->type_entry_frame = s[SYM_FT_ENTRY] > 0 && s[SYM_FT_ENTRY] < 128
				      ? s[SYM_FT_ENTRY]
				      : -1;
	l->type_construct_entry_frame =
		s[SYM_FT_CONSTRUCT_ENTRY] > 0 && s[SYM_FT_CONSTRUCT_ENTRY] < 128
			? s[SYM_FT_CONSTRUCT_ENTRY]
			: -1;
	/* What the walk and the readers rely on: one-bit tags, Smis that
	 * fit a tagged word, frame slots within a few words of fp, fields
	 * inside a small header. */
	if (l->smi_tag_mask != 1 || l->heap_tag_mask != 3 || l->smi_tag != 0 ||
	    l->heap_tag != 1 || l->smi_shift < 1 ||
	    l->smi_shift >= 8 * l->tagged_size)
		return -EINVAL;
	if (l->off_fp_context < -128 || l->off_fp_context > 127 ||
	    l->off_fp_function < -128 || l->off_fp_function > 127 ||
	    l->off_fp_bytecode_offset < -128 || l->off_fp_bytecode_offset > 127)
		return -EINVAL;
	for (unsigned f = 0; f < NFIELDS; f++) {
		uint32_t v;

		memcpy(&v, (char *)l + fields[f].off, sizeof(v));
		if (fields[f].off >= offsetof(struct v8_layout, obj_map) &&
		    v > 4096)
			return -EINVAL;
	}
	return 0;
}
