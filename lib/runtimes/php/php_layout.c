// SPDX-License-Identifier: Apache-2.0
#include "runtimes/php/php_layout.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/utf8.h"

/*
 * Offsets per PHP version. A release build ships neither debug info nor a
 * table of its own offsets (as CPython 3.13's _Py_DebugOffsets), so these
 * come from each version's headers (Zend/zend_globals.h, zend_compile.h,
 * zend_types.h: LP64, the same on x86_64 and arm64) and were checked
 * against live processes of Debian's builds (8.2.x of Debian 12, 8.4.x of
 * Debian 13). Only the versions checked are listed: any other is unknown
 * (native frames, reported once) rather than guessed.
 */
static const struct php_layout layouts[] = {
	{
		.major = 8,
		.minor = 2,
		.eg_current_execute_data = 488,
		.walk = {.ed_opline = 0,
			 .ed_func = 24,
			 .ed_type_info = 40,
			 .ed_prev = 48,
			 .op_lineno = 24,
			 .op_opcodes = 88,
			 .op_last = 80},
		.func_name = 8,
		.func_scope = 16,
		.op_filename = 152,
		.op_line_start = 160,
		.func_read = 168,
		.ce_name = 8,
		.str_len = 16,
		.str_val = 24,
	},
	{
		/* zend_op_array's common part grew (doc_comment) between 8.2
		 * and 8.4 */
		.major = 8,
		.minor = 4,
		.eg_current_execute_data = 488,
		.walk = {.ed_opline = 0,
			 .ed_func = 24,
			 .ed_type_info = 40,
			 .ed_prev = 48,
			 .op_lineno = 24,
			 .op_opcodes = 104,
			 .op_last = 96},
		.func_name = 8,
		.func_scope = 16,
		.op_filename = 168,
		.op_line_start = 176,
		.func_read = 184,
		.ce_name = 8,
		.str_len = 16,
		.str_val = 24,
	},
};

const struct php_layout *php_layout_find(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == major && layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

/* A decimal number of at most 3 digits at s[*i]; -1 if none. */
static int number(const char *s, size_t len, size_t *i)
{
	int v = 0, digits = 0;

	while (*i < len && s[*i] >= '0' && s[*i] <= '9' && digits < 3) {
		v = v * 10 + (s[*i] - '0');
		(*i)++;
		digits++;
	}
	return digits ? v : -1;
}

int php_version_parse(const char *s, size_t len, unsigned *major,
		      unsigned *minor, unsigned *release)
{
	size_t i = 0;
	int a, b, c;

	a = number(s, len, &i);
	if (a < 0 || i >= len || s[i++] != '.')
		return -EINVAL;
	b = number(s, len, &i);
	if (b < 0 || i >= len || s[i++] != '.')
		return -EINVAL;
	c = number(s, len, &i);
	if (c < 0)
		return -EINVAL;
	*major = (unsigned)a;
	*minor = (unsigned)b;
	*release = (unsigned)c;
	return 0;
}

static uint64_t u64_at(const uint8_t *b, uint16_t off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

/* A zend_string's text into out (size > max); "" for addr 0. 0, -EFAULT
 * or -EINVAL (too long, or not UTF-8 text). */
static int read_zstr(const struct php_layout *l, mem_read_fn read, void *ctx,
		     uint64_t addr, char *out, size_t max)
{
	uint64_t len;

	out[0] = '\0';
	if (!addr)
		return 0;
	if (read(ctx, addr + l->str_len, &len, sizeof(len)))
		return -EFAULT;
	if (len > max)
		return -EINVAL;
	if (len && read(ctx, addr + l->str_val, out, len))
		return -EFAULT;
	out[len] = '\0';
	if (memchr(out, '\0', len) || !utf8_valid(out, len))
		return -EINVAL;
	return 0;
}

int php_function_header(const struct php_layout *l, mem_read_fn read, void *ctx,
			uint64_t addr, struct php_function *out)
{
	uint8_t buf[256];
	uint32_t line;

	if (!addr || l->func_read > sizeof(buf) ||
	    read(ctx, addr, buf, l->func_read))
		return -EFAULT;
	out->type = buf[0];
	out->name_ptr = u64_at(buf, l->func_name);
	out->scope_ptr = u64_at(buf, l->func_scope);
	out->file_ptr = out->line_start = out->line_end = 0;
	switch (out->type) {
	case 1: /* ZEND_INTERNAL_FUNCTION: a C function, no file */
		if (!out->name_ptr)
			return -EINVAL;
		break;
	case 2: /* ZEND_USER_FUNCTION */
	case 4: /* ZEND_EVAL_CODE */
		out->file_ptr = u64_at(buf, l->op_filename);
		memcpy(&line, buf + l->op_line_start, 4);
		out->line_start = line;
		memcpy(&line, buf + l->op_line_start + 4, 4);
		out->line_end = line;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

int php_function_read(const struct php_layout *l, mem_read_fn read, void *ctx,
		      uint64_t addr, struct php_function *out)
{
	char cls[PHP_NAME_MAX + 1], fn[PHP_NAME_MAX + 1];
	uint64_t cname = 0;
	int err;

	err = php_function_header(l, read, ctx, addr, out);
	if (err)
		return err;
	if ((err = read_zstr(l, read, ctx, out->name_ptr, fn, PHP_NAME_MAX)))
		return err;
	cls[0] = '\0';
	if (out->scope_ptr && fn[0]) {
		if (read(ctx, out->scope_ptr + l->ce_name, &cname,
			 sizeof(cname)))
			return -EFAULT;
		if ((err = read_zstr(l, read, ctx, cname, cls, PHP_NAME_MAX)))
			return err;
	}
	if (cls[0])
		snprintf(out->name, sizeof(out->name), "%s::%s", cls, fn);
	else
		snprintf(out->name, sizeof(out->name), "%s", fn);
	return read_zstr(l, read, ctx, out->file_ptr, out->file, PHP_FILE_MAX);
}
