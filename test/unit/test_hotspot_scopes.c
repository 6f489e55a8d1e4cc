// SPDX-License-Identifier: Apache-2.0
/*
 * A compiled method's scope chain (what it inlined at a pc) from memory
 * laid out as the JVMs lay it out: 25's immutable data (PcDescs, then
 * scopes in UNSIGNED5) with the metadata after the relocations in the
 * blob's mutable data, and 17's PcDescs in the blob with the scopes and
 * metadata where its fields say (CompressedStream). Innermost first;
 * a Method that cannot be believed is 0, never another.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "runtimes/hotspot/hotspot_jvm.h"

#define BASE 0x10000ull
#define SIZE 0x4000u

static uint8_t mem[SIZE];

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < BASE || addr - BASE > SIZE || len > SIZE - (addr - BASE))
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), len);
	return 0;
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(mem + (addr - BASE), &v, 4);
}

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(mem + (addr - BASE), &v, 8);
}

/* Numbers below 191 take one byte in both formats: UNSIGNED5 adds 1. */
static void put_scope(uint64_t addr, bool u5, uint32_t sender, uint32_t mi,
		      uint32_t bci)
{
	uint8_t *p = mem + (addr - BASE);

	p[0] = (uint8_t)(sender + u5);
	p[1] = (uint8_t)(mi + u5);
	p[2] = (uint8_t)(bci + 1 + u5);
}

#define BLOB	 (BASE + 0x1000)
#define M_INNER	 0xa000ull
#define M_MIDDLE 0xb000ull
#define M_OWN	 0xc000ull

struct fixture {
	struct hotspot_jvm j;
	struct hotspot_blob b;
	uint64_t meta, data; /* metadata words, scopes data */
};

/* Two PcDescs: at code+0x20 the chain inner(bci 2) <- middle(bci 5) <-
 * own(bci 10), at code+0x40 the own method alone (bci 12). */
static void common(struct fixture *f, bool u5)
{
	put64(f->meta, M_INNER);
	put64(f->meta + 8, M_MIDDLE);
	put64(f->meta + 16, M_OWN);
	put_scope(f->data + 1, u5, 0, 3, 10);
	put_scope(f->data + 4, u5, 1, 2, 5);
	put_scope(f->data + 7, u5, 4, 1, 2);
	put_scope(f->data + 10, u5, 0, 3, 12);
	f->b.addr = BLOB;
	f->b.code_begin = BLOB + 0x100;
	f->b.code_end = BLOB + 0x200;
	f->b.nmethod = true;
	f->b.method = M_OWN;
	f->j.read = mem_read;
	f->j.l.unsigned5 = u5;
}

static void pcdescs(uint64_t at)
{
	put32(at, 0x20);
	put32(at + 4, 7);
	put32(at + 16, 0x40);
	put32(at + 20, 10);
}

/* 25: offsets into immutable data; metadata after 16 bytes of
 * relocations in the mutable data. */
static void layout25(struct fixture *f)
{
	const uint64_t imm = BASE + 0x2000, mut = BASE + 0x3000;

	memset(mem, 0, sizeof(mem));
	memset(f, 0, sizeof(*f));
	memset(&f->j.l, 0xff,
	       offsetof(struct hotspot_layout, has_linenumber_table));
	f->j.l.nm_immutable_data = 0x00;
	f->j.l.nm_scopes_pcs = 0x08;
	f->j.l.nm_scopes_data = 0x0c;
	f->j.l.blob_mutable_data = 0x10;
	f->j.l.blob_mutable_size = 0x18;
	f->j.l.blob_relocation_size = 0x1c;
	put64(BLOB, imm);
	put32(BLOB + 0x08, 0);	/* PcDescs at imm */
	put32(BLOB + 0x0c, 32); /* scopes after them */
	put64(BLOB + 0x10, mut);
	put32(BLOB + 0x18, 16 + 24);
	put32(BLOB + 0x1c, 16);
	f->meta = mut + 16;
	f->data = imm + 32;
	pcdescs(imm);
	common(f, true);
}

/* 17: PcDescs at offsets from the blob, scopes at a pointer, metadata
 * at an offset from the blob up to the scopes. */
static void layout17(struct fixture *f)
{
	memset(mem, 0, sizeof(mem));
	memset(f, 0, sizeof(*f));
	memset(&f->j.l, 0xff,
	       offsetof(struct hotspot_layout, has_linenumber_table));
	f->j.l.nm_scopes_pcs = 0x08;
	f->j.l.nm_dependencies = 0x0c;
	f->j.l.nm_scopes_data_begin = 0x10;
	f->j.l.nm_metadata = 0x18;
	put32(BLOB + 0x08, 0x400);
	put32(BLOB + 0x0c, 0x420);
	put64(BLOB + 0x10, BLOB + 0x318);
	put32(BLOB + 0x18, 0x300);
	f->meta = BLOB + 0x300;
	f->data = BLOB + 0x318;
	pcdescs(BLOB + 0x400);
	common(f, false);
}

