// SPDX-License-Identifier: Apache-2.0
/*
 * Reading HotSpot's VMStructs tables from a JVM's memory. The tables are
 * a few thousand entries of pointers to names in libjvm's read-only data,
 * so reads go through a small page cache (one process_vm_readv per 4 KiB
 * page, not per string). No library reads these tables (the JDK's own
 * reader, the serviceability agent, is Java), hence this one.
 */
#include "runtimes/hotspot/hotspot_vmstructs.h"
#include "elf/elf_dynsym.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const char *const hotspot_sym_names[HS_SYM_COUNT] = {
	[HS_SYM_STRUCTS] = "gHotSpotVMStructs",
	[HS_SYM_STRUCT_TYPE_NAME_OFF] = "gHotSpotVMStructEntryTypeNameOffset",
	[HS_SYM_STRUCT_FIELD_NAME_OFF] = "gHotSpotVMStructEntryFieldNameOffset",
	[HS_SYM_STRUCT_IS_STATIC_OFF] = "gHotSpotVMStructEntryIsStaticOffset",
	[HS_SYM_STRUCT_OFFSET_OFF] = "gHotSpotVMStructEntryOffsetOffset",
	[HS_SYM_STRUCT_ADDRESS_OFF] = "gHotSpotVMStructEntryAddressOffset",
	[HS_SYM_STRUCT_STRIDE] = "gHotSpotVMStructEntryArrayStride",
	[HS_SYM_TYPES] = "gHotSpotVMTypes",
	[HS_SYM_TYPE_NAME_OFF] = "gHotSpotVMTypeEntryTypeNameOffset",
	[HS_SYM_TYPE_SIZE_OFF] = "gHotSpotVMTypeEntrySizeOffset",
	[HS_SYM_TYPE_STRIDE] = "gHotSpotVMTypeEntryArrayStride",
	[HS_SYM_INTS] = "gHotSpotVMIntConstants",
	[HS_SYM_INT_NAME_OFF] = "gHotSpotVMIntConstantEntryNameOffset",
	[HS_SYM_INT_VALUE_OFF] = "gHotSpotVMIntConstantEntryValueOffset",
	[HS_SYM_INT_STRIDE] = "gHotSpotVMIntConstantEntryArrayStride",
};

#define PAGE	    4096u
#define CACHE_PAGES 64u
/* An entry's stride and the offsets in it stay below this. */
#define MAX_STRIDE 256u

struct page_cache {
	mem_read_fn read;
	void *ctx;
	uint64_t budget; /* bytes left to read */
	uint64_t tag[CACHE_PAGES];
	uint8_t ok[CACHE_PAGES]; /* 0 empty, 1 read, 2 unreadable */
	uint8_t data[CACHE_PAGES][PAGE];
};

/* 0, -EIO (unreadable), -E2BIG (budget spent). */
static int cache_page(struct page_cache *c, uint64_t page, const uint8_t **out)
{
	uint32_t slot = (uint32_t)((page / PAGE) % CACHE_PAGES);

	if (c->ok[slot] && c->tag[slot] == page) {
		*out = c->data[slot];
		return c->ok[slot] == 1 ? 0 : -EIO;
	}
	if (c->budget < PAGE)
		return -E2BIG;
	c->budget -= PAGE;
	c->tag[slot] = page;
	/* an unreadable page is remembered too: one bad pointer repeated
	 * costs one read */
	c->ok[slot] = 2;
	if (c->read(c->ctx, page, c->data[slot], PAGE))
		return -EIO;
	c->ok[slot] = 1;
	*out = c->data[slot];
	return 0;
}

static int cache_read(struct page_cache *c, uint64_t addr, void *buf,
		      size_t len)
{
	uint8_t *dst = buf;

	if (addr + len < addr)
		return -EIO;
	while (len) {
		uint64_t page = addr & ~(uint64_t)(PAGE - 1);
		size_t in = addr - page, n = PAGE - in;
		const uint8_t *p;
		int err = cache_page(c, page, &p);

		if (err)
			return err;
		if (n > len)
			n = len;
		memcpy(dst, p + in, n);
		dst += n;
		addr += n;
		len -= n;
	}
	return 0;
}

static int cache_u64(struct page_cache *c, uint64_t addr, uint64_t *v)
{
	return cache_read(c, addr, v, sizeof(*v));
}

