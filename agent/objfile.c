/*
 * objfile.c
 *		The per-file cache shared by all processes; see objfile.h.
 *
 * Files are mapped (ELF_C_READ_MMAP), so what the agent reads of them is
 * the kernel's page cache: a symbol table is read where it lies, and CFI
 * lookups touch a few pages of .eh_frame_hdr and .eh_frame.  Those pages
 * count in the agent's resident memory while mapped, so objfile_end_flush
 * drops them (MADV_DONTNEED: they are read again from the page cache when
 * needed), and what stays resident is the agent's own index of each file:
 * its sorted function symbols and PLT stubs, and libdw's parsed CFI.
 *
 * This file opens, maps, charges and flushes files; objfile_cfi.c reads
 * their CFI and objfile_symbols.c their symbol tables.
 */
#include "objfile_internal.h"

#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dwarf/dwarf_lines.h"
#include "ids/ids.h"
#include "util.h"

/*
 * Finding an address's compilation unit, libdw reads the header of every
 * unit before it: a few megabytes of a large file's .debug_info in one
 * call, which no later release can take back from the agent's peak.
 * Larger DWARF is not read; those files are named from their symbol
 * table, like those whose DWARF is compressed.
 */
#define DWARF_MAX_BYTES (8 * 1024 * 1024)

/* How long a file that could not be opened is left alone. */
#define OPEN_RETRY_NS 1000000000ull

static U64Map files;			/* hash(dev, ino) -> ObjFile */
static size_t total_bytes;
static uint64_t flush_number;

static uint64_t
file_key(uint64_t dev, uint64_t ino)
{
	uint64_t	k[2] = {dev, ino};

	return parca_hash64(k, sizeof(k));
}

void
objfile_charge(ObjFile *f, size_t bytes)
{
	f->bytes += bytes;
	total_bytes += bytes;
}

static Elf *
map_elf(int fd)
{
	Elf		   *elf;

	/* libelf's version handshake (libbpf does it too, but not in --symbolize). */
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);

	/* Mapped: the descriptor is not needed afterwards. */
	if (elf)
		elf_cntl(elf, ELF_C_FDDONE);
	close(fd);
	if (elf && elf_kind(elf) != ELF_K_ELF)
	{
		elf_end(elf);
		elf = NULL;
	}
	return elf;
}

/*
 * The file: through the process, or the same file here if it exited; buf
 * (OPEN_PATH_MAX bytes) gets the path that opened it.
 */
