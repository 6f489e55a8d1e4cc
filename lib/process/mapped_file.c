// SPDX-License-Identifier: Apache-2.0
#include "process/mapped_file.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static int check_identity(int fd, const struct proc_mapping *m)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (m->inode && (uint64_t)st.st_ino != m->inode)
		return -ESTALE;
	/* Overlay and FUSE report a different st_dev than maps does, so only
	 * the inode is compared strictly. */
	return fd;
}

int mapped_file_open(pid_t pid, const struct proc_mapping *m)
{
	char path[64];
	struct open_how how = {
		/* O_NONBLOCK: a FIFO put in the file's place must not
		 * block us; it is refused as not regular. */
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd, root, err;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd >= 0) {
		err = check_identity(fd, m);
		if (err >= 0)
			return fd;
		close(fd);
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
	err = check_identity(fd, m);
	if (err < 0) {
		close(fd);
		return err;
	}
	return fd;
}
