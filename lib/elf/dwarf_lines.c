// SPDX-License-Identifier: Apache-2.0
#include "elf/dwarf_lines.h"
#include "elf/dwarf_image.h"
#include "elf/dwarf_unit.h"
#include "util/clock.h"
#include "util/debug_log.h"
#include "util/bsearch_le.h"
#include "util/grow.h"
#include "util/mem_budget.h"
#include "util/str_intern.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DWARF_LINES_MAX_RANGES (1u << 20)
#define DWARF_LINES_MAX_UNITS  (1u << 20)

/* Address ranges of the compile units (not .debug_aranges: clang emits
 * none, and the index must outlive the image): built at open. */
struct cu_range {
	uint64_t lo, hi;
	uint32_t unit;
};

enum unit_state { UNIT_UNREAD, UNIT_READ, UNIT_FAILED };

struct unit_slot {
	Dwarf_Off die;
	uint8_t state;
	struct dwarf_unit u;
};

/*
 * A unit a pc falls in is read once into compact rows (dwarf_unit.h) and
 * looked up there from then on. The image (the DWARF sections, or the
 * whole file) and libdw's state are only needed to read units: they go
 * when no unit was read for a while (dwarf_lines_trim) and are read again
 * from the kept fd when a pc lands in a unit not read yet.
 */
struct dwarf_lines {
	int fd; /* the file, kept to read the image again */
	struct stat st;
	uint8_t *image; /* its DWARF (dwarf_image.h) or the whole file, then
			   DWARF_LINES_GUARD zeros; NULL while trimmed */
	size_t size;	/* charged for the image */
	Elf *elf;
	Dwarf *dw;
	bool broken; /* the file changed or its DWARF cannot be read */
	struct cu_range *ranges;
	size_t nranges, ranges_cap;
	struct unit_slot *units;
	size_t nunits, units_cap;
	struct str_intern strs;
	uint64_t last_read_ns; /* boot clock: the last unit read */
	uint32_t image_reads;  /* after a trim */
	uint64_t *reads_total; /* the owner's count of those, or NULL */
	struct mem_account *acct;
	struct grow_charge charge;
};

static int range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static bool acct_charge(void *acct, size_t bytes)
{
	return mem_account_charge(acct, bytes);
}

static void acct_uncharge(void *acct, size_t bytes)
{
	mem_account_uncharge(acct, bytes);
}

static int add_range(struct dwarf_lines *d, uint64_t lo, uint64_t hi,
		     uint32_t unit)
{
	int err;

	if (hi <= lo)
		return 0;
	err = grow_array(&d->ranges, &d->ranges_cap, d->nranges + 1,
			 sizeof(*d->ranges), 64, DWARF_LINES_MAX_RANGES,
			 &d->charge);
	if (!err)
		d->ranges[d->nranges++] = (struct cu_range){lo, hi, unit};
	return err;
}

static int add_unit(struct dwarf_lines *d, Dwarf_Off die, uint32_t *unit)
{
	int err = grow_array(&d->units, &d->units_cap, d->nunits + 1,
			     sizeof(*d->units), 16, DWARF_LINES_MAX_UNITS,
			     &d->charge);

	if (err)
		return err;
	memset(&d->units[d->nunits], 0, sizeof(d->units[0]));
	d->units[d->nunits].die = die;
	*unit = (uint32_t)d->nunits++;
	return 0;
}

/* Units with their ranges; from .debug_aranges only when no unit names
 * its ranges. Past a bound, the units indexed so far are kept. */
static void index_units(struct dwarf_lines *d)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	Dwarf_Half version;
	Dwarf_Aranges *ar;
	size_t nar;

	while (!dwarf_get_units(d->dw, cu, &cu, &version, &unit_type, &cudie,
				NULL)) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;
		uint32_t unit = UINT32_MAX;

		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (unit == UINT32_MAX &&
			    add_unit(d, dwarf_dieoffset(&cudie), &unit))
				goto done;
			if (add_range(d, lo, hi, unit))
				goto done;
		}
	}
	if (d->nranges || dwarf_getaranges(d->dw, &ar, &nar))
		goto done;
	for (size_t i = 0; i < nar; i++) {
		Dwarf_Arange *a = dwarf_onearange(ar, i);
		Dwarf_Addr start;
		Dwarf_Word len;
		Dwarf_Off die;
		uint32_t unit = UINT32_MAX;

		if (!a || dwarf_getarangeinfo(a, &start, &len, &die) ||
		    start + len < start)
			continue;
		/* a unit's aranges are usually together */
		if (d->nunits && d->units[d->nunits - 1].die == die)
			unit = (uint32_t)d->nunits - 1;
		else if (add_unit(d, die, &unit))
			break;
		if (add_range(d, start, start + len, unit))
			break;
	}
