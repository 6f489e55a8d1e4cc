/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a process keeps a context TLS variable, in the form the BPF program
 * follows at sample time: a fixed thread-pointer offset (local-exec in the
 * executable), or the runtime address of the GOT slot / TLS descriptor the
 * dynamic linker fills (initial-exec, general-dynamic, TLSDESC). BPF reads
 * and checks those values itself, so nothing here waits for relocation.
 */
#ifndef OTELPROF_CONTEXT_TLS_LOCATION_H
#define OTELPROF_CONTEXT_TLS_LOCATION_H

#include <stdbool.h>

#include "elf/tls_symbols.h"
#include "profiler_types.h"

/*
 * Location of symbol s of a file loaded at bias (runtime = vaddr + bias).
 * is_main_exe: the file is the process's executable (local-exec needs it).
 * Returns 0 with *out filled, or -ENOENT when s cannot be used here.
 */
int tls_location_of(const struct tls_ctx_symbol *s, uint64_t bias,
		    bool is_main_exe, struct otelprof_tls_loc *out);

#endif
