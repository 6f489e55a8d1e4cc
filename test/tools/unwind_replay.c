// SPDX-License-Identifier: Apache-2.0
/*
 * Capture a thread's user stack and replay it through the shared native
 * walk (ebpf/unwind_walk.h, the source the BPF program and the stack-copy
 * unwinder compile), with the product's own table builder
 * (unwind_table_build_fd) and symbol reader (elf_symbols_load_fd,
 * debug_info_attach). See docs/unwinding.md, "Capturing and replaying a
 * stack".
 *
 *   unwind_replay capture [--tid TID] [--stack-bytes N] [--gdb] -o FILE PID
 *   unwind_replay replay [--expect] [--rows] [--root DIR] FILE
 *
 * A test tool, not an otelprof subcommand: it links the library's
 * internals (otelprof sees only the public ABI) and it stops the thread
 * it reads, which a profiler must never do.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elf/debug_info.h"
#include "elf/elf_file.h"
#include "profiler_types.h"
#include "symbolize/demangle.h"
#include "unwind/unwind_table.h"
#include "unwind_capture.h"

#define DEFAULT_STACK_BYTES (512u << 10)
#define GDB_TIMEOUT_MS	    120000

static void usage(void)
{
	fprintf(stderr,
		"usage: unwind_replay capture [--tid TID] [--stack-bytes N] "
		"[--gdb] -o FILE PID\n"
		"       unwind_replay replay [--expect] [--rows] [--root DIR] "
		"FILE\n");
	exit(2);
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	return !errno && *s && !*end;
}

/* ================= capture ================= */

struct pmap {
	uint64_t start, end, offset, ino;
	unsigned dmaj, dmin;
	char perms[5];
	char path[UNWIND_CAPTURE_MAX_PATH + 1];
};

/* /proc/PID/maps: the kernel's text, read whole. */
static int read_maps(uint32_t pid, struct pmap **out, uint32_t *n)
{
	char p[64], line[UNWIND_CAPTURE_MAX_PATH + 256];
	FILE *f;
	struct pmap *v = NULL;
	uint32_t cnt = 0, cap = 0;

	snprintf(p, sizeof(p), "/proc/%u/maps", pid);
	f = fopen(p, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct pmap m = {0};
		int used = 0;
		char *path;
		size_t l;

		if (sscanf(line,
			   "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64
			   " %x:%x %" SCNu64 " %n",
			   &m.start, &m.end, m.perms, &m.offset, &m.dmaj,
			   &m.dmin, &m.ino, &used) < 7)
			continue;
		path = line + used;
		l = strcspn(path, "\n");
		path[l] = 0;
		snprintf(m.path, sizeof(m.path), "%s", path);
		if (cnt == cap) {
			struct pmap *nv;

			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				fclose(f);
				return -ENOMEM;
			}
			v = nv;
		}
		v[cnt++] = m;
	}
	fclose(f);
	*out = v;
	*n = cnt;
	return 0;
}

static uint32_t read_remote(uint32_t tid, uint64_t addr, void *buf,
			    uint32_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)addr, len};
	ssize_t got = process_vm_readv((pid_t)tid, &local, 1, &remote, 1, 0);

	return got > 0 ? (uint32_t)got : 0;
}

/* gdb's view of the same stopped thread: one line per frame on the stack,
 * pc and function name. Not inlined frames (they share their caller's
 * pc) nor the tail callers gdb infers from DWARF call-site records (no
 * return address on the stack names them: no unwinder can see them). */
static const char gdb_script[] =
	"python\n"
	"import gdb\n"
	"for t in gdb.selected_inferior().threads():\n"
	"    if t.ptid[1] == %u:\n"
	"        t.switch()\n"
	"f = gdb.newest_frame()\n"
	"while f is not None:\n"
	"    if f.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):\n"
	"        print('OTELPROF_FRAME %%x %%s' %% (f.pc(), f.name() or ''))\n"
	"    try:\n"
	"        f = f.older()\n"
	"    except gdb.error:\n"
	"        f = None\n"
	"end\n";

