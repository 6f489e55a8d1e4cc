// SPDX-License-Identifier: Apache-2.0
#include "output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *err, size_t errlen, int e, const char *what,
		const char *path)
{
	snprintf(err, errlen, "%s %s: %s", what, path, strerror(-e));
	return e;
}

int output_open(struct output_file *o, const char *path, char *err,
		size_t errlen)
{
	const char *slash = strrchr(path, '/');
	struct stat st;
	int e;

	memset(o, 0, sizeof(*o));
	o->dirfd = o->fd = -1;
	o->base = slash ? slash + 1 : path;
	if (!*o->base || !strcmp(o->base, ".") || !strcmp(o->base, ".."))
		return fail(err, errlen, -EISDIR, "cannot write", path);
	o->dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
	if (!o->dir)
		return fail(err, errlen, -ENOMEM, "cannot write", path);
	if (!*o->dir) { /* "/name" */
		free(o->dir);
		o->dir = strdup("/");
		if (!o->dir)
			return fail(err, errlen, -ENOMEM, "cannot write", path);
	}
	o->dirfd = open(o->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (o->dirfd < 0) {
		e = -errno;
		output_abort(o);
		return fail(err, errlen, e, "cannot open directory of", path);
	}
	/* A directory at the target cannot be replaced by a file. */
	if (!fstatat(o->dirfd, o->base, &st, AT_SYMLINK_NOFOLLOW) &&
	    S_ISDIR(st.st_mode)) {
		output_abort(o);
		return fail(err, errlen, -EISDIR, "cannot write", path);
	}
	for (int tries = 0; tries < 16; tries++) {
		uint64_t r = 0;

		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (uint64_t)getpid() * 2654435761u + (uint64_t)tries;
		snprintf(o->tmp, sizeof(o->tmp), ".otelprof-%016llx.tmp",
			 (unsigned long long)r);
		/* O_EXCL | O_NOFOLLOW: a name someone else made (a file or a
		 * symlink) is never reused. */
		o->fd = openat(o->dirfd, o->tmp,
			       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				       O_CLOEXEC,
			       0600);
		if (o->fd >= 0 || errno != EEXIST)
			break;
	}
	if (o->fd < 0) {
		e = -errno;
		o->tmp[0] = '\0';
		output_abort(o);
		return fail(err, errlen, e, "cannot create a file beside",
			    path);
	}
	return 0;
}

int output_commit(struct output_file *o, const uint8_t *data, size_t len,
		  char *err, size_t errlen)
{
	size_t off = 0;
	int e = 0;

	while (off < len) {
		ssize_t w = write(o->fd, data + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)w;
	}
	/* A full disk can also show up only at fsync or close. */
	if (!e && fsync(o->fd))
		e = -errno;
	if (close(o->fd) && !e)
		e = -errno;
	o->fd = -1;
	if (!e && renameat(o->dirfd, o->tmp, o->dirfd, o->base))
		e = -errno;
	if (e) {
		snprintf(err, errlen, "%s", strerror(-e));
		output_abort(o);
		return e;
	}
	o->tmp[0] = '\0';
	output_abort(o);
	return 0;
}

void output_abort(struct output_file *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->dirfd >= 0 && o->tmp[0])
		unlinkat(o->dirfd, o->tmp, 0);
	o->tmp[0] = '\0';
	if (o->dirfd >= 0)
		close(o->dirfd);
	o->dirfd = -1;
	free(o->dir);
	o->dir = NULL;
}