#define OPEN_PATH_MAX 4200
static int
open_file(uint64_t dev, uint64_t ino, uint32_t pid, const char *path,
		  uint64_t start, uint64_t end, char *buf)
{
	struct stat st;
	int			fd;

	/* Through the process's root, so that files in containers open too. */
	snprintf(buf, OPEN_PATH_MAX, "/proc/%u/root%s", pid, path);
	fd = open(buf, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(buf, OPEN_PATH_MAX, "/proc/%u/map_files/%llx-%llx", pid,
			 (unsigned long long) start, (unsigned long long) end);
	fd = open(buf, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(buf, OPEN_PATH_MAX, "%s", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == ino &&
		major(st.st_dev) == (dev >> 32) && minor(st.st_dev) == (dev & 0xffffffff))
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

static char *
read_build_id(Elf *elf)
{
	const void *bits = NULL;
	ssize_t		n = elf ? dwelf_elf_gnu_build_id(elf, &bits) : 0;
	char	   *hex = xmalloc(n > 0 ? 2 * n + 1 : 1);

	hex[0] = '\0';
	for (ssize_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", ((const unsigned char *) bits)[i]);
	return hex;
}

static void
read_segments(ObjFile *f)
{
	size_t		n;

	if (elf_getphdrnum(f->elf, &n) != 0)
		return;
	f->segs = xcalloc(n ? n : 1, sizeof(Segment));
	for (size_t i = 0; i < n; i++)
	{
		GElf_Phdr	ph;

		if (gelf_getphdr(f->elf, (int) i, &ph) && ph.p_type == PT_LOAD)
		{
			f->segs[f->nsegs].offset = ph.p_offset;
			f->segs[f->nsegs].filesz = ph.p_filesz;
			f->segs[f->nsegs].vaddr = ph.p_vaddr;
			f->nsegs++;
		}
	}
	objfile_charge(f, n * sizeof(Segment));
}

ObjFile *
objfile_get(uint64_t dev, uint64_t ino, uint32_t pid, const char *path,
			uint64_t start, uint64_t end)
{
	uint64_t	key = file_key(dev, ino);
	ObjFile    *f = u64map_get(&files, key);
	char		opened_as[OPEN_PATH_MAX];
	int			fd;

	if (f == NULL)
	{
		f = xcalloc(1, sizeof(ObjFile));
		f->dev = dev;
		f->ino = ino;
		f->dwarf_state = -1;
		f->go_state = -1;
		f->gopclntab_state = -1;
		objfile_charge(f, sizeof(ObjFile));
		u64map_put(&files, key, f);
	}
	f->last_used = flush_number;
	if (f->elf != NULL ||
		(f->failed_ns != 0 && now_monotonic_ns() - f->failed_ns < OPEN_RETRY_NS))
		return f;
	fd = open_file(dev, ino, pid, path, start, end, opened_as);
	f->elf = fd >= 0 ? map_elf(fd) : NULL;
	if (f->elf == NULL)
	{
		f->failed_ns = now_monotonic_ns();
		if (f->build_id == NULL)
			f->build_id = xstrdup("");
		return f;
	}
	free(f->build_id);
	f->build_id = read_build_id(f->elf);
	objfile_charge(f, strlen(f->build_id) + 1);
	free(f->opened_as);
	f->opened_as = xstrdup(opened_as);
	objfile_charge(f, strlen(opened_as) + 1);
	read_segments(f);
	return f;
}

bool
objfile_is_open(const ObjFile *f)
{
	return f->elf != NULL;
}

const char *
objfile_build_id(const ObjFile *f)
{
	return f->build_id;
}

bool
objfile_vaddr(const ObjFile *f, uint64_t offset, uint64_t *vaddr)
{
	for (int i = 0; i < f->nsegs; i++)
	{
		const Segment *s = &f->segs[i];

		if (offset >= s->offset && offset < s->offset + s->filesz)
		{
			*vaddr = offset - s->offset + s->vaddr;
			return true;
		}
	}
	return false;
}

/* The separate debug file by build id, where Debian puts it; -1 if none. */
static int
open_debug_file(const ObjFile *f)
{
	char		path[256];

	if (strlen(f->build_id) <= 2)
		return -1;
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug",
			 f->build_id, f->build_id + 2);
	return open(path, O_RDONLY | O_CLOEXEC);
}

Elf *
objfile_debug_elf(ObjFile *f)
{
	if (!f->debug_opened)
	{
		int			fd = open_debug_file(f);

		f->debug_opened = true;
		if (fd >= 0)
			f->debug_elf = map_elf(fd);
	}
	return f->debug_elf;
}

/* Drop the whole pages of [from, from + len) from the agent's resident memory. */
void
objfile_drop_range(const char *from, size_t len)
{
	static uintptr_t page;

	if (page == 0)
		page = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t	start;
	uintptr_t	end;

	start = ((uintptr_t) from + page - 1) & ~(page - 1);
	end = ((uintptr_t) from + len) & ~(page - 1);
	/* The mapping is private and read-only: its pages come back from the page cache. */
	if (end > start)
		madvise((void *) start, end - start, MADV_DONTNEED);
}

void
objfile_release_section(Elf *elf, const GElf_Shdr *shdr)
{
	size_t		size;
	char	   *base = elf_rawfile(elf, &size);

	if (base != NULL && shdr->sh_offset + shdr->sh_size <= size)
		objfile_drop_range(base + shdr->sh_offset, shdr->sh_size);
}

const void *
objfile_bytes(ObjFile *f, uint64_t vaddr, size_t len)
{
	size_t		size;
	const unsigned char *base;

	if (f->elf == NULL || (base = (const unsigned char *) elf_rawfile(f->elf, &size)) == NULL)
		return NULL;
	for (int i = 0; i < f->nsegs; i++)
	{
		const Segment *s = &f->segs[i];

		if (vaddr >= s->vaddr && vaddr + len <= s->vaddr + s->filesz &&
			s->offset + (vaddr - s->vaddr) + len <= size)
			return base + s->offset + (vaddr - s->vaddr);
	}
	return NULL;
}

/*
 * 1 if the file has .debug_info that is cheap to read (uncompressed, at
 * most DWARF_MAX_BYTES), 0 if it has other DWARF, -1 if none.
 */
static int
debug_info_state(Elf *elf)
{
	GElf_Shdr	shdr;

	if (parca_elf_section(elf, ".zdebug_info", &shdr))
		return 0;
	if (parca_elf_section(elf, ".debug_info", &shdr) == NULL || shdr.sh_type == SHT_NOBITS)
		return -1;
	return (shdr.sh_flags & SHF_COMPRESSED) == 0 && shdr.sh_size <= DWARF_MAX_BYTES;
}

int
objfile_open_debuginfo(ObjFile *f)
{
	GElf_Shdr	shdr;
	int			fd;

	if (f->elf == NULL || f->build_id[0] == '\0')
		return -1;
	if ((fd = open_debug_file(f)) >= 0)
		return fd;
	if (objfile_find_symtab(f->elf, SHT_SYMTAB, &shdr) == NULL &&
		((parca_elf_section(f->elf, ".debug_info", &shdr) == NULL &&
		  parca_elf_section(f->elf, ".zdebug_info", &shdr) == NULL) || shdr.sh_type == SHT_NOBITS))
		return -1;
	return open(f->opened_as, O_RDONLY | O_CLOEXEC);
}

Dwarf *
objfile_dwarf(ObjFile *f)
{
	if (f->elf == NULL)
		return NULL;
	if (f->dwarf_state < 0)
	{
		int			state = debug_info_state(f->elf);

		f->dwarf_elf = f->elf;
		if (state < 0)
		{
			state = debug_info_state(objfile_debug_elf(f));
			f->dwarf_elf = f->debug_elf;
		}
		f->dwarf_state = state == 1;
	}
	if (f->dwarf_state == 1 && f->dwarf == NULL)
		f->dwarf = dwarf_begin_elf(f->dwarf_elf, DWARF_C_READ, NULL);
	return f->dwarf;
}

/* Drop the file's pages from the agent's resident memory. */
static void
release_pages(Elf *elf)
{
	size_t		size;
	char	   *base = elf ? elf_rawfile(elf, &size) : NULL;

	if (base != NULL)
		objfile_drop_range(base, size);
}

void
objfile_drop_pages(void)
{
	size_t		pos = 0;
	void	   *v;

	while (u64map_next(&files, &pos, NULL, &v))
	{
		release_pages(((ObjFile *) v)->elf);
		release_pages(((ObjFile *) v)->debug_elf);
	}
}

void
objfile_release(ObjFile *f)
{
	if (f->dwarf)
	{
		dwarf_end(f->dwarf);
		f->dwarf = NULL;
	}
	release_pages(f->elf);
	release_pages(f->debug_elf);
}

static void
close_file(ObjFile *f)
{
	if (f->dwarf)
		dwarf_end(f->dwarf);
	if (f->frame_dwarf)
		dwarf_end(f->frame_dwarf);
	else if (f->cfi)
		dwarf_cfi_end(f->cfi);
	if (f->frame_elf)
		elf_end(f->frame_elf);
	if (f->debug_elf)
		elf_end(f->debug_elf);
	if (f->elf)
		elf_end(f->elf);
	total_bytes -= f->bytes;
	free(f->frame_image);
	u64map_free(&f->fdes_used);
	free(f->build_id);
	free(f->opened_as);
	free(f->segs);
	free(f->syms);
	free(f->plt);
	free(f->plt_names);
	free(f);
}

static int
oldest_first(const void *a, const void *b)
{
	const ObjFile *x = *(ObjFile * const *) a;
	const ObjFile *y = *(ObjFile * const *) b;

	return x->last_used < y->last_used ? -1 : x->last_used > y->last_used;
}

void
objfile_end_flush(size_t max_bytes)
{
	size_t		pos = 0;
	void	   *v;
	ObjFile   **all = xcalloc(files.count, sizeof(ObjFile *));
	size_t		n = 0;

	while (u64map_next(&files, &pos, NULL, &v))
	{
		objfile_release(v);
		all[n++] = v;
	}
	if (total_bytes > max_bytes)
	{
		qsort(all, n, sizeof(ObjFile *), oldest_first);
		for (size_t i = 0; i < n && total_bytes > max_bytes; i++)
		{
			u64map_remove(&files, file_key(all[i]->dev, all[i]->ino));
			close_file(all[i]);
		}
	}
	free(all);
	flush_number++;
	/* Give what libdw and libelf freed back to the system. */
	malloc_trim(0);
}

size_t
objfile_cache_bytes(void)
{
	return total_bytes;
}