static int gdb_frames(struct unwind_capture *c)
{
	char pidarg[16], script[1024], path[] = "/tmp/unwind_replay_gdbXXXXXX";
	char buf[1 << 16], *line, *save;
	size_t used = 0;
	int fds[2], fd, status;
	pid_t child;
	struct timespec t0, t1;

	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	snprintf(script, sizeof(script), gdb_script, c->tid);
	if (write(fd, script, strlen(script)) != (ssize_t)strlen(script)) {
		close(fd);
		unlink(path);
		return -EIO;
	}
	close(fd);
	snprintf(pidarg, sizeof(pidarg), "%u", c->pid);
	if (pipe2(fds, O_CLOEXEC)) {
		unlink(path);
		return -errno;
	}
	child = fork();
	if (child == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(fds[1], 1);
		dup2(null, 2);
		dup2(null, 0);
		execlp("gdb", "gdb", "-nx", "-batch", "-p", pidarg, "-ex",
		       "set backtrace past-main on", "-x", path, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = {fds[0], POLLIN, 0};
		ssize_t got;
		long ms;

		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms = (t1.tv_sec - t0.tv_sec) * 1000 +
		     (t1.tv_nsec - t0.tv_nsec) / 1000000;
		if (ms >= GDB_TIMEOUT_MS ||
		    poll(&pfd, 1, GDB_TIMEOUT_MS - ms) <= 0) {
			kill(child, SIGKILL);
			break;
		}
		got = read(fds[0], buf + used, sizeof(buf) - 1 - used);
		if (got <= 0)
			break;
		used += (size_t)got;
		if (used == sizeof(buf) - 1)
			break;
	}
	close(fds[0]);
	waitpid(child, &status, 0);
	unlink(path);
	if (child < 0)
		return -ECHILD;
	buf[used] = 0;
	c->expect = calloc(UNWIND_CAPTURE_MAX_FRAMES, sizeof(*c->expect));
	if (!c->expect)
		return -ENOMEM;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[UNWIND_CAPTURE_MAX_NAME + 1] = "";
		uint64_t pc;

		if (c->nexpect == UNWIND_CAPTURE_MAX_FRAMES)
			break;
		if (sscanf(line, "OTELPROF_FRAME %" SCNx64 " %4095[^\n]", &pc,
			   name) < 1)
			continue;
		c->expect[c->nexpect].pc = pc;
		c->expect[c->nexpect].name = strdup(name);
		if (!c->expect[c->nexpect].name)
			return -ENOMEM;
		c->nexpect++;
	}
	if (!c->nexpect) {
		fprintf(stderr, "gdb gave no frames (exit status %d)\n",
			WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return -ESRCH;
	}
	c->flags |= UNWIND_CAPTURE_F_EXPECT_GDB;
	return 0;
}

/* Identity of a mapped file, looked up through the mapping itself (the
 * path may name another file by now, or be in another mount namespace). */
static void file_identity(uint32_t pid, const struct pmap *p,
			  struct unwind_capture_map *m)
{
	char path[UNWIND_CAPTURE_MAX_PATH + 64];
	struct elf_symbols s;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64,
		 pid, p->start, p->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(path, sizeof(path), "/proc/%u/root%s", pid, p->path);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "warning: %s: %s (no identity recorded)\n",
			p->path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	m->size = (uint64_t)st.st_size;
	m->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
		      (uint64_t)st.st_mtim.tv_nsec;
	if (!elf_symbols_load_fd(fd, &s, NULL)) {
		free(m->build_id);
		m->build_id = strdup(s.build_id);
		elf_symbols_free(&s);
	}
	close(fd);
}

static int cmd_capture(int argc, char **argv)
{
	struct unwind_capture c = {0};
	struct user_regs_struct regs;
	struct pmap *pm = NULL;
	uint64_t v, stack_bytes = DEFAULT_STACK_BYTES;
	uint32_t npm = 0, tid = 0;
	const char *out = NULL;
	bool gdb = false;
	int status, sig = 0, rc = 1, err;
	uint8_t *enc;
	size_t enc_len;
	FILE *f;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--tid") && i + 1 < argc) {
			if (!parse_u64(argv[++i], &v) || !v || v > INT32_MAX)
				usage();
			tid = (uint32_t)v;
		} else if (!strcmp(argv[i], "--stack-bytes") && i + 1 < argc) {
			if (!parse_u64(argv[++i], &stack_bytes) ||
			    stack_bytes > UNWIND_CAPTURE_MAX_STACK)
				usage();
		} else if (!strcmp(argv[i], "--gdb")) {
			gdb = true;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (argv[i][0] != '-' && !c.pid) {
			if (!parse_u64(argv[i], &v) || !v || v > INT32_MAX)
				usage();
			c.pid = (uint32_t)v;
		} else {
			usage();
		}
	}
	if (!c.pid || !out)
		usage();
	c.tid = tid ? tid : c.pid;

	/* Stop the thread where it is: SEIZE + INTERRUPT, no signal seen
	 * by the process. */
	if (ptrace(PTRACE_SEIZE, c.tid, 0, 0)) {
		fprintf(stderr, "ptrace seize %u: %s\n", c.tid,
			strerror(errno));
		return 1;
	}
	if (ptrace(PTRACE_INTERRUPT, c.tid, 0, 0) ||
	    waitpid((pid_t)c.tid, &status, __WALL) != (pid_t)c.tid ||
	    !WIFSTOPPED(status)) {
		fprintf(stderr, "ptrace interrupt %u: %s\n", c.tid,
			strerror(errno));
		ptrace(PTRACE_DETACH, c.tid, 0, 0);
		return 1;
	}
	/* A signal arriving first stops it for delivery: hand it back. */
	if (status >> 16 != PTRACE_EVENT_STOP)
		sig = WSTOPSIG(status);
	if (ptrace(PTRACE_GETREGS, c.tid, 0, &regs)) {
		fprintf(stderr, "ptrace getregs: %s\n", strerror(errno));
		goto resume;
	}
	c.rip = regs.rip;
	c.rsp = regs.rsp;
	c.rbp = regs.rbp;
	err = read_maps(c.pid, &pm, &npm);
	if (err) {
		fprintf(stderr, "/proc/%u/maps: %s\n", c.pid, strerror(-err));
		goto resume;
	}
	for (uint32_t i = 0; i < npm; i++) {
		uint64_t len;

		if (c.rsp < pm[i].start || c.rsp >= pm[i].end)
			continue;
		len = pm[i].end - c.rsp;
		if (len > stack_bytes)
			len = stack_bytes;
		c.stack = malloc(len ? len : 1);
		if (!c.stack)
			goto resume;
		c.stack_len = read_remote(c.tid, c.rsp, c.stack, (uint32_t)len);
	}
	c.maps = calloc(npm ? npm : 1, sizeof(*c.maps));
	if (!c.maps)
		goto resume;
	for (uint32_t i = 0; i < npm && c.nmaps < UNWIND_CAPTURE_MAX_MAPS;
	     i++) {
		struct unwind_capture_map *m = &c.maps[c.nmaps];

		if (pm[i].perms[2] != 'x')
			continue;
		m->start = pm[i].start;
		m->end = pm[i].end;
		m->offset = pm[i].offset;
		m->dev = makedev(pm[i].dmaj, pm[i].dmin);
		m->ino = pm[i].ino;
		m->path = strdup(pm[i].path);
		m->build_id = strdup("");
		if (!m->path || !m->build_id)
			goto resume;
		if (!strcmp(pm[i].path, "[vdso]") &&
		    m->end - m->start <= UNWIND_CAPTURE_MAX_IMAGE) {
			/* Not a file: its bytes come with the capture. */
			m->image = malloc(m->end - m->start);
			if (!m->image)
				goto resume;
			m->image_len =
				read_remote(c.tid, m->start, m->image,
					    (uint32_t)(m->end - m->start));
			m->flags = UNWIND_CAPTURE_M_IMAGE;
		}
		c.nmaps++;
	}
	rc = 0;
resume:
	if (!rc && gdb) {
		/* Leave it stopped for gdb: a SIGSTOP queued while we hold
		 * it is taken before it runs user code again. */
		syscall(SYS_tgkill, c.pid, c.tid, SIGSTOP);
		ptrace(PTRACE_DETACH, c.tid, 0, sig);
		err = gdb_frames(&c);
		kill((pid_t)c.pid, SIGCONT);
		if (err) {
			fprintf(stderr, "gdb: %s\n", strerror(-err));
			rc = 1;
		}
	} else {
		ptrace(PTRACE_DETACH, c.tid, 0, sig);
	}
	for (uint32_t i = 0, j = 0; !rc && i < npm; i++) {
		if (pm[i].perms[2] != 'x' || j >= c.nmaps)
			continue;
		if (pm[i].path[0] == '/')
			file_identity(c.pid, &pm[i], &c.maps[j]);
		j++;
	}
	free(pm);
	if (rc)
		goto done;
	rc = 1;
	enc = unwind_capture_write(&c, &enc_len);
	if (!enc) {
		fprintf(stderr, "capture: cannot encode\n");
		goto done;
	}
	f = fopen(out, "we");
	if (!f || fwrite(enc, 1, enc_len, f) != enc_len || fclose(f)) {
		fprintf(stderr, "%s: %s\n", out, strerror(errno));
	} else {
		printf("captured pid %u tid %u: rip %#" PRIx64 " rsp %#" PRIx64
		       ", %u stack bytes, %u mappings, %u expected frames\n",
		       c.pid, c.tid, c.rip, c.rsp, c.stack_len, c.nmaps,
		       c.nexpect);
		rc = 0;
	}
	free(enc);
done:
	unwind_capture_free(&c);
	return rc;
}

