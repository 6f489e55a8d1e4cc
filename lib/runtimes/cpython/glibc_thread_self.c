// SPDX-License-Identifier: Apache-2.0
#include "runtimes/cpython/glibc_thread_self.h"

#include <string.h>
#include <unistd.h>

#include "elf/elf_dynsym.h"
#include "process/mapped_file.h"

#if defined(__aarch64__)
/* glibc's libc by its file name: libc.so.6, or libc-2.X.so before 2.34. */
static bool is_libc(const char *path)
{
	const char *b = strrchr(path, '/');
	size_t n;

	b = b ? b + 1 : path;
	n = strlen(b);
	return !strcmp(b, "libc.so.6") ||
	       (!strncmp(b, "libc-", 5) && n > 8 && !strcmp(b + n - 3, ".so"));
}

enum glibc_thread_self glibc_thread_self_below_tp(const struct process *p,
						  uint32_t *below_tp)
{
	static const char *const names[] = {"_thread_db_sizeof_pthread"};

	for (size_t i = 0; i < p->maps.n; i++) {
		const struct proc_mapping *m = &p->maps.v[i];
		uint64_t vaddr = 0;
		uint32_t size = 0;
		int fd, rc = -1;

		if (m->kind != PROC_MAPPING_FILE || !m->path ||
		    !is_libc(m->path))
			continue;
		fd = mapped_file_open((pid_t)p->pid, m);
		if (fd < 0)
			continue; /* another of its mappings may open */
		if (elf_dynsym_lookup(fd, "_thread_db_", names, 1, &vaddr) > 0)
			rc = elf_dynsym_file_bytes(fd, vaddr, &size,
						   sizeof(size));
		close(fd);
		if (rc || size < GLIBC_PTHREAD_SIZE_MIN ||
		    size > GLIBC_PTHREAD_SIZE_MAX || size % 8)
			return GLIBC_THREAD_SELF_UNKNOWN;
		*below_tp = size;
		return GLIBC_THREAD_SELF_KNOWN;
	}
	return GLIBC_THREAD_SELF_LATER;
}
#else
enum glibc_thread_self glibc_thread_self_below_tp(const struct process *p,
						  uint32_t *below_tp)
{
	(void)p;
	*below_tp = 0; /* variant II: struct pthread starts at tp */
	return GLIBC_THREAD_SELF_KNOWN;
}
#endif
