// SPDX-License-Identifier: Apache-2.0
/* The VMStructs reader on tables laid out the way libjvm lays them out
 * (VMStructEntry, VMTypeEntry, VMIntConstantEntry), and on broken ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "runtimes/hotspot/hotspot_vmstructs.h"

#define BASE 0x7f0000000000ull
#define SIZE (256 * 1024)

static uint8_t mem[SIZE];
static uint32_t str_at, limit = SIZE;

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < BASE || addr - BASE + len > limit)
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), len);
	return 0;
}

static void put64(uint32_t off, uint64_t v)
{
	memcpy(mem + off, &v, 8);
}

static uint64_t str(const char *s)
{
	uint32_t at = str_at;

	memcpy(mem + at, s, strlen(s) + 1);
	str_at += (uint32_t)strlen(s) + 1;
	return BASE + at;
}

/* Symbols at 0..15 words; struct table at 0x1000 (stride 48, libjvm's),
 * types at 0x4000 (stride 48), ints at 0x6000 (stride 16); strings from
 * 0x8000. */
static struct hotspot_syms build(void)
{
	static const struct {
		const char *t, *f;
		int st;
		uint64_t v;
	} fields[] = {
		{"CodeCache", "_heaps", 1, BASE + 0xf000},
		{"CodeCache", "_low_bound", 1, BASE + 0xf008},
		{"CodeCache", "_high_bound", 1, BASE + 0xf010},
		{"AbstractInterpreter", "_code", 1, BASE + 0xf018},
		{"GrowableArrayBase", "_len", 0, 0},
		{"GrowableArray<int>", "_data", 0, 8},
		{"CodeHeap", "_memory", 0, 8},
		{"CodeHeap", "_segmap", 0, 0x78},
		{"CodeHeap", "_log2_segment_size", 0, 0x100},
		{"VirtualSpace", "_low", 0, 0x10},
		{"VirtualSpace", "_high", 0, 0x18},
		{"StubQueue", "_stub_buffer", 0, 8},
		{"StubQueue", "_buffer_limit", 0, 0x14},
		{"CodeBlob", "_name", 0, 0x60},
		{"CodeBlob", "_size", 0, 0xc},
		{"CodeBlob", "_frame_size", 0, 0x1c},
		{"CodeBlob", "_code_begin", 0, 0x20},
		{"CompiledMethod", "_method", 0, 0x70},
		{"Method", "_constMethod", 0, 8},
		{"ConstMethod", "_constants", 0, 8},
		{"ConstMethod", "_name_index", 0, 0x22},
		{"ConstMethod", "_signature_index", 0, 0x24},
		{"ConstMethod", "_flags", 0, 0x1c},
		{"ConstantPool", "_pool_holder", 0, 0x18},
		{"Klass", "_name", 0, 0x18},
		{"Symbol", "_length", 0, 4},
		{"Symbol", "_body", 0, 6},
		{"Unrelated", "_field", 0, 0x123456}, /* ignored: not wanted */
	};
	static const struct {
		const char *t;
		uint64_t size;
	} types[] = {{"HeapBlock", 16},
		     {"ConstMethod", 0x30},
		     {"ConstantPool", 0x48}};
	struct hotspot_syms s;
	uint32_t e;

	memset(mem, 0, sizeof(mem));
	str_at = 0x8000;
	limit = SIZE;
	for (int i = 0; i < HS_SYM_COUNT; i++)
		s.addr[i] = BASE + 8 * (uint64_t)i;
	put64(8 * HS_SYM_STRUCTS, BASE + 0x1000);
	put64(8 * HS_SYM_STRUCT_TYPE_NAME_OFF, 0);
	put64(8 * HS_SYM_STRUCT_FIELD_NAME_OFF, 8);
	put64(8 * HS_SYM_STRUCT_IS_STATIC_OFF, 24);
	put64(8 * HS_SYM_STRUCT_OFFSET_OFF, 32);
	put64(8 * HS_SYM_STRUCT_ADDRESS_OFF, 40);
	put64(8 * HS_SYM_STRUCT_STRIDE, 48);
	put64(8 * HS_SYM_TYPES, BASE + 0x4000);
	put64(8 * HS_SYM_TYPE_NAME_OFF, 0);
	put64(8 * HS_SYM_TYPE_SIZE_OFF, 40);
	put64(8 * HS_SYM_TYPE_STRIDE, 48);
	put64(8 * HS_SYM_INTS, BASE + 0x6000);
	put64(8 * HS_SYM_INT_NAME_OFF, 0);
	put64(8 * HS_SYM_INT_VALUE_OFF, 8);
	put64(8 * HS_SYM_INT_STRIDE, 16);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		e = 0x1000 + 48 * (uint32_t)i;
		put64(e, str(fields[i].t));
		put64(e + 8, str(fields[i].f));
		put64(e + 16, str("int"));
		mem[e + 24] = (uint8_t)fields[i].st;
		put64(fields[i].st ? e + 40 : e + 32, fields[i].v);
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		e = 0x4000 + 48 * (uint32_t)i;
		put64(e, str(types[i].t));
		put64(e + 40, types[i].size);
	}
	put64(0x6000, str("ConstMethod::_has_linenumber_table"));
	put64(0x6008, 1);
	put64(0x6010, str("frame::interpreter_frame_method_offset"));
	put64(0x6018, (uint32_t)-3);
	return s;
}

