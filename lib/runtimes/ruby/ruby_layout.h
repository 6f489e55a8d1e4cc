/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CRuby's structure layouts and the pure decoders of what is read from a
 * Ruby process (no I/O here: the fuzz target drives them directly).
 *
 * Debian's libruby ships no debug data and CRuby publishes no offsets, so
 * the offsets are a per-version table (ruby_layout_find), taken from the
 * sources of each release and checked against the packaged builds by the
 * integration tests. The version itself comes from the binary (the
 * exported string ruby_version), and where the running thread's
 * execution context lives from the binary's code (ruby_tls_from_code).
 */
#ifndef OTELPROF_RUNTIMES_RUBY_LAYOUT_H
#define OTELPROF_RUNTIMES_RUBY_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "profiler_types.h"
#include "runtimes/ruby/ruby_proc.h"

struct ruby_layout {
	unsigned major, minor;
	struct otelprof_ruby_proc walk; /* control frame offsets */
	uint16_t iseq_body;		/* rb_iseq_t.body */
	/* rb_iseq_constant_body */
	uint16_t body_type, body_iseq_size, body_encoded;
	uint16_t body_location; /* rb_iseq_location_t: pathobj, base_label,
				   label, first_lineno */
	uint16_t body_insn_info, body_insn_info_size, body_succ_table;
	uint16_t body_local_iseq; /* the method (or top) a block is in */
	uint16_t body_read;	  /* bytes of the body read: covers the above */
	uint8_t first_lineno_fixnum; /* first_lineno is a VALUE (Fixnum) */
	uint8_t insn_info_entry;     /* sizeof(iseq_insn_info_entry) */
	/* RString: 3.1 keeps an embedded string's length in its flags,
	 * 3.2+ in a len field before the union */
	uint8_t str_len_in_flags;
	uint8_t str_embed_ary; /* offset of an embedded string's bytes */
	/* Class paths (0: not read for this version; 3.1 keeps them in an
	 * instance variable table): where a class keeps its path and a
	 * singleton class the object it is attached to (rb_classext_t
	 * follows struct RClass), and the singleton flag. */
	uint16_t class_path, class_attached;
	uint32_t fl_singleton;
	/* 3.1: rb_classext_t is behind RClass.ptr (at class_ext), and a
	 * class's path and a singleton class's object are instance
	 * variables (__classpath__, __attached__) in its st_table iv_tbl
	 * (at ext_iv_tbl in rb_classext_t); 0: not so */
	uint16_t class_ext, ext_iv_tbl;
};

/* st_table (st.h, 3.1): entries_start, entries_bound, entries; each
 * entry {hash, key, record}, a deleted one's hash all ones. */
#define RUBY_ST_HDR	   56
#define RUBY_ST_ENTRIES_AT 32
#define RUBY_ST_ENTRY	   24
#define RUBY_IVAR_SCAN	   16 /* entries looked at, at most */

/* rb_method_definition_t (3.1 and 3.3 alike): its type in the low 4 bits
 * of the first word, its body from 8 (a cfunc's is 24 bytes, the
 * union's largest), then the method's own ID. */
#define RUBY_DEF_ISEQ	     8
#define RUBY_DEF_ORIGINAL_ID 32
#define RUBY_METHOD_ISEQ     0
#define RUBY_METHOD_CFUNC    1

/* rb_iseq_constant_body.type of a block (enum iseq_type) */
#define RUBY_ISEQ_TYPE_BLOCK 2

/* ID -> serial (symbol.c rb_id_to_serial): operator IDs (up to
 * tLAST_OP_ID) are their own serial, the others shifted past their
 * 4 scope bits; 0: not an ID. The serial's String is entry
 * (serial % 512) * 2 of the Array at (serial / 512) in the symbol
 * table's ids Array. */
#define RUBY_LAST_OP_ID	   0xa9
#define RUBY_ID_ENTRY_UNIT 512
uint64_t ruby_id_serial(uint64_t id);

/*
 * Where the symbol table (ruby_global_symbols: not exported) keeps its
 * last serial and its ids Array, from the code of the function the
 * exported rb_id2str tail-jumps to (get_id_serial_entry, Debian's), or of
 * rb_id2str itself where that is inlined (-O3, the official images'):
 * `cmp %r32, last_id(%rip); jb ..; mov ids(%rip), %r64`, ids 16 bytes
 * after last_id. code is len bytes at ELF address vaddr. Returns 0 and
 * both ELF addresses, or -1.
 */
int ruby_symbols_from_code(const uint8_t *code, size_t len, uint64_t vaddr,
			   uint64_t *last_id, uint64_t *ids);

/* The same from aarch64 code: `adrp; ldr w, [last_id]; cmp; b.cond;
 * add x, .., #symbols; ldr x, [.., #ids]` (Debian's 3.1). */