/* A NUL-terminated name of at most HS_NAME_MAX - 1 bytes; longer ones
 * are refused (no name we look for is that long). */
static int cache_str(struct page_cache *c, uint64_t addr, char *out)
{
	for (uint32_t i = 0; i < HS_NAME_MAX; i++) {
		int err = cache_read(c, addr + i, &out[i], 1);

		if (err)
			return err;
		if (!out[i])
			return 0;
	}
	out[HS_NAME_MAX - 1] = '\0';
	return -EINVAL;
}

struct table {
	uint64_t base, stride;
	uint64_t off[4]; /* name, second name / value, is_static, offset,
			    address: per table */
	uint32_t noff;
};

/* The value of an exported variable: a pointer or a uint64_t. */
static int sym_u64(struct page_cache *c, const struct hotspot_syms *s,
		   enum hotspot_sym which, uint64_t *v)
{
	if (!s->addr[which])
		return -ENOENT;
	return cache_u64(c, s->addr[which], v) ? -EIO : 0;
}

static int table_setup(struct page_cache *c, const struct hotspot_syms *s,
		       enum hotspot_sym base, enum hotspot_sym stride,
		       const enum hotspot_sym *offs, uint32_t noff,
		       struct table *t, uint64_t width[])
{
	int err;

	memset(t, 0, sizeof(*t));
	if ((err = sym_u64(c, s, base, &t->base)) ||
	    (err = sym_u64(c, s, stride, &t->stride)))
		return err;
	if (!t->base || t->stride < 8 || t->stride > MAX_STRIDE ||
	    (t->stride & 7))
		return -EINVAL;
	for (uint32_t i = 0; i < noff; i++) {
		if ((err = sym_u64(c, s, offs[i], &t->off[i])))
			return err;
		if (t->off[i] > t->stride || t->off[i] + width[i] > t->stride)
			return -EINVAL;
	}
	t->noff = noff;
	return 0;
}

static uint64_t field(const uint8_t *entry, uint64_t off, uint64_t width)
{
	uint64_t v = 0;

	memcpy(&v, entry + off, width); /* little endian */
	return v;
}

/* One entry of the tables: a field (its offset, or address if static), a
 * type's size (field NULL) or an int constant (type NULL). */
typedef void (*hotspot_entry_fn)(void *arg, const char *type, const char *field,
				 bool is_static, uint64_t value);

