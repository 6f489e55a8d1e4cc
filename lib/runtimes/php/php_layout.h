/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PHP (Zend engine) layouts and the readers of a PHP process's memory:
 * the version from the binary's "X-Powered-By: PHP/x.y.z" string, the
 * structure offsets of that version, and a zend_function read into
 * Function name (Class::method), file and first line. Every read goes
 * through a mem_read_fn, bounded and checked; the fuzz target feeds the
 * same functions (test/fuzz/fuzz_php.c).
 */
#ifndef OTELPROF_RUNTIMES_PHP_LAYOUT_H
#define OTELPROF_RUNTIMES_PHP_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process/process_memory.h"
#include "profiler_types.h"
#include "runtimes/php/php_types.h"

/* Longest function, class or file name kept (bytes of a zend_string). */
#define PHP_NAME_MAX 512
#define PHP_FILE_MAX 1024

/* Where the version string starts in the binary's read-only data. */
#define PHP_VERSION_NEEDLE "X-Powered-By: PHP/"

struct php_layout {
	uint8_t major, minor;
	/* executor_globals.current_execute_data, from the symbol */
	uint16_t eg_current_execute_data;
	struct otelprof_php_proc walk;	/* for BPF (address filled later) */
	uint16_t func_name, func_scope; /* zend_function.common */
	uint16_t op_filename, op_line_start; /* zend_op_array (line_end
						follows line_start) */
	uint16_t func_read;		     /* bytes of a function read */
	uint16_t ce_name;		     /* zend_class_entry.name */
	uint16_t str_len, str_val;	     /* zend_string */
};

/* The layout of PHP major.minor, or NULL: not known (native frames). */
const struct php_layout *php_layout_find(unsigned major, unsigned minor);

/* "8.2.36..." (the bytes after PHP_VERSION_NEEDLE, len of them) into
 * major/minor/release; 0, or -EINVAL. */
int php_version_parse(const char *s, size_t len, unsigned *major,
		      unsigned *minor, unsigned *release);

/* A zend_function as read from the process. */
struct php_function {
	uint8_t type; /* 1 internal, 2 user, 4 eval'd code */
	uint64_t name_ptr, scope_ptr, file_ptr; /* to recheck identity */
	uint32_t line_start, line_end;
	char name[2 * PHP_NAME_MAX + 3]; /* Class::method, or "" (code) */
	char file[PHP_FILE_MAX + 1];	 /* "" for internal functions */
};

/*
 * Reads the zend_function at addr of a process (read(ctx, ...)) into
 * *out. 0, -EFAULT (unreadable) or -EINVAL (not a function: a type or a
 * string that does not hold up).
 */
int php_function_read(const struct php_layout *l, mem_read_fn read, void *ctx,
		      uint64_t addr, struct php_function *out);

/* Just the identity fields of the function at addr (the cache's recheck);
 * 0 or as above. */
int php_function_header(const struct php_layout *l, mem_read_fn read, void *ctx,
			uint64_t addr, struct php_function *out);

#endif