int ruby_symbols_from_code_a64(const uint8_t *code, size_t len, uint64_t vaddr,
			       uint64_t *last_id, uint64_t *ids);

/* The layout of version major.minor, or NULL: unknown (native stacks). */
const struct ruby_layout *ruby_layout_find(unsigned major, unsigned minor);

/* "3.1.2" -> 3, 1; -1 if s (len bytes, maybe not terminated) is not a
 * version string. */
int ruby_version_parse(const char *s, size_t len, unsigned *major,
		       unsigned *minor);

/*
 * Where ruby_current_ec is, from the machine code of an exported function
 * that reads it (rb_thread_current): x86_64's general-dynamic TLS
 * sequence `lea tls_index(%rip),%rdi; call __tls_get_addr` names the GOT
 * pair {module id, offset} the dynamic linker fills. code is the function's
 * first len bytes at ELF address vaddr. Returns 0 and *got_vaddr (ELF
 * address of the pair), -1 if the sequence is not there (other
 * architectures: not found, native stacks).
 */
int ruby_tls_from_code(const uint8_t *code, size_t len, uint64_t vaddr,
		       uint64_t *got_vaddr);

/*
 * Candidates for the function a stripped libruby's rb_iseq_eval and
 * rb_iseq_eval_main both end in with a tail jump (rb_vm_exec, the VM
 * loop's entry, which 3.3 no longer exports): the targets of what reads
 * as a `jmp rel32` in code (len bytes at ELF address vaddr) and leaves
 * it. A byte scan, so the caller takes a target both functions share.
 * Returns how many (at most max) went into targets.
 */
size_t ruby_tail_jumps(const uint8_t *code, size_t len, uint64_t vaddr,
		       uint64_t *targets, size_t max);

/* The same for aarch64 code: the targets of its `b imm26` instructions
 * that leave it. */
size_t ruby_tail_jumps_a64(const uint8_t *code, size_t len, uint64_t vaddr,
			   uint64_t *targets, size_t max);

/*
 * Where the function starting at func ends: the next function's start in
 * an .eh_frame_hdr search table (hdr: the section's len bytes at ELF
 * address hdr_vaddr; only the usual encoding, datarel sdata4 pairs).
 * Returns 0 and *end, or -1.
 */
int ruby_function_end(const uint8_t *hdr, size_t len, uint64_t hdr_vaddr,
		      uint64_t func, uint64_t *end);

/* Object headers (RBasic.flags). */
#define RUBY_T_MASK	 0x1f
#define RUBY_T_STRING	 0x05
#define RUBY_T_ARRAY	 0x07
#define RUBY_T_IMEMO	 0x1a
#define RUBY_IMEMO_ISEQ	 7
#define RUBY_IMEMO_MENT	 6
#define RUBY_IMEMO_SVAR	 2 /* {flags, cref_or_me, lastline, backref, ..} */
#define RUBY_T_CLASS	 0x02
#define RUBY_T_MODULE	 0x03
#define RUBY_STR_NOEMBED (1u << 13) /* RSTRING_NOEMBED, FL_USER1 */
#define RUBY_ARY_EMBED	 (1u << 13) /* RARRAY_EMBED_FLAG, FL_USER1 */

/* Bytes of a String object read at once: header and embedded bytes. */
#define RUBY_STR_HDR  64
#define RUBY_NAME_MAX 512

/*
 * The text of a String object whose first hlen (<= RUBY_STR_HDR) bytes are
 * hdr: for an embedded string copied into out (NUL-terminated, at most
 * cap - 1 bytes) and *heap_ptr = 0; for a heap string *heap_ptr and *len
 * say what to read next. Returns -1 if it is not a plausible String, 1 for
 * an embedded one longer than hdr holds (3.2+: *len bytes at
 * l->str_embed_ary in the object, read next; *heap_ptr 0), else 0.
 */
int ruby_str_decode(const struct ruby_layout *l, const uint8_t *hdr,
		    size_t hlen, char *out, size_t cap, uint64_t *heap_ptr,
		    uint64_t *len);

/*
 * The instruction's entry in an iseq's insn_info table, from its succinct
 * position index (iseq.c succ_index_table): positions below 54 are in
 * 7-bit counts, nine to a word; the others in 80-byte dictionary blocks
 * of 512 positions. ruby_succ_chunk says which bytes of the table hold
 * pos (the table is only as long as its iseq needs: read no more);
 * ruby_succ_lookup decodes them. Returns the 0-based entry index, or -1.
 */
#define RUBY_SUCC_IMM_BYTES   48
#define RUBY_SUCC_IMM_SIZE    54
#define RUBY_SUCC_BLOCK_BYTES 80
#define RUBY_SUCC_BLOCK_BITS  512
void ruby_succ_chunk(uint64_t pos, uint64_t *off, size_t *len);
int64_t ruby_succ_lookup(const uint8_t *chunk, size_t len, uint64_t pos);

#endif