static int walk_tables(struct page_cache *c, const struct hotspot_syms *s,
		       hotspot_entry_fn fn, void *arg, uint32_t *nstructs)
{
	static const enum hotspot_sym struct_offs[] = {
		HS_SYM_STRUCT_TYPE_NAME_OFF, HS_SYM_STRUCT_FIELD_NAME_OFF,
		HS_SYM_STRUCT_IS_STATIC_OFF, HS_SYM_STRUCT_OFFSET_OFF};
	static const enum hotspot_sym type_offs[] = {HS_SYM_TYPE_NAME_OFF,
						     HS_SYM_TYPE_SIZE_OFF};
	static const enum hotspot_sym int_offs[] = {HS_SYM_INT_NAME_OFF,
						    HS_SYM_INT_VALUE_OFF};
	uint64_t sw[] = {8, 8, 4, 8}, tw[] = {8, 8}, iw[] = {8, 4};
	uint64_t addr_off;
	uint8_t entry[MAX_STRIDE];
	char type[HS_NAME_MAX], name[HS_NAME_MAX];
	struct table t;
	uint32_t i;
	int err;

	/* VMStructEntry: type name, field name, isStatic, offset, address */
	if ((err = table_setup(c, s, HS_SYM_STRUCTS, HS_SYM_STRUCT_STRIDE,
			       struct_offs, 4, &t, sw)) ||
	    (err = sym_u64(c, s, HS_SYM_STRUCT_ADDRESS_OFF, &addr_off)))
		return err;
	if (addr_off > t.stride || addr_off + 8 > t.stride)
		return -EINVAL;
	for (i = 0; i < HS_MAX_ENTRIES; i++) {
		uint64_t tn, fnm;
		bool st;

		if ((err = cache_read(c, t.base + i * t.stride, entry,
				      t.stride)))
			return err;
		tn = field(entry, t.off[0], 8);
		fnm = field(entry, t.off[1], 8);
		if (!tn)
			break; /* the end marker */
		if (!fnm || cache_str(c, tn, type) || cache_str(c, fnm, name))
			continue; /* a name we would not look for */
		st = field(entry, t.off[2], 4) != 0;
		fn(arg, type, name, st,
		   st ? field(entry, addr_off, 8) : field(entry, t.off[3], 8));
	}
	if (i == HS_MAX_ENTRIES)
		return -EINVAL;
	*nstructs = i;

	/* VMTypeEntry: type name, size (field NULL marks a type) */
	if ((err = table_setup(c, s, HS_SYM_TYPES, HS_SYM_TYPE_STRIDE,
			       type_offs, 2, &t, tw)))
		return err;
	for (i = 0; i < HS_MAX_ENTRIES; i++) {
		uint64_t tn;

		if ((err = cache_read(c, t.base + i * t.stride, entry,
				      t.stride)))
			return err;
		tn = field(entry, t.off[0], 8);
		if (!tn)
			break;
		if (cache_str(c, tn, type))
			continue;
		fn(arg, type, NULL, false, field(entry, t.off[1], 8));
	}
	if (i == HS_MAX_ENTRIES)
		return -EINVAL;

	/* VMIntConstantEntry: name, int32 value (type NULL marks one) */
	if ((err = table_setup(c, s, HS_SYM_INTS, HS_SYM_INT_STRIDE, int_offs,
			       2, &t, iw)))
		return err;
	for (i = 0; i < HS_MAX_ENTRIES; i++) {
		uint64_t nm;

		if ((err = cache_read(c, t.base + i * t.stride, entry,
				      t.stride)))
			return err;
		nm = field(entry, t.off[0], 8);
		if (!nm)
			break;
		if (cache_str(c, nm, name))
			continue;
		fn(arg, NULL, name, false,
		   (uint64_t)(int64_t)(int32_t)field(entry, t.off[1], 4));
	}
	return i == HS_MAX_ENTRIES ? -EINVAL : 0;
}

static int with_cache(const struct hotspot_syms *s, mem_read_fn read, void *ctx,
		      hotspot_entry_fn fn, void *arg, uint32_t *nstructs)
{
	struct page_cache *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	c->read = read;
	c->ctx = ctx;
	c->budget = HS_MAX_READ_BYTES;
	err = walk_tables(c, s, fn, arg, nstructs);
	free(c);
	return err;
}

/* What we pick from the tables: (type, field) -> a slot of the layout.
 * A NULL field names a type's size; a NULL type an int constant. */
enum want_kind { W_OFF32, W_STATIC, W_SIZE, W_INT };
struct want {
	const char *type, *field;
	enum want_kind kind;
	size_t slot;
};

#define OFF(t, f, m)                                                           \
	{                                                                      \
		t, f, W_OFF32, offsetof(struct hotspot_layout, m)              \
	}
#define STATIC(t, f, m)                                                        \
	{                                                                      \
		t, f, W_STATIC, offsetof(struct hotspot_layout, m)             \
	}
#define SIZE(t, m)                                                             \
	{                                                                      \
		t, NULL, W_SIZE, offsetof(struct hotspot_layout, m)            \
	}
#define INT(n, m)                                                              \
	{                                                                      \
		NULL, n, W_INT, offsetof(struct hotspot_layout, m)             \
	}

