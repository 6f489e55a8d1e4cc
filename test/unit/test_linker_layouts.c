// SPDX-License-Identifier: Apache-2.0
/*
 * Mapping bias on real files from every linker Debian ships (GNU ld with
 * and without -z separate-code, gold, lld, mold): each library is loaded
 * by ld.so, its executable mapping found in /proc/self/maps, and the
 * addresses of two functions turned back into ELF virtual addresses and
 * symbols the way the profiler does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_file.h"
#include "filestore/file_cache.h"
#include "process/proc_file.h"
#include "process/proc_maps.h"
#include "process/process_table.h"

/* Decoded symbol names (elf_symbols_name). */
static char name_buf[ELF_SYM_NAME_BUF];

static const char *const variants[] = {
	"bfd", "bfd-nosep", "gold", "lld", "lld-sep", "mold", "mold-sep",
};

static void layouts_dir(char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	assert_true(n > 0);
	exe[n] = '\0';
	snprintf(out, len, "%s/layouts", dirname(exe));
}

/* The symbol at runtime address pc of the library, resolved from its
 * mapping as the symbolizer and the unwinder do. */
static void check_function(const struct proc_maps *maps, uint64_t pc,
			   const char *want, const char *variant)
{
	const struct proc_mapping *m = proc_maps_find(maps, pc);
	struct elf_file f;
	const struct elf_sym *sym;
	uint64_t vaddr, bias;
	int fd;

	assert_non_null(m);
	memset(&f, 0, sizeof(f));
	fd = open(m->path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(elf_symbols_load_fd(fd, &f.sym, NULL), 0);
	close(fd);
	assert_true(file_mapping_vaddr(m, &f, &vaddr));
	assert_true(file_mapping_bias(m, &f, &bias));
	assert_int_equal(bias + vaddr, m->start);
	vaddr += pc - m->start;
	sym = elf_symbols_lookup(&f.sym, vaddr);
	if (!sym || strcmp(elf_symbols_name(&f.sym, sym, name_buf), want) ||
	    sym->addr != vaddr)
		fail_msg("%s: %#llx -> %s at %#llx, want %s there", variant,
			 (unsigned long long)pc,
			 sym ? elf_symbols_name(&f.sym, sym, name_buf)
			     : "nothing",
			 (unsigned long long)vaddr, want);
	elf_symbols_free(&f.sym);
}

static void bias_of_each_linker(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 64];

	(void)state;
	layouts_dir(dir, sizeof(dir));
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		struct proc_maps maps;
		void *h, *first, *last;
		char *text;
		long n;

		snprintf(path, sizeof(path), "%s/libprobe-%s.so", dir,
			 variants[i]);
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			fail_msg("%s: %s (built by make test-unit)", path,
				 dlerror());
		first = dlsym(h, "layout_probe_first");
		last = dlsym(h, "layout_probe_last");
		assert_non_null(first);
		assert_non_null(last);
		n = proc_read_file("/proc/self/maps", &text,
				   PROC_MAPS_MAX_BYTES);
		assert_true(n > 0);
		assert_int_equal(proc_maps_parse(text, (size_t)n, &maps, NULL),
				 0);
		free(text);
		check_function(&maps, (uint64_t)(uintptr_t)first,
			       "layout_probe_first", variants[i]);
		check_function(&maps, (uint64_t)(uintptr_t)last,
			       "layout_probe_last", variants[i]);
		proc_maps_free(&maps);
		dlclose(h);
	}
}

/* Synthetic lld layout: read-only segment [0, 0x7f4) at vaddr 0, text
 * [0x800, 0xc60) at vaddr 0x1800; the kernel maps the text page from
 * file offset 0. The read-only segment must not be taken. */
static void bias_of_shared_first_page(void **state)
{
	struct elf_symbols s;
	uint64_t vaddr;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.loads[0] = (struct elf_load){0, 0, 0x7f4, 4 /* PF_R */};
	s.loads[1] = (struct elf_load){0x800, 0x1800, 0x460, 5 /* PF_R|X */};
	s.loads[2] = (struct elf_load){0xc60, 0x2c60, 0x1e8, 6 /* PF_R|W */};
	s.nloads = 3;
	assert_true(elf_symbols_mapping_vaddr(&s, 0, 0x1000, &vaddr));
	assert_int_equal(vaddr, 0x1000);
	/* A mapping of the middle of a segment (split by mprotect). */
	s.loads[1].filesz = 0x3000;
	assert_true(elf_symbols_mapping_vaddr(&s, 0x2000, 0x1000, &vaddr));
	assert_int_equal(vaddr, 0x3000);
	/* Outside every executable segment: the one holding the offset. */
	assert_true(elf_symbols_mapping_vaddr(&s, 0x5000, 0x1000, &vaddr) ==
		    false);
	s.loads[1].offset = UINT64_MAX - 8; /* hostile: no wrap */
	assert_true(elf_symbols_mapping_vaddr(&s, 0, 0x1000, &vaddr));
	assert_int_equal(vaddr, 0); /* from the read-only segment */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bias_of_each_linker),
		cmocka_unit_test(bias_of_shared_first_page),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
