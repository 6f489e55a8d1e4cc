// SPDX-License-Identifier: Apache-2.0
/* kallsyms and ELF symbol tables: synthetic, real and hostile input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/proc_file.h"
#include "process/proc_maps.h"
#include "symbolize/demangle.h"
#include "elf/elf_file.h"
#include "symbolize/symbol_names.h"
#include "symbolize/kallsyms.h"

/* Decoded symbol names (elf_symbols_name). */
static char name_buf[ELF_SYM_NAME_BUF];

static void kallsyms_synthetic(void **state)
{
	static const char text[] = "ffffffff81000000 T _stext\n"
				   "ffffffff81000100 t helper\n"
				   "ffffffff81000200 D some_data\n"
				   "ffffffffc0000000 t mod_func\t[mymod]\n"
				   "ffffffffc0000100 T mod_func2\t[mymod]\n"
				   "not a line\n"
				   "ffffffff81000300 W weak_fn\n";
	struct kallsyms k;
	const struct ksym *s;

	(void)state;
	assert_int_equal(kallsyms_parse(text, sizeof(text) - 1, &k), 0);
	assert_int_equal(k.n, 5); /* data symbol skipped */
	assert_int_equal(k.bad_lines, 1);
	s = kallsyms_lookup(&k, 0xffffffff81000150);
	assert_string_equal(kallsyms_name(&k, s->name), "helper");
	assert_int_equal(s->module, 0);
	s = kallsyms_lookup(&k, 0xffffffffc0000104);
	assert_string_equal(kallsyms_name(&k, s->name), "mod_func2");
	assert_string_equal(kallsyms_name(&k, s->module), "mymod");
	assert_null(kallsyms_lookup(&k, 0x1000));
	kallsyms_free(&k);
}

static void kallsyms_hidden_addresses(void **state)
{
	static const char text[] = "0000000000000000 T _stext\n"
				   "0000000000000000 t foo\n";
	struct kallsyms k;

	(void)state;
	/* kptr_restrict: all zero; report it instead of bogus names. */
	assert_int_equal(kallsyms_parse(text, sizeof(text) - 1, &k), -EPERM);
}

static void kallsyms_real(void **state)
{
	struct kallsyms k;
	const struct ksym *s;
	char *text, *line;
	long n;
	unsigned long long addr = 0;

	(void)state;
	if (geteuid() != 0) {
		fail_msg("reading kernel addresses needs root");
	}
	assert_int_equal(kallsyms_load(&k), 0);
	assert_true(k.n > 1000);
	/* Find schedule's address independently and look it up. */
	n = proc_read_file("/proc/kallsyms", &text, KALLSYMS_MAX_BYTES);
	assert_true(n > 0);
	line = strstr(text, " T schedule\n");
	assert_non_null(line);
	while (line > text && line[-1] != '\n')
		line--;
	assert_int_equal(sscanf(line, "%llx", &addr), 1);
	s = kallsyms_lookup(&k, addr + 1);
	assert_non_null(s);
	assert_string_equal(kallsyms_name(&k, s->name), "schedule");
	free(text);
	kallsyms_free(&k);
}

/* A function in this test binary, found through its own /proc maps. */
__attribute__((noinline)) int symbol_probe_function(int x)
{
	return x * 3 + 1;
}

