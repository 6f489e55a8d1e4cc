// SPDX-License-Identifier: Apache-2.0
#include "runtimes/ruby/ruby_layout.h"

#include <string.h>

/*
 * Per-version offsets (vm_core.h, iseq.h, rstring.h of each release): CRuby
 * exposes no layout and Debian's libruby has no debug data. Everything is
 * 64-bit pointers and ints with no architecture-dependent padding, so one
 * table serves x86_64 and arm64.
 */
static const struct ruby_layout layouts[] = {
	{
		/* 3.1: rb_control_frame_t has __bp__ and jit_return (8
		 * words); iseq_location.first_lineno is a Fixnum VALUE */
		.major = 3,
		.minor = 1,
		.walk = {.ec_vm_stack = 0,
			 .ec_vm_stack_size = 8,
			 .ec_cfp = 16,
			 .cfp_size = 64,
			 .cfp_pc = 0,
			 .cfp_iseq = 16,
			 .cfp_ep = 32},
		.iseq_body = 16,
		.body_type = 0,
		.body_iseq_size = 4,
		.body_encoded = 8,
		.body_location = 64,
		.body_insn_info = 120,
		.body_insn_info_size = 136,
		.body_succ_table = 144,
		.body_local_iseq = 176, /* after local_table, catch_table,
					   parent_iseq */
		.body_read = 184,
		.first_lineno_fixnum = 1,
		.insn_info_entry = 12,
		.str_len_in_flags = 1,
		.str_embed_ary = 16,
		/* RClass {basic, super, ptr}; rb_classext_t {iv_index_tbl,
		 * iv_tbl, ...}; FL_SINGLETON is FL_USER0 */
		.class_ext = 24,
		.ext_iv_tbl = 8,
		.fl_singleton = 1u << 12,
	},
	{
		/* 3.3: __bp__ gone (7 words); first_lineno an int; RString
		 * has its len before the union */
		.major = 3,
		.minor = 3,
		.walk = {.ec_vm_stack = 0,
			 .ec_vm_stack_size = 8,
			 .ec_cfp = 16,
			 .cfp_size = 56,
			 .cfp_pc = 0,
			 .cfp_iseq = 16,
			 .cfp_ep = 32},
		.iseq_body = 16,
		.body_type = 0,
		.body_iseq_size = 4,
		.body_encoded = 8,
		.body_location = 64,
		.body_insn_info = 112,
		.body_insn_info_size = 128,
		.body_succ_table = 136,
		.body_local_iseq = 168,
		.body_read = 176,
		.first_lineno_fixnum = 0,
		.insn_info_entry = 12,
		.str_len_in_flags = 0,
		.str_embed_ary = 24,
		/* RClass is 32 bytes, then rb_classext_t: its
		 * as.singleton_class.attached_object at 96, classpath at
		 * 120; FL_SINGLETON is FL_USER0 */
		.class_path = 32 + 120,
		.class_attached = 32 + 96,
		.fl_singleton = 1u << 12,
	},
};

