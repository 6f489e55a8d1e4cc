// SPDX-License-Identifier: Apache-2.0
#include "context/tls_location.h"

#include <errno.h>
#include <string.h>

int tls_location_of(const struct tls_ctx_symbol *s, uint64_t bias,
		    bool is_main_exe, struct otelprof_tls_loc *out)
{
	memset(out, 0, sizeof(*out));
	switch (s->access) {
	case TLS_ACCESS_LOCAL_EXEC:
		/* x86_64 static TLS lies below the thread pointer. */
		if (!is_main_exe || s->le_offset >= 0 ||
		    s->le_offset < -(int64_t)(1ll << 32))
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
	if (out->addr < s->got_vaddr || out->addr >= (1ull << 47)) {
		memset(out, 0, sizeof(*out));
		return -ENOENT;
	}
	return 0;
}