static void elf_symbols_of_self(void **state)
{
	struct elf_symbols s;
	struct proc_maps maps;
	const struct proc_mapping *m;
	const struct elf_sym *sym;
	uint64_t pc = (uint64_t)(uintptr_t)&symbol_probe_function + 2, vaddr;
	char *text;
	long n;
	int fd;

	(void)state;
	n = proc_read_file("/proc/self/maps", &text, PROC_MAPS_MAX_BYTES);
	assert_true(n > 0);
	assert_int_equal(proc_maps_parse(text, (size_t)n, &maps, NULL), 0);
	free(text);
	m = proc_maps_find(&maps, pc);
	assert_non_null(m);
	fd = open(m->path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(elf_symbols_load_fd(fd, &s, NULL), 0);
	close(fd);
	assert_true(elf_symbols_vaddr(&s, pc - m->start + m->offset, &vaddr));
	sym = elf_symbols_lookup(&s, vaddr);
	assert_non_null(sym);
	assert_string_equal(elf_symbols_name(&s, sym, name_buf),
			    "symbol_probe_function");
	assert_true(s.build_id[0] != '\0');
	elf_symbols_free(&s);
	proc_maps_free(&maps);
	assert_int_equal(symbol_probe_function(1), 4);
}

static void elf_symbols_of_libc(void **state)
{
	struct elf_symbols s;
	const struct elf_sym *sym = NULL;
	int fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(elf_symbols_load_fd(fd, &s, NULL), 0);
	close(fd);
	assert_true(s.n > 1000);
	for (size_t i = 0; i < s.n; i++)
		if (!strcmp(elf_symbols_name(&s, &s.syms[i], name_buf),
			    "malloc"))
			sym = &s.syms[i];
	assert_non_null(sym);
	assert_true(sym->size > 0);
	assert_ptr_equal(elf_symbols_lookup(&s, sym->addr + sym->size - 1),
			 sym);
	assert_int_equal(strlen(s.build_id), 40);
	/* Sorted and unique. */
	for (size_t i = 1; i < s.n; i++)
		assert_true(s.syms[i - 1].addr < s.syms[i].addr);
	elf_symbols_free(&s);
}

/* Every function symbol libelf reads from fd's .symtab and .dynsym, as
 * (address, name) pairs: the truth the front-coded names are held to. */
struct named_addr {
	uint64_t addr;
	char *name;
};

static int cmp_named_addr(const void *a, const void *b)
{
	const struct named_addr *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static struct named_addr *libelf_functions(int fd, size_t *n)
{
	struct named_addr *v = NULL;
	size_t cap = 0;
	Elf_Scn *scn = NULL;
	Elf *elf;

	*n = 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 1; i < sh.sh_size / sizeof(Elf64_Sym); i++) {
			GElf_Sym sym;
			const char *name;
			unsigned type;

			assert_non_null(gelf_getsym(d, (int)i, &sym));
			type = GELF_ST_TYPE(sym.st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value ||
			    !(name = elf_strptr(elf, sh.sh_link,
						sym.st_name)) ||
			    !*name)
				continue;
			if (*n == cap) {
				cap = cap ? 2 * cap : 4096;
				v = realloc(v, cap * sizeof(*v));
				assert_non_null(v);
			}
			v[*n].addr = sym.st_value;
			v[(*n)++].name = strdup(name);
		}
	}
	elf_end(elf);
	qsort(v, *n, sizeof(*v), cmp_named_addr);
	return v;
}

/* Is (addr, name) one of truth's pairs? */
static bool truth_has(const struct named_addr *t, size_t n, uint64_t addr,
		      const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && t[lo].addr == addr; lo++)
		if (!strcmp(t[lo].name, name))
			return true;
	return false;
}

/*
 * The names kept are front-coded (elf_file.h): each symbol's name, asked
 * for alone and read in order, is the name libelf gives for that address,
 * every function address libelf lists has its symbol, and a C++ binary's
 * names take well under their plain bytes.
 */
