/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Source lines and inlined functions of native code from a file's own
 * DWARF (.debug_info, .debug_line), through libdw: per pc, the file and
 * line, and the chain of functions inlined there. Only for files of
 * bounded size. A unit is read into compact rows the first time a pc
 * needs it (dwarf_unit.h); the DWARF itself is held only while units are
 * being read (dwarf_lines_trim).
 */
#ifndef OTELPROF_ELF_DWARF_LINES_H
#define OTELPROF_ELF_DWARF_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DWARF_LINES_MAX_BYTES	  (64u << 20) /* .debug_* sections per file */
#define DWARF_LINES_MAX_FILE	  (64u << 20) /* the whole file, held in memory */
#define DWARF_LINES_MAX_FILES	  16u	/* files with DWARF open at once */
#define DWARF_LINES_GUARD	  4096u /* zeros after the image */
#define DWARF_LINES_MAX_DEPTH	  16u	/* inlined functions per pc */
#define DWARF_LINES_IMAGE_IDLE_NS (10ull * 1000 * 1000 * 1000)

struct dwarf_lines;

/* Functions inlined at a pc, innermost first, and where each is. The
 * last entry (depth) is the line in the concrete function itself. Strings
 * live as long as the dwarf_lines. */
struct dwarf_where {
	uint32_t ninlined;
	struct {
		const char *name;	  /* DW_AT_name, NULL if unknown */
		const char *linkage_name; /* mangled name, NULL if none */
		const char *file;
		uint32_t line;
	} inl[DWARF_LINES_MAX_DEPTH];
	const char *file; /* of the concrete function's line */
	uint32_t line;
};

/* For the ELF file open as fd: NULL if it has no (or too large) DWARF, or
 * too many are open. Reads the file and indexes its units; keeps a dup of
 * fd, to read it again after dwarf_lines_trim. */
struct mem_account;
/* Memory (the image, the unit index, units read) is charged to acct (may
 * be NULL). */
struct dwarf_lines *dwarf_lines_open(int fd, struct mem_account *acct);
void dwarf_lines_close(struct dwarf_lines *d);
/* 0 and *out, or -ENOENT (no line for vaddr) / -EIO (the file changed or
 * its DWARF is broken). A pc in a unit not read yet reads the unit. */
int dwarf_lines_lookup(struct dwarf_lines *d, uint64_t vaddr,
		       struct dwarf_where *out);
/* Free the image and libdw's state if no unit was read for a while by
 * now_ns (boot clock; UINT64_MAX: at once): 10 s, twice that after each
 * time the image had to be read again, up to 60 s. Units already read
 * still answer; the next unit read loads the image again, if the file is
 * unchanged. */
void dwarf_lines_trim(struct dwarf_lines *d, uint64_t now_ns);
bool dwarf_lines_trimmed(const struct dwarf_lines *d);
/* Add 1 to *total each time the image is read again after a trim (the
 * owner's counter; d may be NULL). */
void dwarf_lines_count_image_reads(struct dwarf_lines *d, uint64_t *total);

#endif
