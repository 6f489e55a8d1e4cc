// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
/*
 * One process that asks for more kernel unwind rows than the host has:
 * writes NFILES distinct ELF files into DIR, each with an .eh_frame of
 * FDES FDEs of eight rows apiece (5 bytes of CFI a row, so a file of
 * 600,000 rows is 3 MB), maps every one executable and burns CPU in its
 * own code so that a profiler loads them all. Each file is its own inode:
 * a table (and a kernel table id) per file. After them, and above them
 * (a profiler reads mappings by address), it maps a tail of smaller files:
 * FDES/2, FDES/4, ... 1 FDEs, two of each, then 256 more of one FDE, each
 * padded to 320 KiB so that a profiler reads them where it reads the big
 * ones. If the big ones leave room in the host's share, the tail fills it
 * to within a few rows, even when read a little out of order.
 * Usage: rowhog DIR NFILES FDES SECONDS. Prints "ready" once all are
 * mapped.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static void die(const char *m)
{
	perror(m);
	exit(1);
}

static void put(int fd, const void *b, size_t n, off_t off)
{
	if (pwrite(fd, b, n, off) != (ssize_t)n)
		die("pwrite");
}

#define EH_OFF	 4096ull
#define FDE_SIZE 40u
#define CODE_LO	 0x1000ull
/* Eight rows per FDE: the CIE's, then seven (advance 1, CFA offset
 * alternating 24/16) over 16 code bytes. */
#define FDE_ADVANCES 7

/* ELF header, one PT_LOAD (R+X) over code and CFI, and the sections
 * .eh_frame and .shstrtab. */
static void write_file(const char *path, uint32_t fdes, uint32_t seed)
{
	static const uint8_t cie[24] = {
		20, 0,	  0,  0, 0,    0,    0,	   0,	 1,    'z',  'R', 0,
		1,  0x78, 16, 1, 0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01, 0,	  0};
	static const char shstr[] = "\0.eh_frame\0.shstrtab";
	uint64_t size = sizeof(cie) + (uint64_t)fdes * FDE_SIZE;
	uint64_t eh_addr = CODE_LO + (uint64_t)fdes * 16 + 4096;
	uint64_t shoff = (EH_OFF + size + sizeof(shstr) + 7) & ~7ull;
	uint8_t *b = calloc(1, size);
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	Elf64_Shdr sh[3];
	int fd;

	if (!b)
		die("calloc");
	eh_addr &= ~4095ull;
	memcpy(b, cie, sizeof(cie));
	for (uint32_t i = 0; i < fdes; i++) {
		uint8_t *e = b + sizeof(cie) + (size_t)i * FDE_SIZE;
		uint32_t pos = (uint32_t)(e - b);
		uint32_t len = FDE_SIZE - 4, cie_ptr = pos + 4, range = 16;
		uint64_t lo = CODE_LO + (uint64_t)i * 16;
		int32_t pcrel = (int32_t)(lo - (eh_addr + pos + 8));

		memcpy(e, &len, 4);
		memcpy(e + 4, &cie_ptr, 4);
		memcpy(e + 8, &pcrel, 4);
		memcpy(e + 12, &range, 4);
		e[16] = 0; /* augmentation data length */
		for (int k = 0; k < FDE_ADVANCES; k++) {
			e[17 + 3 * k] = 0x41; /* advance_loc 1 */
			e[18 + 3 * k] = 0x0e; /* def_cfa_offset */
			e[19 + 3 * k] = k & 1 ? 16 : 24;
		}
		/* the rest: DW_CFA_nop */
	}
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_shoff = shoff;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(ph);
	eh.e_phnum = 1;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 3;
	eh.e_shstrndx = 2;
	memset(&ph, 0, sizeof(ph));
	ph.p_type = PT_LOAD;
	ph.p_flags = PF_R | PF_X;
	ph.p_filesz = 4096;
	ph.p_memsz = eh_addr + size;
	ph.p_align = 4096;
	memset(sh, 0, sizeof(sh));
	sh[1] = (Elf64_Shdr){.sh_name = 1,
			     .sh_type = SHT_PROGBITS,
			     .sh_flags = SHF_ALLOC,
			     .sh_offset = EH_OFF,
			     .sh_size = size,
			     .sh_addr = eh_addr,
			     .sh_addralign = 8};
	sh[2] = (Elf64_Shdr){.sh_name = 11,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = EH_OFF + size,
			     .sh_size = sizeof(shstr),
			     .sh_addralign = 1};

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd < 0)
		die(path);
	put(fd, &eh, sizeof(eh), 0);
	put(fd, &ph, sizeof(ph), sizeof(eh));
	put(fd, b, size, (off_t)EH_OFF);
	put(fd, shstr, sizeof(shstr), (off_t)(EH_OFF + size));
	put(fd, sh, sizeof(sh), (off_t)shoff);
	/* Distinct content too, not only a distinct inode. */
	put(fd, &seed, sizeof(seed), (off_t)(shoff + sizeof(sh)));
	/* Sparse padding: as big on disk as a real library. */
	if (shoff + sizeof(sh) + sizeof(seed) < (320u << 10) &&
	    ftruncate(fd, (off_t)(320u << 10)))
		die("ftruncate");
	if (close(fd))
		die("close");
	free(b);
}