done:
	if (d->nranges)
		qsort(d->ranges, d->nranges, sizeof(*d->ranges), range_cmp);
}

/* The unit holding vaddr, or NULL. */
static struct unit_slot *unit_of(struct dwarf_lines *d, uint64_t vaddr)
{
	size_t lo = bsearch_le_count(d->ranges, d->nranges, sizeof(*d->ranges),
				     offsetof(struct cu_range, lo), vaddr);

	/* Ranges may nest or overlap (hostile): look back a few. */
	for (size_t i = lo, k = 0; i > 0 && k < 8; i--, k++) {
		const struct cu_range *r = &d->ranges[i - 1];

		if (vaddr >= r->lo && vaddr < r->hi)
			return &d->units[r->unit];
	}
	return NULL;
}

static atomic_uint open_files;

/* .debug_info and .debug_line present, all .debug_* within the bound. */
static bool dwarf_usable(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	uint64_t total = 0;
	bool info = false, line = false;

	if (elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) ||
		    !(n = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strncmp(n, ".debug_", 7))
			continue;
		if (sh.sh_type == SHT_NOBITS || (sh.sh_flags & SHF_COMPRESSED))
			return false; /* keep to plain, present sections */
		total += sh.sh_size;
		if (total > DWARF_LINES_MAX_BYTES)
			return false;
		info |= !strcmp(n, ".debug_info");
		line |= !strcmp(n, ".debug_line");
	}
	return info && line;
}

/* The whole file, for what dwarf_image_read does not take apart. */
static int read_whole(int fd, size_t file_size, uint8_t **image)
{
	size_t done = 0;

	*image = calloc(1, file_size + DWARF_LINES_GUARD);
	if (!*image)
		return -ENOMEM;
	while (done < file_size) {
		ssize_t n =
			pread(fd, *image + done, file_size - done, (off_t)done);

		if (n <= 0) {
			free(*image);
			*image = NULL;
			return -EIO;
		}
		done += (size_t)n;
	}
	return 0;
}

/* The file as it was at open: same inode, size and modification time. */
static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void image_drop(struct dwarf_lines *d)
{
	if (d->dw)
		dwarf_end(d->dw);
	if (d->elf)
		elf_end(d->elf);
	if (d->image)
		mem_account_uncharge(d->acct, d->size + DWARF_LINES_GUARD);
	free(d->image);
	d->dw = NULL;
	d->elf = NULL;
	d->image = NULL;
	d->size = 0;
}

/*
 * libdw (0.188) reads strings of .debug_line/.debug_str with strlen and
 * runs past the end of an unterminated section (found by fuzzing). So the
 * image (the DWARF sections libdw reads, or the whole file) is in memory,
 * followed by a zero guard: such a read ends inside our own buffer, at
 * worst with a garbage name, never beyond. 0, or -errno (nothing held).
 */
static int image_load(struct dwarf_lines *d)
{
	size_t file_size = (size_t)d->st.st_size;
	int err;

	/* charged for the whole file first (an image is no larger but for
	 * its alignment), then for what the image holds */
	if (!mem_account_charge(d->acct, file_size + DWARF_LINES_GUARD))
		return -EDQUOT;
	d->size = file_size;
	err = dwarf_image_read(d->fd, file_size, DWARF_LINES_MAX_BYTES,
			       DWARF_LINES_GUARD, &d->image, &d->size);
	if (err == -ENOTSUP) {
		d->size = file_size;
		err = read_whole(d->fd, file_size, &d->image);
	}
	if (err) {
		mem_account_uncharge(d->acct, file_size + DWARF_LINES_GUARD);
		d->image = NULL;
		d->size = 0;
		return err;
	}
	if (d->size < file_size) {
		mem_account_uncharge(d->acct, file_size - d->size);
	} else if (d->size > file_size &&
		   !mem_account_charge(d->acct, d->size - file_size)) {
		d->size = file_size;
		image_drop(d);
		return -EDQUOT;
	}
	d->elf = elf_memory((char *)d->image, d->size);
	if (!d->elf || !dwarf_usable(d->elf) ||
	    !(d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL))) {
		image_drop(d);
		return -ENOEXEC;
	}
	return 0;
}

