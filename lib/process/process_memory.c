// SPDX-License-Identifier: Apache-2.0
#include "process/process_memory.h"

#include <errno.h>
#include <sys/uio.h>

int process_memory_read(void *pid_ctx, uint64_t addr, void *buf, size_t len)
{
	uint32_t pid = *(const uint32_t *)pid_ctx;
	struct iovec local = {buf, len},
		     remote = {(void *)(uintptr_t)addr, len};
	ssize_t n;

	if (len > PROCESS_MEMORY_MAX_READ)
		return -E2BIG;
	if (!len)
		return 0;
	if (addr + len < addr)
		return -EFAULT;
	n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}
