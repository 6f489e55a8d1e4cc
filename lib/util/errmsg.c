// SPDX-License-Identifier: Apache-2.0
#include "util/errmsg.h"

#include <stdio.h>

int errmsg_set(struct errmsg *e, int err, const char *fmt, ...)
{
	va_list ap;

	if (!e || !e->buf || !e->len)
		return err;
	va_start(ap, fmt);
	vsnprintf(e->buf, e->len, fmt, ap);
	va_end(ap);
	return err;
}