static void packed_names_match_libelf(void **state)
{
	static const char *const files[] = {
		"/usr/bin/node",
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
		"/lib/x86_64-linux-gnu/libc.so.6",
	};

	(void)state;
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct elf_symbols_names_iter it;
		struct named_addr *truth;
		struct elf_symbols s;
		size_t n, plain = 0, ours = 0;
		int fd = open(files[f], O_RDONLY);

		if (fd < 0)
			fail_msg("%s: %s (make test installs it)", files[f],
				 strerror(errno));
		truth = libelf_functions(fd, &n);
		assert_int_equal(elf_symbols_load_fd(fd, &s, NULL), 0);
		close(fd);
		assert_true(s.n > 1000);
		assert_true(s.names_packed);
		elf_symbols_names_start(&it);
		for (size_t i = 0; i < s.n; i++) {
			const char *seq = elf_symbols_names_next(&s, &it);
			const char *one =
				elf_symbols_name(&s, &s.syms[i], name_buf);

			assert_non_null(seq);
			assert_string_equal(seq, one);
			plain += strlen(one) + 1;
			/* PLT stubs are named by us, not by a table. */
			if (strstr(one, "@plt"))
				continue;
			if (!truth_has(truth, n, s.syms[i].addr, one))
				fail_msg("%s: %#llx named %s, not in its "
					 "tables",
					 files[f],
					 (unsigned long long)s.syms[i].addr,
					 one);
			ours++;
		}
		assert_null(elf_symbols_names_next(&s, &it));
		for (size_t i = 0; i < n; i++) {
			const struct elf_sym *sym =
				elf_symbols_lookup(&s, truth[i].addr);

			assert_non_null(sym);
			assert_int_equal(sym->addr, truth[i].addr);
		}
		/* find() reads the names in order. */
		assert_ptr_equal(
			elf_symbols_find(&s,
					 elf_symbols_name(&s, &s.syms[s.n - 1],
							  name_buf)),
			&s.syms[s.n - 1]);
		printf("%s: %zu names, %zu B plain, %zu B kept (%.0f%%)\n",
		       files[f], s.n, plain, s.names.len,
		       100.0 * (double)s.names.len / (double)plain);
		if (f == 0)
			assert_true(s.names.len * 10 < plain * 8);
		assert_true(ours > 1000);
		for (size_t i = 0; i < n; i++)
			free(truth[i].name);
		free(truth);
		elf_symbols_free(&s);
	}
}

/*
 * Merging a second table (a debug file's, MiniDebugInfo's) into a packed
 * one: one symbol per address, the first table's name where both have
 * one, every name still right and packed again.
 */
static void merge_keeps_names(void **state)
{
	static char other_buf[ELF_SYM_NAME_BUF];
	struct elf_symbols a, b, want_a, want_b;
	int fa = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY);
	int fb = open("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", O_RDONLY);
	size_t from_b = 0;

	(void)state;
	assert_true(fa >= 0 && fb >= 0);
	assert_int_equal(elf_symbols_load_fd(fa, &a, NULL), 0);
	assert_int_equal(elf_symbols_load_fd(fa, &want_a, NULL), 0);
	assert_int_equal(elf_symbols_load_fd(fb, &b, NULL), 0);
	assert_int_equal(elf_symbols_load_fd(fb, &want_b, NULL), 0);
	close(fa);
	close(fb);
	assert_true(a.names_packed && b.names_packed);
	assert_int_equal(elf_symbols_merge(&a, &b), 0);
	assert_true(a.names_packed);
	for (size_t i = 1; i < a.n; i++)
		assert_true(a.syms[i - 1].addr < a.syms[i].addr);
	for (size_t i = 0; i < a.n; i++) {
		const struct elf_sym *w =
			elf_symbols_lookup(&want_a, a.syms[i].addr);
		const char *got = elf_symbols_name(&a, &a.syms[i], name_buf);

		if (!w || w->addr != a.syms[i].addr) {
			w = elf_symbols_lookup(&want_b, a.syms[i].addr);
			assert_non_null(w);
			assert_int_equal(w->addr, a.syms[i].addr);
			assert_string_equal(
				got, elf_symbols_name(&want_b, w, other_buf));
			from_b++;
			continue;
		}
		assert_string_equal(got,
				    elf_symbols_name(&want_a, w, other_buf));
	}
	assert_true(from_b > 1000);
	assert_int_equal(a.n, want_a.n + from_b);
	elf_symbols_free(&a);
	elf_symbols_free(&b);
	elf_symbols_free(&want_a);
	elf_symbols_free(&want_b);
}