/* ================= replay ================= */

/* One mapping as the walk sees it, with its file's rows and symbols. */
struct rmap {
	struct otelprof_bpf_mapping b;
	struct unwind_packed_row *rows;
	uint32_t nrows;
	struct elf_symbols sym;
	bool have_sym;
};

struct replay {
	const struct unwind_capture *c;
	struct rmap *m;
};

static int replay_read(void *ctx, uint64_t addr, uint64_t *out)
{
	const struct unwind_capture *c = ((struct replay *)ctx)->c;
	uint64_t off = addr - c->rsp;

	if (addr < c->rsp || off >= c->stack_len || c->stack_len - off < 8)
		return -1;
	memcpy(out, c->stack + off, 8);
	return 0;
}

static const struct otelprof_bpf_mapping *replay_mapping(void *ctx,
							 uint32_t idx)
{
	struct replay *r = ctx;

	return idx < r->c->nmaps ? &r->m[idx].b : NULL;
}

static void *replay_rows(void *ctx, uint32_t id)
{
	struct replay *r = ctx;

	return id && id <= r->c->nmaps ? &r->m[id - 1] : NULL;
}

static const struct unwind_packed_row *replay_row(void *rows, uint32_t idx)
{
	const struct rmap *m = rows;

	return idx < m->nrows ? &m->rows[idx] : NULL;
}

