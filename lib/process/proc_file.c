// SPDX-License-Identifier: Apache-2.0
#include "process/proc_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

long proc_read_file(const char *path, char **out, size_t max)
{
	size_t cap = 4096, len = 0;
	char *buf;
	int fd;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r;

		if (len == cap) {
			size_t ncap = cap * 2;
			char *nb;

			if (cap >= max) {
				free(buf);
				close(fd);
				return -EFBIG;
			}
			if (ncap > max)
				ncap = max;
			nb = realloc(buf, ncap + 1);
			if (!nb) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = nb;
			cap = ncap;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			free(buf);
			close(fd);
			return r;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	return (long)len;
}