struct dwarf_lines *dwarf_lines_open(int fd, struct mem_account *acct)
{
	struct dwarf_lines *d;
	struct stat st;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > DWARF_LINES_MAX_FILE)
		return NULL;
	if (atomic_fetch_add(&open_files, 1) >= DWARF_LINES_MAX_FILES)
		goto fail;
	d = calloc(1, sizeof(*d));
	if (!d)
		goto fail;
	d->st = st;
	d->acct = acct;
	d->charge = (struct grow_charge){acct_charge, acct_uncharge, acct};
	d->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (d->fd < 0 || image_load(d)) {
		if (d->fd >= 0)
			close(d->fd);
		free(d);
		goto fail;
	}
	index_units(d);
	d->last_read_ns = boot_ns();
	return d;
fail:
	atomic_fetch_sub(&open_files, 1);
	return NULL;
}

void dwarf_lines_close(struct dwarf_lines *d)
{
	if (!d)
		return;
	image_drop(d);
	close(d->fd);
	for (size_t i = 0; i < d->nunits; i++)
		dwarf_unit_free(&d->units[i].u, &d->charge);
	free(d->units);
	free(d->ranges);
	str_intern_free(&d->strs, &d->charge);
	mem_account_uncharge(d->acct,
			     d->units_cap * sizeof(*d->units) +
				     d->ranges_cap * sizeof(*d->ranges));
	free(d);
	atomic_fetch_sub(&open_files, 1);
}

/* A file whose units keep being needed now and then (a service's rare
 * paths) waits longer each time its image had to be read again, up to 6
 * times as long: a read (3-8 ms for libpython's 13 MB) at most once a
 * minute or so, while the image stays out most of the time. */
static uint64_t image_idle_ns(const struct dwarf_lines *d)
{
	uint64_t t = DWARF_LINES_IMAGE_IDLE_NS
		     << (d->image_reads < 3 ? d->image_reads : 3);

	return t < 6 * DWARF_LINES_IMAGE_IDLE_NS
		       ? t
		       : 6 * DWARF_LINES_IMAGE_IDLE_NS;
}

void dwarf_lines_trim(struct dwarf_lines *d, uint64_t now_ns)
{
	size_t read = 0;

	if (!d || !d->image || now_ns <= d->last_read_ns ||
	    now_ns - d->last_read_ns < image_idle_ns(d))
		return;
	for (size_t i = 0; i < d->nunits; i++)
		read += d->units[i].state == UNIT_READ;
	debug_log("DWARF image of %zu bytes freed: %zu of %zu units read; "
		  "the file's account %zu bytes with it",
		  d->size, read, d->nunits,
		  d->acct ? (size_t)atomic_load(&d->acct->bytes) : 0);
	image_drop(d);
}

bool dwarf_lines_trimmed(const struct dwarf_lines *d)
{
	return !d->image;
}

void dwarf_lines_count_image_reads(struct dwarf_lines *d, uint64_t *total)
{
	if (d)
		d->reads_total = total;
}

/* Reads u's rows, with the image read again first if it was trimmed. */
static void read_unit(struct dwarf_lines *d, struct unit_slot *u)
{
	struct stat now;
	Dwarf_Die cudie;

	if (!d->image) {
		int err;

		if (d->broken || fstat(d->fd, &now) ||
		    !same_file(&now, &d->st)) {
			/* changed since: no unit is read from it again */
			d->broken = true;
			return;
		}
		err = image_load(d);
		if (err) {
			/* over budget now: the unit is tried again later */
			d->broken = err != -EDQUOT;
			return;
		}
		d->image_reads++;
		if (d->reads_total)
			(*d->reads_total)++;
		debug_log("DWARF image of %zu bytes read again (%u times)",
			  d->size, d->image_reads);
	}
	d->last_read_ns = boot_ns();
	u->state = UNIT_FAILED;
	if (!dwarf_offdie(d->dw, u->die, &cudie))
		return;
	if (dwarf_unit_build(&u->u, &cudie, &d->strs, &d->charge)) {
		dwarf_unit_free(&u->u, &d->charge);
		return;
	}
	u->state = UNIT_READ;
}

/* Called from one thread at a time per file (the symbolizer's). */
int dwarf_lines_lookup(struct dwarf_lines *d, uint64_t vaddr,
		       struct dwarf_where *out)
{
	struct unit_slot *u = unit_of(d, vaddr);

	memset(out, 0, sizeof(*out));
	if (!u)
		return -ENOENT;
	if (u->state == UNIT_UNREAD)
		read_unit(d, u);
	if (u->state != UNIT_READ)
		return u->state == UNIT_FAILED ? -ENOENT : -EIO;
	return dwarf_unit_lookup(&u->u, &d->strs, vaddr, out);
}
