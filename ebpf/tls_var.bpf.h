/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * A TLS variable's address for the sampled thread, from where userspace
 * said the dynamic linker leaves the answer (struct otelprof_tls_loc):
 * the thread-context reader (thread_context.bpf.h) and runtimes whose
 * interpreter is per thread (Perl's PL_current_context) share it.
 */
#ifndef OTELPROF_TLS_VAR_BPF_H
#define OTELPROF_TLS_VAR_BPF_H

/* Plausibility of what the dynamic linker wrote (glibc numbers modules
 * from 1). Static TLS lies below the thread pointer on x86_64 (variant
 * II); on aarch64 (variant I) above it, past the 16-byte TCB, and within
 * 4 MiB: a TLSDESC argument above that is a pointer to a dynamic
 * descriptor (no heap lies below 4 MiB: a non-PIE executable loads at
 * 0x400000). Anything else means "not relocated yet" (or lazily
 * resolved): no context now. */
#if defined(__TARGET_ARCH_arm64)
#define TLS_STATIC_MAX (1ll << 22)
static __always_inline bool tp_offset_ok(s64 v)
{
	return v >= 16 && v < TLS_STATIC_MAX;
}
/* tcbhead_t.dtv at tp + 0 (aarch64), tp + 8 (x86_64). */
#define TLS_DTV_AT 0
/* User space ends at 48 bits (52 with large VAs); libraries sit just
 * below 1 << 48. */
#define TLS_USER_END (1ull << 52)
#else
static __always_inline bool tp_offset_ok(s64 v)
{
	return v < 0 && v > -(1ll << 32);
}
#define TLS_DTV_AT   8
#define TLS_USER_END (1ull << 47)
#endif

static __always_inline bool module_ok(u64 m)
{
	return m >= 1 && m < (1u << 16);
}

/* glibc: tcbhead_t.dtv at tp + TLS_DTV_AT; dtv[-1].counter is the number of
 * slots; slot m = {void *val, void *to_free}, 16 bytes. A thread whose DTV
 * predates the module, or that never touched the variable (val == -1,
 * unallocated), has no context. */
static __always_inline u64 dtv_addr(u64 tp, u64 module, u64 offset)
{
	u64 dtv, len, val;

	if (!module_ok(module) || offset >= (1ull << 32))
		return 0;
	if (bpf_probe_read_user(&dtv, 8, (void *)(tp + TLS_DTV_AT)) || !dtv)
		return 0;
	if (bpf_probe_read_user(&len, 8, (void *)(dtv - 16)) || module > len)
		return 0;
	if (bpf_probe_read_user(&val, 8, (void *)(dtv + 16 * module)) || !val ||
	    val == (u64)-1)
		return 0;
	return val + offset;
}

/* Address of this thread's copy of the variable, 0 if it has none. */
static __always_inline u64 tls_var_addr(const struct otelprof_tls_loc *loc,
					u64 tp)
{
	u64 w[2];

	switch (loc->kind) {
	case OTELPROF_TLS_TP_OFFSET:
		return tp + (u64)loc->tp_offset;
	case OTELPROF_TLS_TPOFF_GOT:
		if (bpf_probe_read_user(w, 8, (void *)loc->addr) ||
		    !tp_offset_ok((s64)w[0]))
			return 0;
		return tp + w[0];
	case OTELPROF_TLS_DTPMOD_GOT:
		if (bpf_probe_read_user(w, 8, (void *)loc->addr))
			return 0;
		return dtv_addr(tp, w[0], loc->offset);
	case OTELPROF_TLS_DESC:
		if (bpf_probe_read_user(w, 16, (void *)loc->addr) || !w[0])
			return 0;
		if (tp_offset_ok((s64)w[1]))
			return tp + w[1];
		if (w[1] < 4096 || w[1] >= TLS_USER_END ||
		    bpf_probe_read_user(w, 16, (void *)w[1]))
			return 0;
		return dtv_addr(tp, w[0], w[1]);
	default:
		return 0;
	}
}

#endif
