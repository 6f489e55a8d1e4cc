/* SPDX-License-Identifier: Apache-2.0 */
/* Parsing of /proc/PID/maps: the executable mappings of one process. */
#ifndef OTELPROF_PROCESS_PROC_MAPS_H
#define OTELPROF_PROCESS_PROC_MAPS_H

#include <stddef.h>
#include <stdint.h>

/* Upper bounds that keep a hostile or huge /proc file from exhausting us. */
#define PROC_MAPS_MAX_BYTES   (16u << 20)
#define PROC_MAPS_MAX_ENTRIES 65536u
#define PROC_PATH_MAX	      4096u

enum proc_mapping_kind {
	PROC_MAPPING_FILE = 0, /* backed by a file on disk */
	PROC_MAPPING_ANON,     /* anonymous executable memory (JIT, ...) */
	PROC_MAPPING_VDSO,     /* [vdso] */
	PROC_MAPPING_SPECIAL,  /* [vsyscall] and other [..] names */
};

struct file;

struct proc_mapping {
	uint64_t start, end; /* [start, end) */
	uint64_t offset;     /* file offset of start */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint8_t kind;	   /* enum proc_mapping_kind */
	uint8_t deleted;   /* path ended in " (deleted)" */
	char *path;	   /* owned; "" for anonymous */
	struct file *file; /* files/file_table.h, resolved lazily (by the
			      process table, which holds its reference) */
	uint8_t file_tried;
	uint8_t fresh; /* not in the previous scan (set by the process table) */
};

/*
 * Small readable and writable anonymous mappings, which may hold an OTEP
 * 4719 process context on a kernel that cannot name mappings
 * (CONFIG_ANON_VMA_NAME unset): the context tracker reads the first bytes
 * of new ones for the header's signature. Bounded: a process with more
 * only hides its own context.
 */
#define PROC_MAPS_CTX_CANDIDATES    16
#define PROC_MAPS_CTX_CANDIDATE_MAX (64u << 10)
struct proc_ctx_candidate {
	uint64_t start, end;
	uint8_t fresh; /* not in the previous scan (set by the caller) */
};

struct proc_maps {
	struct proc_mapping *v; /* sorted by start */
	size_t n;
	struct proc_ctx_candidate cand[PROC_MAPS_CTX_CANDIDATES];
	uint32_t ncand;
	/* OTEP 4719 process context: the mapping named OTEL_CTX
	 * (/memfd:OTEL_CTX, [anon_shmem:OTEL_CTX] or [anon:OTEL_CTX]);
	 * start 0 if none. */
	uint64_t otel_ctx_start, otel_ctx_end;
};

/*
 * Parse the text of /proc/PID/maps, keeping executable mappings (and
 * noting the OTEL_CTX mapping). Malformed
 * lines are skipped and counted in *bad_lines. Returns 0 or -ENOMEM.
 */
int proc_maps_parse(const char *text, size_t len, struct proc_maps *out,
		    unsigned *bad_lines);
void proc_maps_free(struct proc_maps *m);
const struct proc_mapping *proc_maps_find(const struct proc_maps *m,
					  uint64_t addr);
/* The same, for a caller that may change it (load its file). */
struct proc_mapping *proc_maps_find_mut(struct proc_maps *m, uint64_t addr);

#endif
