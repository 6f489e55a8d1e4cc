/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Symbols a stripped file keeps elsewhere, added to what its own tables
 * gave: its separate debug file, found by build id
 * (/usr/lib/debug/.build-id/xx/rest.debug) or by .gnu_debuglink (beside
 * the file, in its .debug/, under /usr/lib/debug), looked up inside the
 * process's root first; else its MiniDebugInfo (.gnu_debugdata, an
 * xz-compressed ELF with a .symtab, as Fedora and RHEL ship).
 */
#ifndef OTELPROF_ELF_DEBUG_INFO_H
#define OTELPROF_ELF_DEBUG_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "elf/elf_file.h"

#define DEBUG_INFO_MAX_XZ_IN	(16u << 20)    /* compressed .gnu_debugdata */
#define DEBUG_INFO_MAX_XZ_OUT	(128u << 20)   /* decompressed */
#define DEBUG_INFO_XZ_MEMLIMIT	(64u << 20)    /* liblzma's own memory */
#define DEBUG_INFO_MAX_CRC_FILE (256ull << 20) /* debuglink CRC check */

enum debug_info_source {
	DEBUG_INFO_NONE = 0,
	DEBUG_INFO_BUILD_ID,
	DEBUG_INFO_DEBUGLINK,
	DEBUG_INFO_MINIDEBUGINFO,
	DEBUG_INFO_DEBUGINFOD, /* from a server, later (debuginfod.h) */
};

/*
 * For a file without .symtab: fd is the file, path where the process
 * maps it, root_fd the process's root (O_PATH; -1: ours only). Merges what
 * it finds into s. Returns the source used (enum debug_info_source).
 */
int debug_info_attach(struct elf_symbols *s, int fd, const char *path,
		      int root_fd);

/* Decompress an xz stream of at most DEBUG_INFO_MAX_XZ_IN bytes into a
 * malloc'd buffer of at most DEBUG_INFO_MAX_XZ_OUT. liblzma's memory and
 * the output are charged to acct (NULL: unlimited) as they grow; on
 * success *out_len bytes stay charged until the caller frees *out and
 * gives them back. 0, -EDQUOT (over budget: an xz bomb, or a file whose
 * budget its symbols took) or another negative errno. */
int debug_info_unxz(const uint8_t *in, size_t len, uint8_t **out,
		    size_t *out_len, struct mem_account *acct);

#endif