static int tmpfile_with(const void *data, size_t len, char *path)
{
	int fd;

	strcpy(path, "/tmp/otelprof-test-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	if (len && write(fd, data, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return fd;
}

static void elf_hostile_inputs(void **state)
{
	char path[64], junk[8192];
	struct elf_symbols s;
	int fd, libc;
	off_t size;
	char *img;

	(void)state;
	/* Empty, text, random bytes. */
	fd = tmpfile_with("", 0, path);
	assert_int_equal(elf_symbols_load_fd(fd, &s, NULL), -ENOEXEC);
	close(fd);
	unlink(path);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 7919 + 13);
	memcpy(junk, "\177ELF\2\1\1", 7);
	fd = tmpfile_with(junk, sizeof(junk), path);
	assert_true(elf_symbols_load_fd(fd, &s, NULL) <= 0);
	elf_symbols_free(&s);
	close(fd);
	unlink(path);

	/* libc truncated at many points and with corrupted bytes. */
	libc = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY);
	assert_true(libc >= 0);
	size = lseek(libc, 0, SEEK_END);
	img = malloc((size_t)size);
	assert_non_null(img);
	assert_int_equal(pread(libc, img, (size_t)size, 0), size);
	close(libc);
	for (int cut = 1; cut < 16; cut++) {
		fd = tmpfile_with(img, (size_t)size * (size_t)cut / 16, path);
		assert_true(fd >= 0);
		if (!elf_symbols_load_fd(fd, &s, NULL))
			elf_symbols_free(&s);
		close(fd);
		unlink(path);
	}
	srand(42);
	for (int round = 0; round < 32; round++) {
		char *copy = malloc((size_t)size);

		memcpy(copy, img, (size_t)size);
		/* Corrupt the headers and the section header table. */
		for (int k = 0; k < 64; k++) {
			size_t at = (size_t)rand() % 4096;

			copy[at] = (char)rand();
			at = (size_t)size - 1 - (size_t)rand() % 8192;
			copy[at] = (char)rand();
		}
		fd = tmpfile_with(copy, (size_t)size, path);
		if (!elf_symbols_load_fd(fd, &s, NULL))
			elf_symbols_free(&s);
		close(fd);
		unlink(path);
		free(copy);
	}
	free(img);
}

static void htlhash_matches_definition(void **state)
{
	char path[64], cmd[512], out[128] = {0}, hash[33];
	char data[10000];
	FILE *p;
	int fd;

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 31 + 1);
	fd = tmpfile_with(data, sizeof(data), path);
	assert_true(fd >= 0);
	assert_int_equal(elf_htlhash_fd(fd, hash), 0);
	close(fd);
	/* Independent: coreutils over head 4096 || tail 4096 || be64(size). */
	snprintf(cmd, sizeof(cmd),
		 "(head -c 4096 %s; tail -c 4096 %s; printf "
		 "'\\000\\000\\000\\000\\000\\000\\047\\020') | sha256sum",
		 path, path);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, sizeof(out), p));
	pclose(p);
	unlink(path);
	out[32] = '\0';
	assert_string_equal(hash, out);
}

