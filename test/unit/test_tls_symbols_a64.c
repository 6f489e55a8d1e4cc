// SPDX-License-Identifier: Apache-2.0
/*
 * Trace-correlation TLS symbols of aarch64 files (TLS variant I): the
 * context publisher cross-compiled with TLSDESC, and an executable that
 * publishes through local-exec (make rules: build/arm64/workloads/, as make
 * test-arm64 runs them). The truth is read here independently of the scanner:
 * the R_AARCH64_TLSDESC entry naming the variable, and the variable's offset in
 * PT_TLS, which the AArch64 ELF ABI places 16 bytes (the TCB) above the thread
 * pointer, rounded up to the segment's alignment.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "context/tls_location.h"
#include "elf/tls_symbols.h"

struct truth {
	uint64_t tlsdesc_got; /* r_offset of R_AARCH64_TLSDESC, 0: none */
	uint64_t st_value;    /* the variable's offset in its TLS block */
	uint64_t tls_align;   /* PT_TLS p_align */
};

static Elf *open_built(const char *rel, int *fd)
{
	char exe[1024], path[1200];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	Elf *e;

	assert_true(n > 0);
	exe[n] = '\0';
	/* build/test/unit/X -> build/<rel> */
	snprintf(path, sizeof(path), "%s/../../%s", dirname(exe), rel);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		fail_msg("%s missing (its make rule builds it)", path);
	elf_version(EV_CURRENT);
	e = elf_begin(*fd, ELF_C_READ, NULL);
	assert_non_null(e);
	return e;
}

static void read_truth(Elf *e, const char *name, struct truth *t)
{
	Elf_Scn *scn = NULL;
	size_t phnum, symidx = 0;
	GElf_Shdr sh;

	memset(t, 0, sizeof(*t));
	assert_int_equal(elf_getphdrnum(e, &phnum), 0);
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		assert_non_null(gelf_getphdr(e, (int)i, &ph));
		if (ph.p_type == PT_TLS)
			t->tls_align = ph.p_align;
	}
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL);

		assert_non_null(gelf_getshdr(scn, &sh));
		if (sh.sh_type != SHT_DYNSYM)
			continue;
		for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;

			assert_non_null(gelf_getsym(d, (int)i, &s));
			if (!strcmp(elf_strptr(e, sh.sh_link, s.st_name),
				    name)) {
				symidx = i;
				t->st_value = s.st_value;
			}
		}
	}
	assert_true(symidx > 0);
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL);

		assert_non_null(gelf_getshdr(scn, &sh));
		if (sh.sh_type != SHT_RELA)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;

			assert_non_null(gelf_getrela(d, (int)i, &r));
			if (GELF_R_TYPE(r.r_info) == R_AARCH64_TLSDESC &&
			    GELF_R_SYM(r.r_info) == symidx)
				t->tlsdesc_got = r.r_offset;
		}
	}
}

static void tlsdesc_library(void **state)
{
	struct tls_symbols ts;
	struct truth t;
	int fd;
	Elf *e = open_built("arm64/workloads/libotelctx_tlsdesc.so", &fd);
	const struct tls_ctx_symbol *s = &ts.sym[TLS_CTX_OTEL_V1];

	(void)state;
	read_truth(e, "otel_thread_ctx_v1", &t);
	assert_true(t.tlsdesc_got != 0);
	assert_int_equal(tls_symbols_scan(e, &ts, NULL), 0);
	assert_true(ts.any);
	assert_int_equal(s->access, TLS_ACCESS_TLSDESC);
	assert_int_equal(s->got_vaddr, t.tlsdesc_got);
	assert_int_equal(s->st_value, t.st_value);
	assert_true(s->tp_above);
	elf_end(e);
	close(fd);
}

static void local_exec_executable(void **state)
{
	struct tls_symbols ts;
	struct otelprof_tls_loc loc;
	struct truth t;
	int fd;
	Elf *e = open_built("arm64/workloads/ctx_exe_le", &fd);
	const struct tls_ctx_symbol *s = &ts.sym[TLS_CTX_OTEL_V1];
	uint64_t align;

	(void)state;
	read_truth(e, "otel_thread_ctx_v1", &t);
	assert_int_equal(t.tlsdesc_got, 0);
	align = t.tls_align ? t.tls_align : 1;
	assert_int_equal(tls_symbols_scan(e, &ts, NULL), 0);
	assert_int_equal(s->access, TLS_ACCESS_LOCAL_EXEC);
	assert_true(s->tp_above);
	assert_int_equal(s->le_offset,
			 ((16 + align - 1) & ~(align - 1)) + t.st_value);
	/* This machine's BPF reads variant II only: an aarch64 file's
	 * location is refused here (an emulated process), kept on aarch64. */
#if defined(__aarch64__)
	assert_int_equal(tls_location_of(s, 0, true, &loc), 0);
	assert_int_equal(loc.tp_offset, s->le_offset);
#else
	assert_int_equal(tls_location_of(s, 0, true, &loc), -ENOENT);
#endif
	elf_end(e);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tlsdesc_library),
		cmocka_unit_test(local_exec_executable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