const struct ruby_layout *ruby_layout_find(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == major && layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

static int parse_num(const char **p, const char *end, unsigned *out)
{
	unsigned v = 0;
	int n = 0;

	while (*p < end && **p >= '0' && **p <= '9' && n < 4) {
		v = v * 10 + (unsigned)(**p - '0');
		(*p)++;
		n++;
	}
	*out = v;
	return n ? 0 : -1;
}

int ruby_version_parse(const char *s, size_t len, unsigned *major,
		       unsigned *minor)
{
	const char *p = s, *end = s + len;

	if (parse_num(&p, end, major) || p >= end || *p != '.')
		return -1;
	p++;
	return parse_num(&p, end, minor);
}

int ruby_tls_from_code(const uint8_t *code, size_t len, uint64_t vaddr,
		       uint64_t *got_vaddr)
{
	/* data16 lea disp32(%rip),%rdi; data16 data16 rex.W call */
	static const uint8_t lea[4] = {0x66, 0x48, 0x8d, 0x3d};
	static const uint8_t call[4] = {0x66, 0x66, 0x48, 0xe8};

	for (size_t i = 0; len >= 16 && i <= len - 16; i++) {
		int32_t disp;

		if (memcmp(code + i, lea, 4) || memcmp(code + i + 8, call, 4))
			continue;
		memcpy(&disp, code + i + 4, 4);
		*got_vaddr = vaddr + i + 8 + (uint64_t)(int64_t)disp;
		return 0;
	}
	return -1;
}

int ruby_str_decode(const struct ruby_layout *l, const uint8_t *hdr,
		    size_t hlen, char *out, size_t cap, uint64_t *heap_ptr,
		    uint64_t *len)
{
	uint64_t flags, n;

	if (hlen < 32 || hlen > RUBY_STR_HDR || !cap)
		return -1;
	memcpy(&flags, hdr, 8);
	if ((flags & RUBY_T_MASK) != RUBY_T_STRING)
		return -1;
	*heap_ptr = 0;
	if (flags & RUBY_STR_NOEMBED) {
		memcpy(&n, hdr + 16, 8);
		memcpy(heap_ptr, hdr + 24, 8);
		if (n > RUBY_NAME_MAX || !*heap_ptr)
			return -1;
		*len = n;
		return 0;
	}
	if (l->str_len_in_flags)
		n = (flags >> 14) & 0x1f;
	else
		memcpy(&n, hdr + 16, 8);
	if (n > RUBY_NAME_MAX || n >= cap)
		return -1;
	*len = n;
	/* 3.2+ embeds a string in a slot of up to 640 bytes (variable
	 * width allocation): the rest is read from the object. */
	if (n > hlen - l->str_embed_ary)
		return 1;
	memcpy(out, hdr + l->str_embed_ary, n);
	out[n] = '\0';
	*len = n;
	return 0;
}

void ruby_succ_chunk(uint64_t pos, uint64_t *off, size_t *len)
{
	if (pos < RUBY_SUCC_IMM_SIZE) {
		*off = 8 * (pos / 9);
		*len = 8;
		return;
	}
	*off = RUBY_SUCC_IMM_BYTES +
	       RUBY_SUCC_BLOCK_BYTES *
		       ((pos - RUBY_SUCC_IMM_SIZE) / RUBY_SUCC_BLOCK_BITS);
	*len = RUBY_SUCC_BLOCK_BYTES;
}

int64_t ruby_succ_lookup(const uint8_t *chunk, size_t len, uint64_t pos)
{
	uint64_t w, ranks, bits;
	uint32_t rank, bi, sbi, small = 0;

	if (pos < RUBY_SUCC_IMM_SIZE) {
		if (len < 8)
			return -1;
		memcpy(&w, chunk, 8);
		return (int64_t)((w >> (7 * (pos % 9))) & 0x7f) - 1;
	}
	if (len < RUBY_SUCC_BLOCK_BYTES)
		return -1;
	bi = (uint32_t)((pos - RUBY_SUCC_IMM_SIZE) % RUBY_SUCC_BLOCK_BITS);
	sbi = bi / 64;
	memcpy(&rank, chunk, 4);
	memcpy(&ranks, chunk + 8, 8);
	memcpy(&bits, chunk + 16 + 8 * sbi, 8);
	if (sbi)
		small = (uint32_t)((ranks >> ((sbi - 1) * 9)) & 0x1ff);
	return (int64_t)rank + small +
	       __builtin_popcountll(bits << (63 - bi % 64)) - 1;
}

size_t ruby_tail_jumps(const uint8_t *code, size_t len, uint64_t vaddr,
		       uint64_t *targets, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; len >= 5 && i <= len - 5 && n < max; i++) {
		int32_t rel;
		uint64_t to;

		if (code[i] != 0xe9)
			continue;
		memcpy(&rel, code + i + 1, 4);
		to = vaddr + i + 5 + (uint64_t)(int64_t)rel;
		if (to >= vaddr && to < vaddr + len)
			continue; /* a jump inside the function */
		targets[n++] = to;
	}
	return n;
}

/* aarch64 instructions are little-endian words at 4-byte alignment. */
static uint32_t a64_insn(const uint8_t *code, size_t i)
{
	return (uint32_t)code[i] | (uint32_t)code[i + 1] << 8 |
	       (uint32_t)code[i + 2] << 16 | (uint32_t)code[i + 3] << 24;
}

size_t ruby_tail_jumps_a64(const uint8_t *code, size_t len, uint64_t vaddr,
			   uint64_t *targets, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; len >= 4 && i <= len - 4 && n < max; i += 4) {
		uint32_t insn = a64_insn(code, i);
		int64_t rel;
		uint64_t to;

		if ((insn & 0xfc000000u) != 0x14000000u) /* b imm26 */
			continue;
		rel = (int64_t)((uint64_t)(insn & 0x03ffffffu) << 38) >> 36;
		to = vaddr + i + (uint64_t)rel;
		if (to >= vaddr && to < vaddr + len)
			continue; /* a jump inside the function */
		targets[n++] = to;
	}
	return n;
}

