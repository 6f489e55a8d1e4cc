// SPDX-License-Identifier: Apache-2.0
#include "elf/debug_info.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

/* A regular file at path inside root (RESOLVE_IN_ROOT: a container's
 * symlinks stay in the container), or on our side with root_fd -1.
 * O_NONBLOCK: a FIFO put there must not block us. */
static int open_regular(int root_fd, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_NO_MAGICLINKS,
	};
	struct stat st;
	int fd;

	if (root_fd >= 0) {
		how.resolve |= RESOLVE_IN_ROOT;
		fd = (int)syscall(SYS_openat2, root_fd, path, &how,
				  sizeof(how));
	} else {
		fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how,
				  sizeof(how));
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static bool crc_matches(int fd, uint32_t want)
{
	const size_t bufsz = 1 << 16;
	unsigned char *buf = malloc(bufsz);
	uLong crc = crc32(0, Z_NULL, 0);
	uint64_t total = 0;
	ssize_t n = -1;

	if (!buf)
		return false;
	while ((n = pread(fd, buf, bufsz, (off_t)total)) > 0) {
		crc = crc32(crc, buf, (uInt)n);
		total += (uint64_t)n;
		if (total > DEBUG_INFO_MAX_CRC_FILE) {
			n = -1;
			break;
		}
	}
	free(buf);
	return n == 0 && (uint32_t)crc == want;
}

/* Merge the debug file open as dfd if it belongs to s: same build id, or
 * (without one) the debuglink CRC. */
static bool take_debug_file(struct elf_symbols *s, int dfd, bool check_crc)
{
	struct elf_symbols d;
	bool ok;

	if (elf_symbols_load_fd(dfd, &d, s->acct))
		return false;
	if (d.over_budget) /* counted as the file's */
		s->over_budget = true;
	ok = d.n &&
	     (s->build_id[0] ? !strcmp(d.build_id, s->build_id)
			     : check_crc && crc_matches(dfd, s->debuglink_crc));
	if (ok)
		ok = !elf_symbols_merge(s, &d);
	elf_symbols_free(&d);
	return ok;
}

static bool try_path(struct elf_symbols *s, int root_fd, const char *path,
		     bool check_crc)
{
	int fd = open_regular(root_fd, path);
	bool ok;

	if (fd < 0)
		return false;
	ok = take_debug_file(s, fd, check_crc);
	close(fd);
	return ok;
}

static bool by_build_id(struct elf_symbols *s, int root_fd)
{
	char path[64 + 2 * ELF_FILE_MAX_BUILD_ID];

	if (strlen(s->build_id) < 4)
		return false;
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug",
		 s->build_id, s->build_id + 2);
	return (root_fd >= 0 && try_path(s, root_fd, path, false)) ||
	       try_path(s, -1, path, false);
}

/* gdb's order: beside the file, its .debug/, then under /usr/lib/debug;
 * all as the process sees them (inside its root). */
static bool by_debuglink(struct elf_symbols *s, const char *path, int root_fd)
{
	char dir[4096], p[4096 + 512];
	const char *slash;
	size_t n;

	if (!s->debuglink[0] || !path || path[0] != '/')
		return false;
	slash = strrchr(path, '/');
	n = (size_t)(slash - path);
	if (n >= sizeof(dir))
		return false;
	memcpy(dir, path, n);
	dir[n] = '\0';
	snprintf(p, sizeof(p), "%s/%s", dir, s->debuglink);
	if (strcmp(p, path) && try_path(s, root_fd, p, true))
		return true;
	snprintf(p, sizeof(p), "%s/.debug/%s", dir, s->debuglink);
	if (try_path(s, root_fd, p, true))
		return true;
	snprintf(p, sizeof(p), "/usr/lib/debug%s/%s", dir, s->debuglink);
	return try_path(s, root_fd, p, true);
}

/* liblzma is given this much memory first; a stream that needs more
 * (its dictionary) stops with LZMA_MEMLIMIT_ERROR, the need is charged
 * and decoding goes on under the raised limit. */
#define XZ_FIRST_MEMLIMIT (64u << 10)