static void reads_layout(void **state)
{
	struct hotspot_syms s = build();
	struct hotspot_layout l;

	(void)state;
	assert_int_equal(hotspot_vmstructs_read(&s, mem_read, NULL, &l), 0);
	assert_int_equal(l.entries, 28);
	assert_true(l.code_heaps == BASE + 0xf000);
	assert_true(l.code_low == BASE + 0xf008);
	assert_true(l.interp_code == BASE + 0xf018);
	assert_int_equal(l.heap_segmap, 0x78);
	assert_int_equal(l.heap_log2_segment, 0x100);
	assert_int_equal(l.heap_block_size, 16);
	assert_int_equal(l.blob_frame_size, 0x1c);
	assert_int_equal(l.blob_code_begin, 0x20);
	assert_int_equal(l.blob_code_offset, HS_NONE); /* a 21+ field */
	assert_int_equal(l.nm_method, 0x70);	       /* CompiledMethod's */
	assert_int_equal(l.cmethod_flags, 0x1c);
	assert_int_equal(l.cmethod_size, 0x30);
	assert_int_equal(l.cpool_size, 0x48);
	assert_int_equal(l.symbol_body, 6);
	assert_int_equal(l.has_linenumber_table, 1);
	assert_int_equal(l.frame_interp_method, -3);
	assert_int_equal(l.frame_interp_bcp, -8); /* not published: x86_64 */
	assert_null(hotspot_layout_missing(&l));
}

static void missing_pieces(void **state)
{
	struct hotspot_syms s = build();
	struct hotspot_layout l;

	(void)state;
	/* Drop "CodeBlob::_frame_size" (its field name): the walker cannot
	 * do without it. */
	put64(0x1000 + 48 * 15 + 8, str("_other"));
	assert_int_equal(hotspot_vmstructs_read(&s, mem_read, NULL, &l), 0);
	assert_string_equal(hotspot_layout_missing(&l), "CodeBlob");
	/* A symbol libjvm did not export. */
	s.addr[HS_SYM_TYPES] = 0;
	assert_int_equal(hotspot_vmstructs_read(&s, mem_read, NULL, &l),
			 -ENOENT);
}

static void broken_tables(void **state)
{
	struct hotspot_syms s = build();
	struct hotspot_layout l;

	(void)state;
	put64(8 * HS_SYM_STRUCT_STRIDE, 4096); /* absurd stride */
	assert_int_equal(hotspot_vmstructs_read(&s, mem_read, NULL, &l),
			 -EINVAL);
	s = build();
	put64(8 * HS_SYM_STRUCT_OFFSET_OFF, 44); /* past the stride */
	assert_int_equal(hotspot_vmstructs_read(&s, mem_read, NULL, &l),
			 -EINVAL);
	s = build();
	/* An offset no object we read has: a misread table. */
	put64(0x1000 + 48 * 15 + 32, 1u << 20);
	assert_int_equal(hotspot_vmstructs_read(&s, mem_read, NULL, &l),
			 -EINVAL);
	s = build();
	/* A static where an offset belongs. */
	mem[0x1000 + 48 * 15 + 24] = 1;
	assert_int_equal(hotspot_vmstructs_read(&s, mem_read, NULL, &l),
			 -EINVAL);
	s = build();
	/* Memory ends inside the table (no end marker readable). */
	limit = 0x1000 + 48 * 10;
	assert_int_equal(hotspot_vmstructs_read(&s, mem_read, NULL, &l), -EIO);
	s = build();
	/* A table without an end marker: HS_MAX_ENTRIES entries of
	 * 8 bytes, none of them 0, then the reader gives up. */
	memset(mem + 0x10000, 'A', SIZE - 0x10000);
	put64(8 * HS_SYM_STRUCT_STRIDE, 8);
	put64(8 * HS_SYM_STRUCT_IS_STATIC_OFF, 0);
	put64(8 * HS_SYM_STRUCT_OFFSET_OFF, 0);
	put64(8 * HS_SYM_STRUCT_ADDRESS_OFF, 0);
	put64(8 * HS_SYM_STRUCT_FIELD_NAME_OFF, 0);
	put64(8 * HS_SYM_STRUCTS, BASE + 0x10000);
	assert_int_equal(hotspot_vmstructs_read(&s, mem_read, NULL, &l),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reads_layout),
		cmocka_unit_test(missing_pieces),
		cmocka_unit_test(broken_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