static void demangles_cxx_and_rust(void **state)
{
	static char out[DEMANGLE_MAX_OUTPUT];
	static char longname[DEMANGLE_MAX_INPUT + 16];
	struct symbol_names c;

	(void)state;
	assert_true(symbol_demangle("_ZN4node5StartEiPPc", out) > 0);
	assert_string_equal(out, "node::Start(int, char**)");
	assert_true(symbol_demangle("_ZNKSt6vectorIiSaIiEE4sizeEv", out) > 0);
	assert_string_equal(
		out, "std::vector<int, std::allocator<int> >::size() const");
	/* A PLT stub and a versioned name: the suffix is kept after the
	 * demangled name, as perf prints them. */
	assert_true(symbol_demangle("_ZNSt6chrono3_V212steady_clock3nowEv@plt",
				    out) > 0);
	assert_string_equal(out, "std::chrono::_V2::steady_clock::now()@plt");
	assert_true(symbol_demangle("_ZNSt9exceptionD2Ev@@GLIBCXX_3.4", out) >
		    0);
	assert_string_equal(out, "std::exception::~exception()@@GLIBCXX_3.4");
	assert_int_equal(symbol_demangle("main@plt", out), 0);
	assert_int_equal(symbol_demangle("_ZN3foo@plt", out), 0);
	/* Rust legacy: the hash suffix goes */
	assert_true(
		symbol_demangle(
			"_ZN14rust_callgraph10leaf_heavy17h0123456789abcdefE",
			out) > 0);
	assert_string_equal(out, "rust_callgraph::leaf_heavy");
	/* Rust v0 */
	assert_true(symbol_demangle("_RINvCsgFoJDcoYc6c_14rust_callgraph10leaf_"
				    "heavyNtB2_5HeavyEB2_",
				    out) > 0);
	assert_string_equal(
		out, "rust_callgraph::leaf_heavy::<rust_callgraph::Heavy>");
	/* Not mangled, broken, or too long: no result (raw name kept). */
	assert_int_equal(symbol_demangle("main", out), 0);
	assert_int_equal(symbol_demangle("_Z", out), 0);
	assert_int_equal(symbol_demangle("_ZN3foo", out), 0);
	memset(longname, 'a', sizeof(longname) - 1);
	memcpy(longname, "_ZN", 3);
	assert_int_equal(symbol_demangle(longname, out), 0);

	/* Rust v0 Punycode identifiers (decoded into a heap buffer by
	 * libiberty): a real one demangles; one whose back-reference prints
	 * past the buffer is refused without leaving the demangler mid-way
	 * (that leaked its buffer: LeakSanitizer checks it here). */
	assert_true(symbol_demangle("_RNqCs4fqI2P2rA04_11utf8_identsu30____"
				    "7hkackfecea1cbdathfdh9hlq6y",
				    out) > 0);
	assert_string_equal(out,
			    "utf8_idents::"
			    "\u10e1\u10d0\u10ed\u10db\u10d4\u10da\u10d0\u10d3_"
			    "\u10d2\u10d4\u10db\u10e0\u10d8\u10d4\u10da\u10d8_"
			    "\u10e1\u10d0\u10d3\u10d8\u10da\u10d8");
	assert_int_equal(symbol_demangle("_RINIC0u8_rtvjjvotB_", out), 0);

	/* Template-ids naming the previous one twice (S<n>_): the output
	 * doubles per level. Two levels demangle; 30 (2^30 names' worth,
	 * minutes in libiberty) are refused at the 8 KiB buffer, at once. */
	assert_true(symbol_demangle("_Z1f1A1BIS_S_ES0_IS1_S1_ES0_IS2_S2_E",
				    out) > 0);
	assert_string_equal(out, "f(A, B<A, A>, B<B<A, A>, B<A, A> >, "
				 "B<B<B<A, A>, B<A, A> >, B<B<A, A>, B<A, "
				 "A> > >)");
	{
		char bomb[512] = "_Z1f1A1BIS_S_E";
		uint64_t refused0 = symbol_demangle_refused();

		for (int i = 0, last = 2; i < 30; i++, last++) {
			char sub[16];

			/* S<last-1 in base 36>_ (all below 36 here) */
			snprintf(sub, sizeof(sub), "S%c_",
				 "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[last -
									1]);
			strcat(bomb, "S0_I");
			strcat(bomb, sub);
			strcat(bomb, sub);
			strcat(bomb, "E");
		}
		assert_int_equal(symbol_demangle(bomb, out), 0);
		assert_int_equal(symbol_demangle_refused(), refused0 + 1);
	}

	/* v0 binders: late-bound lifetimes print as libiberty prints them;
	 * a count of 2^59 (libiberty loops over it even where an impl's path
	 * prints nothing) is refused at once, as is an unterminated one. */
	assert_true(symbol_demangle("_RINvC3foo3barFG0_RL1_hRL0_hEuE", out) >
		    0);
	assert_string_equal(out, "foo::bar::<for<'a, 'b> fn(&'a u8, &'b u8)>");
	assert_true(symbol_demangle("_RINvC3foo3barDG_NtC3foo1TEL_E", out) > 0);
	assert_string_equal(out, "foo::bar::<dyn for<'a> foo::T>");
	{
		uint64_t refused0 = symbol_demangle_refused();

		assert_int_equal(
			symbol_demangle("_RMIC3fooFGzzzzzzzzzz_EuEu", out), 0);
		assert_int_equal(symbol_demangle("_RMIC3fooDGzzzzzzzzzz", out),
				 0);
		assert_int_equal(symbol_demangle_refused(), refused0 + 2);
	}

	/* The per-file cache answers the same, plain names as themselves. */
	symbol_names_init(&c);
	assert_string_equal(symbol_names_get(&c, 7, "_ZN4node5StartEiPPc", out),
			    "node::Start(int, char**)");
	memset(out, 0, sizeof(out));
	assert_string_equal(symbol_names_get(&c, 7, "_ZN4node5StartEiPPc", out),
			    "node::Start(int, char**)");
	assert_string_equal(symbol_names_get(&c, 8, "malloc", out), "malloc");
	assert_string_equal(symbol_names_get(&c, 8, "malloc", out), "malloc");
	assert_int_equal(c.n, 2);
	assert_true(symbol_names_memory(&c) > 0);
	symbol_names_free(&c);
}