int debug_info_unxz(const uint8_t *in, size_t len, uint8_t **out,
		    size_t *out_len, struct mem_account *acct)
{
	lzma_stream z = LZMA_STREAM_INIT;
	size_t cap = len * 4 < (1u << 20) ? (1u << 20) : len * 4;
	uint64_t dec_charged = XZ_FIRST_MEMLIMIT;
	uint8_t *buf;
	lzma_ret r;
	int err = 0;

	*out = NULL;
	*out_len = 0;
	if (len > DEBUG_INFO_MAX_XZ_IN)
		return -E2BIG;
	if (cap > DEBUG_INFO_MAX_XZ_OUT)
		cap = DEBUG_INFO_MAX_XZ_OUT;
	if (!mem_account_charge(acct, dec_charged + cap))
		return -EDQUOT;
	if (lzma_stream_decoder(&z, XZ_FIRST_MEMLIMIT, 0) != LZMA_OK) {
		mem_account_uncharge(acct, dec_charged + cap);
		return -ENOMEM;
	}
	buf = malloc(cap);
	if (!buf) {
		lzma_end(&z);
		mem_account_uncharge(acct, dec_charged + cap);
		return -ENOMEM;
	}
	z.next_in = in;
	z.avail_in = len;
	z.next_out = buf;
	z.avail_out = cap;
	for (;;) {
		r = lzma_code(&z, LZMA_FINISH);
		if (r == LZMA_STREAM_END)
			break;
		if (r == LZMA_MEMLIMIT_ERROR) {
			uint64_t need = lzma_memusage(&z);

			if (need <= dec_charged ||
			    need > DEBUG_INFO_XZ_MEMLIMIT)
				break;
			if (!mem_account_charge(acct, need - dec_charged)) {
				err = -EDQUOT;
				break;
			}
			dec_charged = need;
			if (lzma_memlimit_set(&z, need) != LZMA_OK)
				break;
			continue;
		}
		if (r == LZMA_OK && !z.avail_out &&
		    cap < DEBUG_INFO_MAX_XZ_OUT) {
			size_t ncap = cap * 2 > DEBUG_INFO_MAX_XZ_OUT
					      ? DEBUG_INFO_MAX_XZ_OUT
					      : cap * 2;
			uint8_t *nb;

			if (!mem_account_charge(acct, ncap - cap)) {
				err = -EDQUOT;
				break;
			}
			nb = realloc(buf, ncap);
			if (!nb) {
				mem_account_uncharge(acct, ncap - cap);
				r = LZMA_MEM_ERROR;
				break;
			}
			buf = nb;
			z.next_out = buf + cap;
			z.avail_out = ncap - cap;
			cap = ncap;
			continue;
		}
		break; /* an error, or the output cap */
	}
	*out_len = cap - z.avail_out;
	lzma_end(&z);
	mem_account_uncharge(acct, dec_charged);
	if (r != LZMA_STREAM_END) {
		free(buf);
		mem_account_uncharge(acct, cap);
		*out_len = 0;
		if (err)
			return err;
		return r == LZMA_MEM_ERROR || r == LZMA_MEMLIMIT_ERROR
			       ? -ENOMEM
			       : -EBADMSG;
	}
	/* Keep (and charge) only what the stream held. */
	if (*out_len && *out_len < cap) {
		uint8_t *nb = realloc(buf, *out_len);

		if (nb) {
			buf = nb;
			mem_account_uncharge(acct, cap - *out_len);
			cap = *out_len;
		}
	}
	if (cap != *out_len) /* kept at cap: charge what is given back */
		mem_account_uncharge(acct, cap - *out_len);
	*out = buf;
	return 0;
}

static bool minidebuginfo(struct elf_symbols *s, int fd)
{
	struct elf_symbols d;
	uint8_t *xz, *elf;
	size_t elf_len;
	bool ok = false;
	int err;

	if (!s->debugdata_size || s->debugdata_size > DEBUG_INFO_MAX_XZ_IN)
		return false;
	if (!mem_account_charge(s->acct, s->debugdata_size)) {
		s->over_budget = true;
		return false;
	}
	xz = malloc(s->debugdata_size);
	if (!xz) {
		mem_account_uncharge(s->acct, s->debugdata_size);
		return false;
	}
	err = pread(fd, xz, s->debugdata_size, (off_t)s->debugdata_off) ==
			      (ssize_t)s->debugdata_size
		      ? debug_info_unxz(xz, s->debugdata_size, &elf, &elf_len,
					s->acct)
		      : -EIO;
	free(xz);
	mem_account_uncharge(s->acct, s->debugdata_size);
	if (err) {
		if (err == -EDQUOT)
			s->over_budget = true;
		return false;
	}
	if (!elf_symbols_load_mem(elf, elf_len, &d, s->acct)) {
		ok = d.n && !elf_symbols_merge(s, &d);
		if (d.over_budget)
			s->over_budget = true;
		elf_symbols_free(&d);
	}
	free(elf);
	mem_account_uncharge(s->acct, elf_len);
	return ok;
}

int debug_info_attach(struct elf_symbols *s, int fd, const char *path,
		      int root_fd)
{
	if (s->has_symtab)
		return DEBUG_INFO_NONE;
	if (by_build_id(s, root_fd))
		return DEBUG_INFO_BUILD_ID;
	if (by_debuglink(s, path, root_fd))
		return DEBUG_INFO_DEBUGLINK;
	if (minidebuginfo(s, fd))
		return DEBUG_INFO_MINIDEBUGINFO;
	return DEBUG_INFO_NONE;
}
