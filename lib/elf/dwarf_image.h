/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The part of an ELF file libdw reads for lines and inlined functions, as
 * an ELF image in memory: the ELF header, the .debug_* sections that name
 * units, lines, strings, ranges and addresses, the section name table and
 * the section headers (every other section an empty SHT_NOBITS without a
 * name). A file with DWARF is mostly code, data and variable locations
 * (pyenv's libpython3.11: 12.5 of 23 MB are these sections), which the
 * whole-file image held for as long as its lines were used.
 */
#ifndef OTELPROF_ELF_DWARF_IMAGE_H
#define OTELPROF_ELF_DWARF_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* For the file open as fd (file_size bytes): 0 with *image (calloc'd,
 * followed by `guard` zero bytes) of *size bytes, -ENOTSUP for a file
 * this reader does not take apart (another ELF class or byte order than
 * the host's, extended section numbering: read it whole instead), or
 * -EINVAL / -EIO / -ENOMEM. At most max_bytes of sections are kept. */
int dwarf_image_read(int fd, uint64_t file_size, uint64_t max_bytes,
		     size_t guard, uint8_t **image, size_t *size);

#endif