/* At at (in a reserved range): the files' order by address is chosen. */
static void map_exec(const char *path, char *at)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0 || mmap(at, 4096, PROT_READ | PROT_EXEC,
			   MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED)
		die(path);
	close(fd);
}

/* File i: the big ones, then the tail (FDES/2, FDES/2, FDES/4, ...). */
static void file_path(char *buf, size_t len, const char *dir, long i,
		      long nfiles)
{
	if (i < nfiles)
		snprintf(buf, len, "%s/librows-%04ld.so", dir, i);
	else
		snprintf(buf, len, "%s/librows-tail-%04ld.so", dir, i - nfiles);
}

static long tail_fdes(long fdes, long j)
{
	long k = fdes >> (j / 2 + 1);

	return k > 1 ? k : 1;
}

static __attribute__((noinline)) unsigned long spin(unsigned long x)
{
	for (int i = 0; i < 1000000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

int main(int argc, char **argv)
{
	struct timespec t0, t;
	volatile unsigned long sink = 0;
	char path[4096];
	char *region;
	long nfiles, fdes, ntail;
	double secs;

	if (argc != 5) {
		fprintf(stderr, "usage: rowhog DIR NFILES FDES SECONDS\n");
		return 2;
	}
	nfiles = atol(argv[2]);
	fdes = atol(argv[3]);
	secs = atof(argv[4]);
	if (nfiles < 1 || fdes < 1 || fdes > (1l << 24))
		return 2;
	/* All written before any is mapped, so that a profiler sees them
	 * appear at once, not as they are written. */
	ntail = 0;
	for (long k = fdes / 2; k >= 1; k /= 2)
		ntail += 2;
	ntail += 256;
	for (long i = 0; i < nfiles + ntail; i++) {
		file_path(path, sizeof(path), argv[1], i, nfiles);
		write_file(path,
			   (uint32_t)(i < nfiles ? fdes
						 : tail_fdes(fdes, i - nfiles)),
			   (uint32_t)i);
	}
	/* Big ones first, in time and by address; the tail above. */
	region = mmap(NULL, (size_t)(nfiles + ntail) * 8192, PROT_NONE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (region == MAP_FAILED)
		die("mmap");
	for (long i = 0; i < nfiles + ntail; i++) {
		file_path(path, sizeof(path), argv[1], i, nfiles);
		map_exec(path, region + i * 8192);
	}
	printf("ready\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sink = spin(sink);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) +
			 (double)(t.tv_nsec - t0.tv_nsec) / 1e9 <
		 secs);
	return 0;
}
