// SPDX-License-Identifier: Apache-2.0
#include "process/mapped_file.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif

/*
 * What an O_PATH fd names, checked before anything opens it for reading
 * (an O_PATH open runs no driver code: a FIFO cannot block us, a device
 * is never opened). Only a regular file with the mapping's inode, and not
 * on FUSE (whose daemon, possibly the hostile process itself, could stall
 * every read), passes.
 */
static int check_identity(int fd, const struct proc_mapping *m)
{
	struct stat st;
	struct statfs sfs;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return MAPPED_FILE_REFUSED;
	if (m->inode && (uint64_t)st.st_ino != m->inode)
		return -ESTALE;
	if (!fstatfs(fd, &sfs) && sfs.f_type == FUSE_SUPER_MAGIC)
		return MAPPED_FILE_REFUSED;
	/* Overlay and FUSE report a different st_dev than maps does, so only
	 * the inode is compared strictly. */
	return 0;
}

/* Reopen the checked inode itself (not its path, which may have been
 * swapped meanwhile) for reading, never blocking. */
static int reopen_checked(int pathfd, const struct proc_mapping *m)
{
	char path[64];
	int err = check_identity(pathfd, m), fd;

	if (err) {
		close(pathfd);
		return err;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", pathfd);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	err = fd < 0 ? -errno : 0;
	close(pathfd);
	return fd < 0 ? err : fd;
}

int mapped_file_open(pid_t pid, const struct proc_mapping *m)
{
	char path[64];
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd, root, err;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd >= 0) {
		fd = reopen_checked(fd, m);
		/* map_files names exactly the mapped inode: if that is not
		 * a regular file, no path will give a better one. */
		if (fd >= 0 || fd == MAPPED_FILE_REFUSED)
			return fd;
	}
	if (m->kind != PROC_MAPPING_FILE || m->deleted || !m->path)
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, root, m->path, &how, sizeof(how));
	err = fd < 0 ? -errno : 0;
	close(root);
	if (fd < 0)
		return err;
	return reopen_checked(fd, m);
}
