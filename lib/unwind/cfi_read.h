/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bounded readers of the DWARF/EH encodings in CFI: LEB128 and the
 * DW_EH_PE pointer encodings. Each either consumes a whole value that lies
 * inside [*p, end) or fails without moving *p.
 */
#ifndef OTELPROF_CFI_READ_H
#define OTELPROF_CFI_READ_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <dwarf.h>

/* The LEB128 digits at *p; a signed one (SLEB128) has the sign of its
 * last digit's bit 6 extended. */
static inline int cfi_read_leb(const uint8_t **p, const uint8_t *end, bool sign,
			       uint64_t *v)
{
	const uint8_t *q = *p;
	uint64_t r = 0;
	unsigned int shift = 0;

	while (q < end) {
		uint8_t b = *q++;

		if (shift < 64)
			r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (sign && shift < 64 && (b & 0x40))
				r |= ~0ULL << shift;
			*v = r;
			*p = q;
			return 0;
		}
		if (shift > 70) /* overlong: hostile */
			return -1;
	}
	return -1;
}

static inline int cfi_read_uleb(const uint8_t **p, const uint8_t *end,
				uint64_t *v)
{
	return cfi_read_leb(p, end, false, v);
}

static inline int cfi_read_sleb(const uint8_t **p, const uint8_t *end,
				int64_t *v)
{
	uint64_t r;

	if (cfi_read_leb(p, end, true, &r))
		return -1;
	*v = (int64_t)r;
	return 0;
}

/*
 * A DW_EH_PE-encoded pointer at *p, whose own address is `field_vaddr`.
 * Only absolute and pc-relative apply to x86_64 FDEs; the others, omit
 * and indirect fail.
 */
static inline int cfi_read_encoded(const uint8_t **p, const uint8_t *end,
				   uint8_t enc, uint64_t field_vaddr,
				   uint64_t *out)
{
	const uint8_t *q = *p;
	size_t avail = (size_t)(end - q);
	uint64_t v = 0;

	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect))
		return -1;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		if (avail < 8)
			return -1;
		memcpy(&v, q, 8);
		q += 8;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4: {
		uint32_t u;

		if (avail < 4)
			return -1;
		memcpy(&u, q, 4);
		v = (enc & 0x0f) == DW_EH_PE_sdata4
			    ? (uint64_t)(int64_t)(int32_t)u
			    : u;
		q += 4;
		break;
	}
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2: {
		uint16_t u;

		if (avail < 2)
			return -1;
		memcpy(&u, q, 2);
		v = (enc & 0x0f) == DW_EH_PE_sdata2
			    ? (uint64_t)(int64_t)(int16_t)u
			    : u;
		q += 2;
		break;
	}
	case DW_EH_PE_uleb128:
		if (cfi_read_uleb(&q, end, &v))
			return -1;
		break;
	case DW_EH_PE_sleb128: {
		int64_t s;

		if (cfi_read_sleb(&q, end, &s))
			return -1;
		v = (uint64_t)s;
		break;
	}
	default:
		return -1;
	}
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		v += field_vaddr; /* wraps like the hardware would */
		break;
	default: /* textrel/datarel/funcrel/aligned: not for x86_64 FDEs */
		return -1;
	}
	*p = q;
	*out = v;
	return 0;
}

#endif /* OTELPROF_CFI_READ_H */
