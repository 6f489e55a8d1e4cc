/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HotSpot's own description of its structures: libjvm exports
 * gHotSpotVMStructs (fields: type, name, offset or static address),
 * gHotSpotVMTypes (type sizes) and gHotSpotVMIntConstants, with the
 * layout of their entries in exported variables the JVM fills at start.
 * We read those tables from the process's memory (it is the JVM's word
 * on its layout, whatever its version) and keep the few offsets the
 * stack walker and the symbolizer need. Every read is bounded and may
 * fail; a table that does not add up is refused.
 */
#ifndef OTELPROF_INTERP_HOTSPOT_VMSTRUCTS_H
#define OTELPROF_INTERP_HOTSPOT_VMSTRUCTS_H

#include <stdbool.h>
#include <stdint.h>

#include "process/process_memory.h"

/* libjvm's exported symbols we read (in .dynsym of every build). */
enum hotspot_sym {
	HS_SYM_STRUCTS,
	HS_SYM_STRUCT_TYPE_NAME_OFF,
	HS_SYM_STRUCT_FIELD_NAME_OFF,
	HS_SYM_STRUCT_IS_STATIC_OFF,
	HS_SYM_STRUCT_OFFSET_OFF,
	HS_SYM_STRUCT_ADDRESS_OFF,
	HS_SYM_STRUCT_STRIDE,
	HS_SYM_TYPES,
	HS_SYM_TYPE_NAME_OFF,
	HS_SYM_TYPE_SIZE_OFF,
	HS_SYM_TYPE_STRIDE,
	HS_SYM_INTS,
	HS_SYM_INT_NAME_OFF,
	HS_SYM_INT_VALUE_OFF,
	HS_SYM_INT_STRIDE,
	HS_SYM_COUNT
};
extern const char *const hotspot_sym_names[HS_SYM_COUNT];

/* Entries read at most per table, and bytes of process memory in all. */
#define HS_MAX_ENTRIES	  16384
#define HS_MAX_READ_BYTES (8u << 20)
#define HS_NAME_MAX	  96

/* A field's offset or a type's size the JVM did not publish. */
#define HS_NONE 0xffffffffu

/*
 * What we need of one JVM, all from its tables. Statics are addresses in
 * the process; the rest are byte offsets (HS_NONE if absent).
 */
struct hotspot_layout {
	/* statics */
	uint64_t code_heaps;  /* CodeCache::_heaps (GrowableArray*) */
	uint64_t code_low;    /* CodeCache::_low_bound (address) */
	uint64_t code_high;   /* CodeCache::_high_bound */
	uint64_t interp_code; /* AbstractInterpreter::_code (StubQueue*) */
	/* GrowableArray<CodeHeap*> */
	uint32_t array_len, array_data;
	/* CodeHeap, VirtualSpace */
	uint32_t heap_memory, heap_segmap, heap_log2_segment;
	uint32_t vspace_low, vspace_high;
	uint32_t vspace_high_boundary; /* the reserved end (optional) */
	uint32_t heap_block_size; /* sizeof(HeapBlock): the blob follows it */
	uint32_t heap_block_used; /* HeapBlock::Header::_used */
	/* StubQueue: the interpreter's code */
	uint32_t stubq_buffer, stubq_limit;
	/* CodeBlob (17: pointers to its code; 21+: offsets and a kind) */
	uint32_t blob_name, blob_size, blob_frame_size, blob_kind;
	uint32_t blob_code_begin, blob_code_end;     /* address fields */
	uint32_t blob_code_offset, blob_data_offset; /* int fields */
	/* nmethod */
	uint32_t nm_method, nm_entry_bci, nm_compile_id;
	/* its debug info: PcDescs and scopes (17: from the blob and a
	 * pointer; 21+: offsets into its immutable data) */
	uint32_t nm_scopes_pcs, nm_dependencies, nm_scopes_data_begin,
		nm_scopes_data, nm_immutable_data;
	/* its metadata (the Methods its scopes name by index): 17 at an
	 * offset from the blob, 25 after the relocations in the blob's
	 * mutable data */
	uint32_t nm_metadata, blob_mutable_data, blob_mutable_size,
		blob_relocation_size;
	/* Method, ConstMethod, ConstantPool, Klass, Symbol */
	uint32_t method_const, method_flags;
	uint32_t cmethod_constants, cmethod_name_index, cmethod_sig_index,
		cmethod_code_size, cmethod_flags, cmethod_size;
	uint32_t cpool_holder, cpool_source_file, cpool_length, cpool_size;
	uint32_t klass_name;
	uint32_t symbol_length, symbol_body;
	/* int constants */
	int32_t has_linenumber_table; /* ConstMethod flag bit (0: unknown) */
	int32_t kind_nmethod;	      /* CodeBlobKind::Nmethod (21+), -1 */
	bool unsigned5;		      /* 21+: streams in UNSIGNED5 */
	int32_t frame_interp_method;  /* interpreter frame: words from rbp */
	int32_t frame_interp_bcp;
	int32_t frame_interp_sender_sp; /* 0: not published */
	uint32_t entries;		/* struct entries read */
};

/* Addresses, in the process, of hotspot_sym_names (0: absent). */
struct hotspot_syms {
	uint64_t addr[HS_SYM_COUNT];
};

/* The symbols from libjvm's .dynsym (fd: the file), at their runtime
 * addresses (bias: load bias of the mapping). 0, or -ENOENT if the file
 * exports none of them (not a HotSpot libjvm). */
int hotspot_syms_from_file(int fd, uint64_t bias, struct hotspot_syms *out);

/*
 * Read the tables of the JVM whose symbols are at syms, through read
 * (ctx passed along). 0, or -ENOENT (a symbol missing), -EIO (unreadable),
 * -EINVAL (a table that does not add up), -E2BIG (over the read budget).
 */
int hotspot_vmstructs_read(const struct hotspot_syms *syms, mem_read_fn read,
			   void *ctx, struct hotspot_layout *out);

/* What the walker and symbolizer cannot do without; NULL if all there,
 * else the name of the first missing piece (for the one report). */
const char *hotspot_layout_missing(const struct hotspot_layout *l);

#endif