#define UNWIND_READ_U64(ctx, addr, out) replay_read((ctx), (addr), (out))
#define UNWIND_BIG_MAPPING(ctx, idx)	replay_mapping((ctx), (idx))
#define UNWIND_ROWS(ctx, id)		replay_rows((ctx), (id))
#define UNWIND_ROW(ctx, rows, idx)	((void)(ctx), replay_row((rows), (idx)))
#include "unwind_walk.h"

/* Decoded symbol names (elf_symbols_name). */
static char name_buf[ELF_SYM_NAME_BUF];

static uint8_t *read_file(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > UNWIND_CAPTURE_MAX_FILE) {
		fprintf(stderr, "%s: not a regular file of at most %u bytes\n",
			path, UNWIND_CAPTURE_MAX_FILE);
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	*len = 0;
	while (buf && *len < (size_t)st.st_size) {
		ssize_t got = read(fd, buf + *len, (size_t)st.st_size - *len);

		if (got <= 0)
			break;
		*len += (size_t)got;
	}
	close(fd);
	return buf;
}

/* The rows of one file, packed as the kernel holds them (rows above
 * 4 GiB of vaddr are not representable: the walk takes the frame-pointer
 * fallback there, as in BPF). */
static int pack_rows(struct rmap *m, const struct unwind_table *t)
{
	m->rows = calloc(t->nrows ? t->nrows : 1, sizeof(*m->rows));
	if (!m->rows)
		return -ENOMEM;
	for (size_t i = 0; i < t->nrows; i++) {
		if (t->rows[i].pc > UNWIND_PACKED_MAX_PC)
			break;
		unwind_row_pack(&t->rows[i], &m->rows[m->nrows++]);
	}
	return 0;
}

