// SPDX-License-Identifier: Apache-2.0
#include "context/tls_location.h"

#include <errno.h>
#include <string.h>

#include "process/user_va.h"

/* TLS variant I (aarch64: static TLS above the thread pointer) or II. */
#if defined(__aarch64__)
#define TLS_HOST_TP_ABOVE true
#else
#define TLS_HOST_TP_ABOVE false
#endif

int tls_location_of(const struct tls_ctx_symbol *s, uint64_t bias,
		    bool is_main_exe, struct otelprof_tls_loc *out)
{
	memset(out, 0, sizeof(*out));
	/* The BPF reader knows one variant, the one of the machine it was
	 * built for: a file of the other (an emulated process) is not read. */
	if (s->tp_above != TLS_HOST_TP_ABOVE)
		return -ENOENT;
	switch (s->access) {
	case TLS_ACCESS_LOCAL_EXEC:
		/* Static TLS lies below the thread pointer on x86_64, above
		 * it past the 16-byte TCB on aarch64. */
		if (!is_main_exe ||
		    (s->tp_above
			     ? s->le_offset < 16 ||
				       s->le_offset >= (int64_t)(1ll << 32)
			     : s->le_offset >= 0 ||
				       s->le_offset < -(int64_t)(1ll << 32)))
			return -ENOENT;
		out->kind = OTELPROF_TLS_TP_OFFSET;
		out->tp_offset = s->le_offset;
		return 0;
	case TLS_ACCESS_TPOFF:
		out->kind = OTELPROF_TLS_TPOFF_GOT;
		break;
	case TLS_ACCESS_DTPMOD:
		out->kind = OTELPROF_TLS_DTPMOD_GOT;
		out->offset = s->st_value;
		break;
	case TLS_ACCESS_TLSDESC:
		out->kind = OTELPROF_TLS_DESC;
		break;
	default:
		return -ENOENT;
	}
	out->addr = s->got_vaddr + bias;
	/* A canonical user address, or the file lied about its layout. */
	if (out->addr < s->got_vaddr || out->addr >= USER_VA_END) {
		memset(out, 0, sizeof(*out));
		return -ENOENT;
	}
	return 0;
}