int ruby_function_end(const uint8_t *hdr, size_t len, uint64_t hdr_vaddr,
		      uint64_t func, uint64_t *end)
{
	uint32_t count, lo = 0, hi;
	const uint8_t *table;

	/* version 1; eh_frame_ptr sdata4 pcrel (0x1b); fde_count udata4
	 * (0x03); table datarel sdata4 (0x3b) */
	if (len < 12 || hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 ||
	    hdr[3] != 0x3b)
		return -1;
	memcpy(&count, hdr + 8, 4);
	if (count < 2 || count > (len - 12) / 8)
		return -1;
	table = hdr + 12;
	hi = count;
	/* the first entry starting after func */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int32_t loc;

		memcpy(&loc, table + 8 * (size_t)mid, 4);
		if (hdr_vaddr + (uint64_t)(int64_t)loc <= func)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || lo >= count)
		return -1;
	{
		int32_t prev, next;

		memcpy(&prev, table + 8 * (size_t)(lo - 1), 4);
		memcpy(&next, table + 8 * (size_t)lo, 4);
		if (hdr_vaddr + (uint64_t)(int64_t)prev != func)
			return -1; /* func does not start an FDE */
		*end = hdr_vaddr + (uint64_t)(int64_t)next;
	}
	return 0;
}

/* The page adrp xN, page at pc gives, or 0 if insn is no adrp. */
static uint64_t a64_adrp(uint32_t insn, uint64_t pc, unsigned *reg)
{
	uint64_t imm;

	if ((insn & 0x9f000000u) != 0x90000000u)
		return 0;
	*reg = insn & 31;
	imm = (uint64_t)((insn >> 5) & 0x7ffff) << 2 | ((insn >> 29) & 3);
	return (pc & ~0xfffull) +
	       (uint64_t)((int64_t)(imm << 43) >> 31); /* sign, << 12 */
}

int ruby_symbols_from_code_a64(const uint8_t *code, size_t len, uint64_t vaddr,
			       uint64_t *last_id, uint64_t *ids)
{
	/* adrp xN, page; ldr wM, [xN, #a]; cmp wS, wM; b.cond;
	 * add xK, xN, #b; then within 3 instructions ldr xD, [xK, #c]:
	 * last_id at page + a, ids at page + b + c */
	for (size_t i = 0; len >= 32 && i <= len - 32; i += 4) {
		uint32_t ldr = a64_insn(code, i + 4),
			 cmp = a64_insn(code, i + 8);
		uint32_t bc = a64_insn(code, i + 12),
			 add = a64_insn(code, i + 16);
		unsigned n = 0, m;
		uint64_t page = a64_adrp(a64_insn(code, i), vaddr + i, &n);

		if (!page || (ldr & 0xffc00000u) != 0xb9400000u ||
		    ((ldr >> 5) & 31) != n)
			continue;
		m = ldr & 31;
		if ((cmp & 0xffe0fc1fu) != 0x6b00001fu ||
		    (((cmp >> 16) & 31) != m && ((cmp >> 5) & 31) != m) ||
		    (bc & 0xff000010u) != 0x54000000u ||
		    (add & 0xffc00000u) != 0x91000000u ||
		    ((add >> 5) & 31) != n)
			continue;
		for (size_t j = i + 20; j <= i + 28; j += 4) {
			uint32_t ld = a64_insn(code, j);

			if ((ld & 0xffc00000u) != 0xf9400000u ||
			    ((ld >> 5) & 31) != (add & 31))
				continue;
			*last_id = page + ((ldr >> 10) & 0xfff) * 4;
			*ids = page + ((add >> 10) & 0xfff) +
			       ((ld >> 10) & 0xfff) * 8;
			return 0;
		}
	}
	return -1;
}

uint64_t ruby_id_serial(uint64_t id)
{
	return id > RUBY_LAST_OP_ID ? id >> 4 : id;
}

int ruby_symbols_from_code(const uint8_t *code, size_t len, uint64_t vaddr,
			   uint64_t *last_id, uint64_t *ids)
{
	/* cmp %r32, disp32(%rip); jb rel8; mov disp32(%rip), %r64: any
	 * of the first eight registers compared, any loaded (REX.W or
	 * REX.WR); ModRM mod 00, rm 101 is the RIP-relative operand */
	for (size_t i = 0; len >= 15 && i <= len - 15; i++) {
		int32_t d1, d2;

		if (code[i] != 0x39 || (code[i + 1] & 0xc7) != 0x05 ||
		    code[i + 6] != 0x72 ||
		    (code[i + 8] != 0x48 && code[i + 8] != 0x4c) ||
		    code[i + 9] != 0x8b || (code[i + 10] & 0xc7) != 0x05)
			continue;
		memcpy(&d1, code + i + 2, 4);
		memcpy(&d2, code + i + 11, 4);
		*last_id = vaddr + i + 6 + (uint64_t)(int64_t)d1;
		*ids = vaddr + i + 15 + (uint64_t)(int64_t)d2;
		/* the ids Array is two words after last_id in rb_symbols_t
		 * (3.0 to 3.4): anything else is another compare */
		if (*ids != *last_id + 16)
			continue;
		return 0;
	}
	return -1;
}