static const struct want wants[] = {
	STATIC("CodeCache", "_heaps", code_heaps),
	STATIC("CodeCache", "_low_bound", code_low),
	STATIC("CodeCache", "_high_bound", code_high),
	STATIC("AbstractInterpreter", "_code", interp_code),
	OFF("GrowableArrayBase", "_len", array_len),
	OFF("GrowableArray<int>", "_data", array_data),
	OFF("CodeHeap", "_memory", heap_memory),
	OFF("CodeHeap", "_segmap", heap_segmap),
	OFF("CodeHeap", "_log2_segment_size", heap_log2_segment),
	OFF("VirtualSpace", "_low", vspace_low),
	OFF("VirtualSpace", "_high", vspace_high),
	OFF("VirtualSpace", "_high_boundary", vspace_high_boundary),
	SIZE("HeapBlock", heap_block_size),
	OFF("HeapBlock::Header", "_used", heap_block_used),
	OFF("StubQueue", "_stub_buffer", stubq_buffer),
	OFF("StubQueue", "_buffer_limit", stubq_limit),
	OFF("CodeBlob", "_name", blob_name),
	OFF("CodeBlob", "_size", blob_size),
	OFF("CodeBlob", "_frame_size", blob_frame_size),
	OFF("CodeBlob", "_kind", blob_kind),
	OFF("CodeBlob", "_code_begin", blob_code_begin),
	OFF("CodeBlob", "_code_end", blob_code_end),
	OFF("CodeBlob", "_code_offset", blob_code_offset),
	OFF("CodeBlob", "_data_offset", blob_data_offset),
	OFF("nmethod", "_method", nm_method),	     /* 21+ */
	OFF("CompiledMethod", "_method", nm_method), /* 17 */
	OFF("nmethod", "_entry_bci", nm_entry_bci),
	OFF("nmethod", "_scopes_pcs_offset", nm_scopes_pcs),
	OFF("nmethod", "_dependencies_offset", nm_dependencies),
	OFF("CompiledMethod", "_scopes_data_begin", nm_scopes_data_begin),
	OFF("nmethod", "_scopes_data_offset", nm_scopes_data),
	OFF("nmethod", "_immutable_data", nm_immutable_data),
	OFF("nmethod", "_compile_id", nm_compile_id),
	OFF("nmethod", "_metadata_offset", nm_metadata),	  /* 17 */
	OFF("CodeBlob", "_mutable_data", blob_mutable_data),	  /* 25 */
	OFF("CodeBlob", "_mutable_data_size", blob_mutable_size), /* 25 */
	OFF("CodeBlob", "_relocation_size", blob_relocation_size),
	OFF("Method", "_constMethod", method_const),
	OFF("Method", "_access_flags", method_flags),
	OFF("ConstMethod", "_constants", cmethod_constants),
	OFF("ConstMethod", "_name_index", cmethod_name_index),
	OFF("ConstMethod", "_signature_index", cmethod_sig_index),
	OFF("ConstMethod", "_code_size", cmethod_code_size),
	OFF("ConstMethod", "_flags._flags", cmethod_flags), /* 21+ */
	OFF("ConstMethod", "_flags", cmethod_flags),	    /* 17 */
	SIZE("ConstMethod", cmethod_size),
	OFF("ConstantPool", "_pool_holder", cpool_holder),
	OFF("ConstantPool", "_source_file_name_index", cpool_source_file),
	OFF("ConstantPool", "_length", cpool_length),
	SIZE("ConstantPool", cpool_size),
	OFF("Klass", "_name", klass_name),
	OFF("Symbol", "_length", symbol_length),
	OFF("Symbol", "_body", symbol_body),
	INT("ConstMethod::_has_linenumber_table", has_linenumber_table),
	INT("ConstMethodFlags::_misc_has_linenumber_table",
	    has_linenumber_table),
	INT("CodeBlobKind::Nmethod", kind_nmethod),
	INT("frame::interpreter_frame_method_offset", frame_interp_method),
	INT("frame::interpreter_frame_bcp_offset", frame_interp_bcp),
	INT("frame::interpreter_frame_sender_sp_offset",
	    frame_interp_sender_sp),
};

struct pick {
	struct hotspot_layout *l;
	bool bad, flags21;
};

static void pick_entry(void *arg, const char *type, const char *field,
		       bool is_static, uint64_t value)
{
	struct pick *p = arg;
	uint8_t *base = (uint8_t *)p->l;

	if (type && field && !strcmp(type, "ConstMethod") &&
	    !strcmp(field, "_flags._flags"))
		p->flags21 = true;

	for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
		const struct want *w = &wants[i];
		uint32_t v32;
		int32_t i32;

		if (w->kind == W_INT) {
			if (type || strcmp(field, w->field))
				continue;
		} else if (!type || strcmp(type, w->type) ||
			   (w->field ? !field || strcmp(field, w->field)
				     : field != NULL)) {
			continue;
		}
		switch (w->kind) {
		case W_STATIC:
			if (!is_static) {
				p->bad = true;
				return;
			}
			memcpy(base + w->slot, &value, 8);
			break;
		case W_OFF32:
		case W_SIZE:
			/* objects we read are small: offsets and sizes
			 * beyond 64 KiB mean a table we misread */
			if (is_static || value >= (1u << 16)) {
				p->bad = true;
				return;
			}
			v32 = (uint32_t)value;
			memcpy(base + w->slot, &v32, 4);
			break;
		case W_INT:
			i32 = (int32_t)value;
			memcpy(base + w->slot, &i32, 4);
			break;
		}
		return;
	}
}