/* Load one mapping's file (or image) and check it is the captured one.
 * -1 with a message: refuse to replay against a changed file. */
static int load_map(const struct unwind_capture_map *cm, struct rmap *m,
		    uint32_t id, const char *root)
{
	struct unwind_table t = {0};
	char path[2 * UNWIND_CAPTURE_MAX_PATH + 2];
	uint64_t vaddr, off = cm->offset, mtime;
	struct stat st;
	int fd, err, terr;

	m->b.start = cm->start;
	m->b.end = cm->end;
	if (cm->flags & UNWIND_CAPTURE_M_IMAGE) {
		off = 0; /* the vDSO's image starts at its mapping */
		err = elf_symbols_load_mem(cm->image, cm->image_len, &m->sym,
					   NULL);
		if (err) {
			fprintf(stderr, "%s: %s\n", cm->path, strerror(-err));
			return -1;
		}
		terr = unwind_table_build_mem(cm->image, cm->image_len, &t,
					      NULL);
	} else if (cm->path[0] == '/') {
		snprintf(path, sizeof(path), "%s%s", root, cm->path);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			fprintf(stderr, "%s: %s\n", path, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		err = elf_symbols_load_fd(fd, &m->sym, NULL);
		if (err) {
			fprintf(stderr, "%s: %s\n", path, strerror(-err));
			close(fd);
			return -1;
		}
		m->have_sym = true;
		/* A build id names the file wherever it is; without one, the
		 * inode and modification time of the captured one. */
		mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
			(uint64_t)st.st_mtim.tv_nsec;
		if ((uint64_t)st.st_size != cm->size ||
		    (cm->build_id[0] &&
		     strcmp(cm->build_id, m->sym.build_id)) ||
		    (!cm->build_id[0] && ((uint64_t)st.st_ino != cm->ino ||
					  mtime != cm->mtime_ns))) {
			fprintf(stderr,
				"%s: not the captured file (size %lld, build "
				"id %s, inode %llu; captured: size %" PRIu64
				", build id %s, inode %" PRIu64 ")\n",
				path, (long long)st.st_size,
				m->sym.build_id[0] ? m->sym.build_id : "none",
				(unsigned long long)st.st_ino, cm->size,
				cm->build_id[0] ? cm->build_id : "none",
				cm->ino);
			close(fd);
			return -1;
		}
		if (!m->sym.has_symtab)
			debug_info_attach(&m->sym, fd, cm->path, -1);
		terr = unwind_table_build_fd(fd, &t, NULL);
		close(fd);
	} else {
		return 0; /* anonymous code: frame pointers */
	}
	m->have_sym = true;
	/* No table (no CFI, or a build error): frame pointers, as the
	 * profiler does for such a file. */
	if (terr && terr != -ENOENT)
		fprintf(stderr, "warning: %s: no unwind table: %s\n", cm->path,
			strerror(-terr));
	if (!elf_symbols_mapping_vaddr(&m->sym, off, cm->end - cm->start,
				       &vaddr)) {
		fprintf(stderr, "%s: no segment holds offset %#" PRIx64 "\n",
			cm->path, off);
		unwind_table_free(&t);
		return -1;
	}
	m->b.bias = cm->start - vaddr;
	if (!terr && t.nrows) {
		if (pack_rows(m, &t)) {
			unwind_table_free(&t);
			return -1;
		}
		m->b.file_id = id;
		m->b.nrows = m->nrows;
	}
	unwind_table_free(&t);
	return 0;
}

/* "name+0xoff path" of pc (frame i: the call instruction before it). */
static void symbolize(const struct replay *r, uint64_t pc, uint32_t i,
		      char *out, size_t len)
{
	uint64_t lookup = i ? pc - 1 : pc;

	for (uint32_t k = 0; k < r->c->nmaps; k++) {
		const struct rmap *m = &r->m[k];
		const struct elf_sym *s;
		char dem[DEMANGLE_MAX_OUTPUT];
		const char *name;

		if (lookup < m->b.start || lookup >= m->b.end)
			continue;
		s = m->have_sym
			    ? elf_symbols_lookup(&m->sym, lookup - m->b.bias)
			    : NULL;
		if (!s) {
			snprintf(out, len, "?? %s", r->c->maps[k].path);
			return;
		}
		name = elf_symbols_name(&m->sym, s, name_buf);
		if (symbol_demangle(name, dem))
			name = dem;
		snprintf(out, len, "%s+%#" PRIx64 " %s", name,
			 pc - m->b.bias - s->addr, r->c->maps[k].path);
		return;
	}
	snprintf(out, len, "?? (no mapping)");
}

/* The row the walk stepped by at frame i (--rows). */
static void print_row(struct replay *r, uint64_t pc, uint32_t i)
{
	const struct otelprof_bpf_mapping *m;
	const struct unwind_packed_row *row;
	uint64_t lookup = i ? pc - 1 : pc, vaddr;
	struct otelprof_bpf_proc proc = {.big_n = r->c->nmaps};

	m = unwind_find_mapping(r, &proc, lookup);
	if (!m || !m->file_id) {
		printf("     no table: frame pointer\n");
		return;
	}
	vaddr = lookup - m->bias;
	row = vaddr <= UNWIND_PACKED_MAX_PC
		      ? unwind_find_row(r, replay_rows(r, m->file_id), 0,
					m->nrows, (uint32_t)vaddr)
		      : NULL;
	if (!row) {
		printf("     vaddr %#" PRIx64 ": no row\n", vaddr);
		return;
	}
	printf("     vaddr %#" PRIx64 ": row %#x cfa base %u off %d, fp rule "
	       "%u off %d\n",
	       vaddr, row->pc, UNWIND_ROW_CFA_BASE(row),
	       UNWIND_ROW_CFA_OFFSET(row), UNWIND_ROW_FP_RULE(row),
	       UNWIND_ROW_FP_OFFSET(row));
}

static const char *stop_reason(const struct unwind_walk *w)
{
	if (w->flags & OTELPROF_SAMPLE_F_COMPLETE)
		return "complete (reached the outermost frame)";
	if (w->flags & OTELPROF_SAMPLE_F_TRUNCATED)
		return "truncated (frame limit)";
	switch (w->error) {
	case OTELPROF_CNT_UNWIND_NO_MAPPING:
		return "stopped: pc in no mapping";
	case OTELPROF_CNT_UNWIND_ERR_READ:
		return "stopped: read outside the stack copy";
	case OTELPROF_CNT_UNWIND_ERR_LOOP:
		return "stopped: the stack pointer did not grow";
	default:
		return "stopped: no rule gave a caller";
	}
}

static int cmd_replay(int argc, char **argv)
{
	static uint64_t frames[OTELPROF_USTACK_WORDS];
	struct unwind_capture c;
	struct unwind_walk w;
	struct replay r = {&c, NULL};
	const char *file = NULL, *root = "";
	bool expect = false, rows = false;
	char err[256], name[DEMANGLE_MAX_OUTPUT + UNWIND_CAPTURE_MAX_PATH + 64];
	uint8_t *buf;
	size_t len;
	int rc = 1;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--expect"))
			expect = true;
		else if (!strcmp(argv[i], "--rows"))
			rows = true;
		else if (!strcmp(argv[i], "--root") && i + 1 < argc)
			root = argv[++i];
		else if (argv[i][0] != '-' && !file)
			file = argv[i];
		else
			usage();
	}
	if (!file)
		usage();
	buf = read_file(file, &len);
	if (!buf)
		return 1;
	if (unwind_capture_parse(buf, len, &c, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", file, err);
		free(buf);
		return 1;
	}
	free(buf);
	if (expect && !c.nexpect) {
		fprintf(stderr, "%s: no expected frames recorded\n", file);
		goto out;
	}
	r.m = calloc(c.nmaps ? c.nmaps : 1, sizeof(*r.m));
	if (!r.m)
		goto out;
	for (uint32_t i = 0; i < c.nmaps; i++)
		if (load_map(&c.maps[i], &r.m[i], i + 1, root))
			goto out;

	/* All mappings as the big mappings array, as the stack-copy walk
	 * passes them. */
	memset(&w, 0, sizeof(w));
	w.proc.big_n = c.nmaps;
	unwind_walk_begin(&w, c.rip, c.rsp, c.rbp);
	while (!unwind_walk_frame(&r, &w, frames, OTELPROF_MAX_USER_FRAMES))
		;
	printf("pid %u tid %u: %u frames, %s\n", c.pid, c.tid, w.n,
	       stop_reason(&w));
	for (uint32_t i = 0; i < w.n; i++) {
		uint64_t pc = frames[i] & ~OTELPROF_USTACK_FLAGS;

		symbolize(&r, pc, i, name, sizeof(name));
		printf("#%-3u %#018" PRIx64 " %s%s\n", i, pc, name,
		       frames[i] & OTELPROF_USTACK_FP_FRAME ? " [fp]" : "");
		if (rows)
			print_row(&r, pc, i);
	}
	rc = 0;
	if (expect) {
		/* The walk stops at its frame limit; what it has must be the
		 * expected frames' first ones. */
		uint32_t n = w.n, bad = 0;
		bool truncated = w.flags & OTELPROF_SAMPLE_F_TRUNCATED;

		if (n != c.nexpect && !(truncated && n < c.nexpect)) {
			printf("MISMATCH: %u frames, expected %u\n", n,
			       c.nexpect);
			bad++;
		}
		for (uint32_t i = 0; i < c.nexpect && i < n; i++) {
			uint64_t pc = frames[i] & ~OTELPROF_USTACK_FLAGS;

			if (pc == c.expect[i].pc)
				continue;
			printf("MISMATCH: frame %u is %#" PRIx64
			       ", expected %#" PRIx64 " %s\n",
			       i, pc, c.expect[i].pc, c.expect[i].name);
			bad++;
		}
		for (uint32_t i = n; bad && i < c.nexpect; i++)
			printf("  expected #%u %#" PRIx64 " %s\n", i,
			       c.expect[i].pc, c.expect[i].name);
		printf("%s: %u of %u expected frames%s (%s)\n",
		       bad ? "FAIL" : "OK", bad ? 0 : n, c.nexpect,
		       truncated ? ", walk truncated" : "",
		       c.flags & UNWIND_CAPTURE_F_EXPECT_GDB ? "from gdb"
							     : "recorded");
		rc = bad ? 1 : 0;
	}
out:
	for (uint32_t i = 0; r.m && i < c.nmaps; i++) {
		if (r.m[i].have_sym)
			elf_symbols_free(&r.m[i].sym);
		free(r.m[i].rows);
	}
	free(r.m);
	unwind_capture_free(&c);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "capture"))
		return cmd_capture(argc - 2, argv + 2);
	if (!strcmp(argv[1], "replay"))
		return cmd_replay(argc - 2, argv + 2);
	usage();
	return 2;
}