static void chain(struct fixture *f)
{
	struct hotspot_scope sc[HS_MAX_SCOPES];
	int n;

	/* a return address at the call: the whole chain, innermost first */
	n = hotspot_nmethod_scopes(&f->j, &f->b, f->b.code_begin + 0x20, sc,
				   HS_MAX_SCOPES);
	assert_int_equal(n, 3);
	assert_int_equal(sc[0].method, M_INNER);
	assert_int_equal(sc[0].bci, 2);
	assert_int_equal(sc[1].method, M_MIDDLE);
	assert_int_equal(sc[1].bci, 5);
	assert_int_equal(sc[2].method, M_OWN);
	assert_int_equal(sc[2].bci, 10);
	assert_int_equal(
		hotspot_nmethod_bci(&f->j, &f->b, f->b.code_begin + 0x20), 10);
	/* between: the next PcDesc's, the own method alone */
	n = hotspot_nmethod_scopes(&f->j, &f->b, f->b.code_begin + 0x30, sc,
				   HS_MAX_SCOPES);
	assert_int_equal(n, 1);
	assert_int_equal(sc[0].method, M_OWN);
	assert_int_equal(sc[0].bci, 12);
	/* room for two: the outermost two */
	n = hotspot_nmethod_scopes(&f->j, &f->b, f->b.code_begin + 0x20, sc, 2);
	assert_int_equal(n, 2);
	assert_int_equal(sc[0].method, M_MIDDLE);
	assert_int_equal(sc[1].method, M_OWN);
}

static void chain25(void **state)
{
	struct fixture f;

	(void)state;
	layout25(&f);
	chain(&f);
}

static void chain17(void **state)
{
	struct fixture f;

	(void)state;
	layout17(&f);
	chain(&f);
}

/* The outermost scope's Method is not the nmethod's: a layout misread,
 * no inner Method believed (the chain and bcis stay). */
static void own_mismatch(void **state)
{
	struct hotspot_scope sc[HS_MAX_SCOPES];
	struct fixture f;

	(void)state;
	for (int v = 0; v < 2; v++) {
		if (v)
			layout17(&f);
		else
			layout25(&f);
		put64(f.meta + 16, 0xdead000);
		assert_int_equal(hotspot_nmethod_scopes(&f.j, &f.b,
							f.b.code_begin + 0x20,
							sc, HS_MAX_SCOPES),
				 3);
		assert_int_equal(sc[0].method, 0);
		assert_int_equal(sc[1].method, 0);
		assert_int_equal(sc[2].method, M_OWN);
		assert_int_equal(sc[0].bci, 2);
	}
}

/* An index past the metadata, or 0 (null): that scope's Method is 0. */
static void bad_index(void **state)
{
	struct hotspot_scope sc[HS_MAX_SCOPES];
	struct fixture f;

	(void)state;
	layout25(&f);
	put_scope(f.data + 7, true, 4, 9, 2);
	assert_int_equal(hotspot_nmethod_scopes(&f.j, &f.b,
						f.b.code_begin + 0x20, sc,
						HS_MAX_SCOPES),
			 3);
	assert_int_equal(sc[0].method, 0);
	assert_int_equal(sc[1].method, M_MIDDLE);
	put_scope(f.data + 7, true, 4, 0, 2);
	assert_int_equal(hotspot_nmethod_scopes(&f.j, &f.b,
						f.b.code_begin + 0x20, sc,
						HS_MAX_SCOPES),
			 3);
	assert_int_equal(sc[0].method, 0);
	/* a layout without the metadata's place: only the own method */
	layout25(&f);
	f.j.l.blob_mutable_data = HS_NONE;
	assert_int_equal(hotspot_nmethod_scopes(&f.j, &f.b,
						f.b.code_begin + 0x20, sc,
						HS_MAX_SCOPES),
			 3);
	assert_int_equal(sc[0].method, 0);
	assert_int_equal(sc[1].method, 0);
	assert_int_equal(sc[2].method, M_OWN);
	/* relocations said larger than the mutable data */
	layout25(&f);
	put32(BLOB + 0x1c, 64);
	assert_int_equal(hotspot_nmethod_scopes(&f.j, &f.b,
						f.b.code_begin + 0x20, sc,
						HS_MAX_SCOPES),
			 3);
	assert_int_equal(sc[0].method, 0);
}

/* A scope naming itself as its sender, a chain that never ends, and
 * scopes past the readable memory: no chain at all. */
static void broken(void **state)
{
	struct hotspot_scope sc[HS_MAX_SCOPES];
	struct fixture f;

	(void)state;
	layout25(&f);
	put_scope(f.data + 4, true, 4, 2, 5);
	assert_int_equal(hotspot_nmethod_scopes(&f.j, &f.b,
						f.b.code_begin + 0x20, sc,
						HS_MAX_SCOPES),
			 -1);
	layout25(&f);
	put_scope(f.data + 1, true, 7, 3, 10); /* 7 -> 4 -> 1 -> 7 ... */
	assert_int_equal(hotspot_nmethod_scopes(&f.j, &f.b,
						f.b.code_begin + 0x20, sc,
						HS_MAX_SCOPES),
			 -1);
	layout25(&f);
	put32(BLOB + 0x0c, SIZE); /* scopes outside the memory */
	assert_int_equal(hotspot_nmethod_scopes(&f.j, &f.b,
						f.b.code_begin + 0x20, sc,
						HS_MAX_SCOPES),
			 -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(chain25),	cmocka_unit_test(chain17),
		cmocka_unit_test(own_mismatch), cmocka_unit_test(bad_index),
		cmocka_unit_test(broken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
