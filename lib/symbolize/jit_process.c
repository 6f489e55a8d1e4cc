// SPDX-License-Identifier: Apache-2.0
#include "symbolize/jit_process.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "process/mapped_file.h"
#include "process/proc_file.h"

void jit_process_free(struct jit_process *j)
{
	if (!j)
		return;
	jit_symbols_free(&j->map.syms);
	jit_symbols_free(&j->dump.syms);
	mem_account_release(&j->account);
	free(j);
}

size_t jit_process_memory(const struct jit_process *j)
{
	return j ? sizeof(*j) + jit_symbols_memory(&j->map.syms) +
			       jit_symbols_memory(&j->dump.syms)
		 : 0;
}

uint32_t proc_status_parse_nspid(const char *text, size_t len)
{
	const char *end = text + len, *p = text;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		if (le - p > 6 && !memcmp(p, "NSpid:", 6)) {
			uint64_t last = 0, v = 0;
			bool in = false;

			for (const char *q = p + 6; q < le; q++) {
				if (*q >= '0' && *q <= '9') {
					v = v * 10 + (uint64_t)(*q - '0');
					if (v > UINT32_MAX)
						return 0;
					in = true;
				} else if (*q == ' ' || *q == '\t') {
					if (in)
						last = v;
					v = 0;
					in = false;
				} else {
					return 0;
				}
			}
			if (in)
				last = v;
			return (uint32_t)last;
		}
		p = le + 1;
	}
	return 0;
}

static uint32_t read_nspid(const char *proc_root, uint32_t pid)
{
	char path[96], *text;
	long n;
	uint32_t v;

	snprintf(path, sizeof(path), "%s/%u/status", proc_root, pid);
	n = proc_read_file(path, &text, 64 << 10);
	if (n < 0)
		return 0;
	v = proc_status_parse_nspid(text, (size_t)n);
	free(text);
	return v;
}

/* The perf map, resolved inside the process's root. */
static int open_perf_map(const char *proc_root, uint32_t pid, uint32_t nspid)
{
	struct open_how how = {
		.flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC |
			 O_NOCTTY,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char path[96];
	int root, fd, err;

	snprintf(path, sizeof(path), "%s/%u/root", proc_root, pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", nspid);
	fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
	err = fd < 0 ? -errno : fd;
	close(root);
	return err;
}

static bool is_jitdump_name(const char *path)
{
	const char *b = strrchr(path, '/');
	size_t n;

	b = b ? b + 1 : path;
	if (strncmp(b, "jit-", 4))
		return false;
	n = strspn(b + 4, "0123456789");
	return n > 0 && !strcmp(b + 4 + n, ".dump");
}

/* Read what was appended to the open file fd since the last time. */
static void refresh_source(struct jit_source *src, int fd, bool jitdump,
			   struct jit_stats *st)
{
	struct stat sb;
	uint64_t want;
	size_t got = 0, used;
	char *buf;

	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		st->refused++;
		return;
	}
	if (src->present && ((uint64_t)sb.st_dev != src->dev ||
			     (uint64_t)sb.st_ino != src->ino ||
			     (uint64_t)sb.st_size < src->off)) {
		/* Replaced or truncated: start over. */
		jit_symbols_clear(&src->syms);
		src->off = 0;
	}
	src->present = true;
	src->dev = (uint64_t)sb.st_dev;
	src->ino = (uint64_t)sb.st_ino;
	if ((uint64_t)sb.st_size <= src->off || src->off >= JIT_FILE_MAX)
		return;
	want = (uint64_t)sb.st_size - src->off;
	if (want > JIT_READ_CHUNK)
		want = JIT_READ_CHUNK;
	buf = malloc(want);
	if (!buf)
		return;
	while (got < want) {
		ssize_t r = pread(fd, buf + got, want - got,
				  (off_t)(src->off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	used = jitdump ? jitdump_feed(&src->syms, (const uint8_t *)buf, got)
		       : perf_map_feed(&src->syms, buf, got, false);
	src->off += used;
	free(buf);
}

static void refresh(struct jit_process *j, const char *proc_root, uint32_t pid,
		    const struct proc_maps *maps, struct jit_stats *st)
{
	uint64_t bad0 = j->map.syms.bad + j->dump.syms.bad,
		 ob0 = j->map.syms.over_budget + j->dump.syms.over_budget;
	int fd;

	if (!j->nspid)
		j->nspid = read_nspid(proc_root, pid);
	fd = open_perf_map(proc_root, pid, j->nspid ? j->nspid : pid);
	if (fd >= 0) {
		refresh_source(&j->map, fd, false, st);
		close(fd);
	} else if (fd != -ENOENT) {
		st->refused++;
	}
	for (size_t i = 0; maps && i < maps->n; i++) {
		const struct proc_mapping *m = &maps->v[i];

		if (m->kind != PROC_MAPPING_FILE || !m->path ||
		    !is_jitdump_name(m->path))
			continue;
		fd = mapped_file_open((pid_t)pid, m);
		if (fd < 0) {
			st->refused++;
			break;
		}
		refresh_source(&j->dump, fd, true, st);
		close(fd);
		break;
	}
	st->bad_entries += j->map.syms.bad + j->dump.syms.bad - bad0;
	st->over_budget +=
		j->map.syms.over_budget + j->dump.syms.over_budget - ob0;
}

static const char *find(struct jit_process *j, uint64_t pc)
{
	const struct jit_sym *a = jit_symbols_lookup(&j->map.syms, pc);
	const struct jit_sym *b = jit_symbols_lookup(&j->dump.syms, pc);

	/* jitdump carries code moves; prefer it where both know pc. */
	if (b)
		return jit_symbols_name(&j->dump.syms, b);
	return a ? jit_symbols_name(&j->map.syms, a) : NULL;
}

const char *jit_process_lookup(struct jit_process **jp, const char *proc_root,
			       uint32_t pid, const struct proc_maps *maps,
			       uint64_t pc, uint64_t now_ns,
			       struct mem_budget *budget, struct jit_stats *st)
{
	struct jit_process *j = *jp;
	const char *name;

	if (!j) {
		j = calloc(1, sizeof(*j));
		if (!j)
			return NULL;
		jit_symbols_init(&j->map.syms, JIT_PROCESS_BUDGET / 2);
		jit_symbols_init(&j->dump.syms, JIT_PROCESS_BUDGET / 2);
		mem_account_init(&j->account, budget);
		j->map.syms.account = &j->account;
		j->dump.syms.account = &j->account;
		*jp = j;
	}
	name = find(j, pc);
	if (name || now_ns < j->next_refresh_ns)
		return name;
	j->next_refresh_ns = now_ns + JIT_REFRESH_NS;
	refresh(j, proc_root, pid, maps, st);
	return find(j, pc);
}
