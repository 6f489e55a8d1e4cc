/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Trace-correlation symbols of one ELF file: where a publisher library (or
 * executable) keeps its per-thread context pointer (OTEP 4947
 * `otel_thread_ctx_v1`, Elastic v1 `elastic_apm_profiling_correlation_tls_v1`)
 * and how the dynamic linker resolves it (the relocation that tells us the
 * TLS model), plus Elastic's process storage pointer. Read once per file,
 * from .dynsym and the RELA sections; the file is hostile input.
 */
#ifndef OTELPROF_ELF_TLS_SYMBOLS_H
#define OTELPROF_ELF_TLS_SYMBOLS_H

#include <stdbool.h>
#include <stdint.h>

#include "util/mem_budget.h"

/* How the TLS variable's address is found at run time (x86_64; aarch64's
 * R_AARCH64_TLSDESC, R_AARCH64_TLS_DTPMOD and R_AARCH64_TLS_TPREL give the
 * same GOT contents as the x86_64 kinds named below). */
enum tls_access {
	TLS_ACCESS_NONE = 0,
	/* R_X86_64_TLSDESC: a 16-byte descriptor {resolver, arg} at
	 * got_vaddr. Static TLS: arg is the thread-pointer offset; dynamic
	 * TLS: arg points to {module id, offset}. */
	TLS_ACCESS_TLSDESC,
	/* R_X86_64_DTPMOD64 (+ DTPOFF64): a GOT pair {module id, offset}
	 * at got_vaddr, read through the thread's DTV. */
	TLS_ACCESS_DTPMOD,
	/* R_X86_64_TPOFF64: a GOT slot holding the thread-pointer offset
	 * (initial-exec in a shared library). */
	TLS_ACCESS_TPOFF,
	/* No relocation (local-exec in the executable): the offset follows
	 * from PT_TLS. Valid only for the main executable. */
	TLS_ACCESS_LOCAL_EXEC,
};

enum tls_ctx_format {
	TLS_CTX_OTEL_V1 = 0,
	TLS_CTX_ELASTIC_V1 = 1,
	TLS_CTX_FORMATS = 2,
};

struct tls_ctx_symbol {
	uint8_t access;	    /* enum tls_access; NONE: symbol absent */
	uint64_t st_value;  /* offset of the variable in the TLS block */
	uint64_t got_vaddr; /* TLSDESC/DTPMOD/TPOFF: where ld.so writes */
	int64_t le_offset;  /* LOCAL_EXEC: thread-pointer offset */
	/* TLS variant I (aarch64): static TLS above the thread pointer, the
	 * DTV at tp + 0; else variant II (x86_64): below, the DTV at tp + 8. */
	bool tp_above;
};

struct tls_symbols {
	struct tls_ctx_symbol sym[TLS_CTX_FORMATS];
	/* Elastic v1 process storage: vaddr of the pointer variable. */
	uint64_t elastic_storage_vaddr;
	bool any; /* something above was found */
};

/* Scan an open libelf handle (Elf *). Never fails: a malformed file has
 * no symbols (counted by the caller as it sees fit). Returns the number
 * of malformed entries skipped. What libelf reads is charged to acct
 * (NULL: unlimited) while the scan runs. */
unsigned tls_symbols_scan(void *elf, struct tls_symbols *out,
			  struct mem_account *acct);

/* One named TLS variable of the file (a runtime's per-thread state, as
 * Perl's PL_current_context), found as the context symbols are: out's
 * access is TLS_ACCESS_NONE if it is absent. Returns the number of
 * malformed entries skipped. */
unsigned tls_symbol_lookup(void *elf, const char *name,
			   struct tls_ctx_symbol *out,
			   struct mem_account *acct);

#endif