/* frame_x86.hpp: sender sp, last sp, method, mirror, mdp, cache, locals,
 * bcp below rbp. frame_aarch64.hpp keeps mdp and a padding word before
 * the mirror: method 3, bcp 9 words below x29. */
#if defined(__aarch64__)
#define HS_INTERP_METHOD_DEFAULT (-3)
#define HS_INTERP_BCP_DEFAULT	 (-9)
#elif defined(__x86_64__)
#define HS_INTERP_METHOD_DEFAULT (-3)
#define HS_INTERP_BCP_DEFAULT	 (-8)
#else
#error "HotSpot interpreter frame layout: x86_64 or aarch64"
#endif

int hotspot_vmstructs_read(const struct hotspot_syms *s, mem_read_fn read,
			   void *ctx, struct hotspot_layout *out)
{
	struct pick p = {out, false, false};
	int err;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++)
		if (wants[i].kind == W_OFF32 || wants[i].kind == W_SIZE)
			memcpy((uint8_t *)out + wants[i].slot,
			       &(uint32_t){HS_NONE}, 4);
	/* Interpreter frames where the JVM does not publish them: slots
	 * in words from the frame pointer, for the architecture this
	 * library is built for (a JVM profiled is of the same one). */
	out->frame_interp_method = HS_INTERP_METHOD_DEFAULT;
	out->frame_interp_bcp = HS_INTERP_BCP_DEFAULT;
	out->kind_nmethod = -1;
	err = with_cache(s, read, ctx, pick_entry, &p, &out->entries);
	if (err)
		return err;
	if (p.bad)
		return -EINVAL;
	/* ConstMethodFlags came with 21, as did UNSIGNED5 streams */
	out->unsigned5 = out->cmethod_flags != HS_NONE && p.flags21;
	if (out->frame_interp_method >= 0 || out->frame_interp_method < -32 ||
	    out->frame_interp_bcp >= 0 || out->frame_interp_bcp < -32)
		return -EINVAL;
	return 0;
}

const char *hotspot_layout_missing(const struct hotspot_layout *l)
{
	if (!l->code_heaps && (!l->code_low || !l->code_high))
		return "CodeCache bounds";
	if (l->array_len == HS_NONE || l->array_data == HS_NONE)
		return "GrowableArray";
	if (l->heap_memory == HS_NONE || l->heap_segmap == HS_NONE ||
	    l->heap_log2_segment == HS_NONE || l->vspace_low == HS_NONE ||
	    l->vspace_high == HS_NONE || l->heap_block_size == HS_NONE)
		return "CodeHeap";
	if (!l->interp_code || l->stubq_buffer == HS_NONE ||
	    l->stubq_limit == HS_NONE)
		return "interpreter code";
	if (l->blob_frame_size == HS_NONE || l->blob_size == HS_NONE ||
	    (l->blob_code_begin == HS_NONE && l->blob_code_offset == HS_NONE))
		return "CodeBlob";
	if (l->nm_method == HS_NONE)
		return "nmethod";
	if (l->method_const == HS_NONE || l->cmethod_constants == HS_NONE ||
	    l->cmethod_name_index == HS_NONE ||
	    l->cmethod_sig_index == HS_NONE || l->cmethod_size == HS_NONE)
		return "Method";
	if (l->cpool_holder == HS_NONE || l->cpool_size == HS_NONE ||
	    l->klass_name == HS_NONE)
		return "ConstantPool";
	if (l->symbol_length == HS_NONE || l->symbol_body == HS_NONE)
		return "Symbol";
	return NULL;
}

int hotspot_syms_from_file(int fd, uint64_t bias, struct hotspot_syms *out)
{
	int found = elf_dynsym_lookup(fd, "gHotSpotVM", hotspot_sym_names,
				      HS_SYM_COUNT, out->addr);

	for (int k = 0; k < HS_SYM_COUNT; k++)
		if (out->addr[k])
			out->addr[k] += bias;
	return found > 0 ? 0 : -ENOENT;
}