/* Is the .rela.plt relocation of GOT slot `got` for the symbol that
 * `name` ("target@plt") names? */
static bool plt_target_is(Elf *elf, uint64_t got, const char *name)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, dsh;
		Elf_Data *d, *dd;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA)
			continue;
		d = elf_getdata(scn, NULL);
		if (!gelf_getshdr(elf_getscn(elf, sh.sh_link), &dsh))
			continue;
		dd = elf_getdata(elf_getscn(elf, sh.sh_link), NULL);
		for (size_t i = 0;
		     d && dd && i < d->d_size / sizeof(Elf64_Rela); i++) {
			GElf_Rela r;
			GElf_Sym sym;
			const char *t;

			if (!gelf_getrela(d, (int)i, &r) || r.r_offset != got ||
			    !gelf_getsym(dd, (int)GELF_R_SYM(r.r_info), &sym))
				continue;
			t = elf_strptr(elf, dsh.sh_link, sym.st_name);
			return t && strlen(name) == strlen(t) + 4 &&
			       !strncmp(name, t, strlen(t));
		}
	}
	return false;
}

/* PLT stubs named target@plt: each named stub must jump through the GOT
 * slot of the relocation for that target (decoded from the stub's bytes:
 * jmp *disp32(%rip), maybe after endbr64 / bnd). */
static void plt_stubs_named(void **state)
{
	const char *path = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
	struct elf_symbols s;
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr plt = {0};
	size_t shstrndx, named = 0, checked = 0;
	int fd = open(path, O_RDONLY);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(elf_symbols_load_fd(fd, &s, NULL), 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) &&
		    (n = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(n, ".plt"))
			plt = sh;
	}
	assert_true(plt.sh_size > 32);
	for (uint64_t a = plt.sh_addr + 16; a < plt.sh_addr + plt.sh_size;
	     a += 16) {
		const struct elf_sym *sym = elf_symbols_lookup(&s, a + 4);
		unsigned char b[16];
		int32_t disp;
		const char *name;
		size_t k = 0;

		assert_non_null(sym);
		name = elf_symbols_name(&s, sym, name_buf);
		assert_int_equal(sym->addr, a);
		assert_true(strlen(name) > 4 &&
			    !strcmp(name + strlen(name) - 4, "@plt"));
		named++;
		/* The stub's GOT slot, from its code. */
		assert_int_equal(
			pread(fd, b, sizeof(b),
			      (off_t)(plt.sh_offset + (a - plt.sh_addr))),
			(ssize_t)sizeof(b));
		if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e)
			k = 4;
		if (b[k] == 0xf2)
			k++;
		if (b[k] != 0xff || b[k + 1] != 0x25)
			continue;
		memcpy(&disp, b + k + 2, 4);
		if (plt_target_is(elf, a + k + 6 + (int64_t)disp, name))
			checked++;
		else
			printf("%s at %#llx: GOT slot of another symbol\n",
			       name, (unsigned long long)a);
	}
	elf_end(elf);
	close(fd);
	printf("%zu PLT stubs named, %zu decoded\n", named, checked);
	assert_true(named > 100);
	assert_true(checked == named);
	elf_symbols_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(kallsyms_synthetic),
		cmocka_unit_test(kallsyms_hidden_addresses),
		cmocka_unit_test(kallsyms_real),
		cmocka_unit_test(elf_symbols_of_self),
		cmocka_unit_test(demangles_cxx_and_rust),
		cmocka_unit_test(plt_stubs_named),
		cmocka_unit_test(elf_symbols_of_libc),
		cmocka_unit_test(elf_hostile_inputs),
		cmocka_unit_test(htlhash_matches_definition),
		cmocka_unit_test(packed_names_match_libelf),
		cmocka_unit_test(merge_keeps_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
