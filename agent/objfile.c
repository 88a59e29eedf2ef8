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
 */
#include "objfile.h"

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
 * Tables read once (symbols, relocations) are given back as they are read,
 * every this many entries (a megabyte or two), so that a large program's
 * (node's symbol table is 2.6 MB, a browser's relocations 26 MB) never
 * lies in the agent's resident memory whole.
 */
#define PAGES_READ_AT_ONCE 65536

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

/*
 * libdw keeps each FDE it has parsed (one per function unwound through),
 * about 80 bytes each (measured with libdw 0.188 on cc1's 27,000
 * functions); the cache counts the FDEs each file has used, and charges
 * them with its own record of them.
 */
#define CFI_BYTES_PER_FDE (80 + 2 * sizeof(uint64_t))

typedef struct Segment
{
	uint64_t	offset;
	uint64_t	filesz;
	uint64_t	vaddr;
} Segment;

/*
 * A function symbol (name: an offset into the symbol table's strings), or
 * a PLT stub (name: an offset into plt_names, "target@plt").
 */
typedef struct Symbol
{
	uint64_t	addr;
	uint32_t	size;
	uint32_t	name;
} Symbol;

struct ObjFile
{
	uint64_t	dev;
	uint64_t	ino;
	char	   *build_id;		/* hex, "" if none */
	char	   *opened_as;		/* the path it was opened by */
	Elf		   *elf;			/* mapped; NULL: could not be opened */
	uint64_t	failed_ns;		/* when opening failed */
	Segment    *segs;
	int			nsegs;

	bool		cfi_loaded;
	Dwarf_CFI  *cfi;			/* .eh_frame, else .debug_frame */
	Dwarf	   *frame_dwarf;	/* owns cfi when it is .debug_frame */
	Elf		   *frame_elf;		/* the in-memory ELF frame_dwarf reads */
	char	   *frame_image;	/* its bytes */
	U64Map		fdes_used;		/* hash(FDE start) -> (void *) 1 */

	bool		debug_opened;
	Elf		   *debug_elf;		/* the separate debug file, by build id */

	bool		syms_loaded;
	Symbol	   *syms;			/* sorted by address */
	int			nsyms;
	Elf		   *sym_elf;		/* the file holding the symbol table */
	size_t		sym_strndx;		/* its string table's section */
	Symbol	   *plt;			/* PLT stubs, sorted by address */
	int			nplt;
	char	   *plt_names;
	uint64_t	plt_low;		/* the PLT sections lie in [plt_low, plt_high) */
	uint64_t	plt_high;
	bool		plt_loaded;

	int			go_state;		/* -1: not checked; 0: not Go; 1: go_* known */
	int64_t		go_tls_g;
	uint64_t	go_m_curg;

	int			gopclntab_state;	/* -1: not checked; 0: none; 1: gopclntab */
	GoPclntab	gopclntab;

	int			dwarf_state;	/* -1: not checked; 0: none or compressed; 1: cheap */
	Elf		   *dwarf_elf;		/* where the cheap DWARF is */
	Dwarf	   *dwarf;			/* open during the current flush */

	size_t		bytes;			/* charged to the cache */
	uint64_t	last_used;		/* flush number */
};

static U64Map files;			/* hash(dev, ino) -> ObjFile */
static size_t total_bytes;
static uint64_t flush_number;

static uint64_t
file_key(uint64_t dev, uint64_t ino)
{
	uint64_t	k[2] = {dev, ino};

	return parca_hash64(k, sizeof(k));
}

static void
charge(ObjFile *f, size_t bytes)
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
	charge(f, n * sizeof(Segment));
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
		charge(f, sizeof(ObjFile));
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
	charge(f, strlen(f->build_id) + 1);
	free(f->opened_as);
	f->opened_as = xstrdup(opened_as);
	charge(f, strlen(opened_as) + 1);
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

/*
 * CFI from .debug_frame, for files without .eh_frame (Go binaries).  libdw
 * reads .debug_frame only as part of a Dwarf, and opening one on the file
 * would decompress every debug section (megabytes for a Go program): it is
 * opened on a small ELF image in memory holding the decompressed
 * .debug_frame alone.
 */
static void
load_debug_frame(ObjFile *f)
{
	static const char names[] = "\0.shstrtab\0.debug_frame";
	GElf_Shdr	shdr;
	Elf_Scn    *scn = parca_elf_section(f->elf, ".debug_frame", &shdr);
	Elf_Data   *data = NULL;
	GElf_Ehdr	orig;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	size_t		size;

	if (scn == NULL || gelf_getehdr(f->elf, &orig) == NULL ||
		orig.e_ident[EI_CLASS] != ELFCLASS64)
		return;
	if ((shdr.sh_flags & SHF_COMPRESSED) == 0 || elf_compress(scn, 0, 0) >= 0)
		data = elf_getdata(scn, NULL);
	if (data == NULL || data->d_size == 0)
		return;

	/* Header, names, .debug_frame, then section headers (null, names, frame). */
	size = sizeof(Elf64_Ehdr) + sizeof(names) + data->d_size;
	size = (size + 7) & ~(size_t) 7;
	f->frame_image = xcalloc(1, size + 3 * sizeof(Elf64_Shdr));
	charge(f, size + 3 * sizeof(Elf64_Shdr));
	eh = (Elf64_Ehdr *) f->frame_image;
	memcpy(eh->e_ident, orig.e_ident, EI_NIDENT);
	eh->e_type = orig.e_type;
	eh->e_machine = orig.e_machine;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_shoff = size;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 3;
	eh->e_shstrndx = 1;
	memcpy(f->frame_image + sizeof(Elf64_Ehdr), names, sizeof(names));
	memcpy(f->frame_image + sizeof(Elf64_Ehdr) + sizeof(names), data->d_buf, data->d_size);
	sh = (Elf64_Shdr *) (f->frame_image + size);
	sh[1].sh_name = 1;
	sh[1].sh_type = SHT_STRTAB;
	sh[1].sh_offset = sizeof(Elf64_Ehdr);
	sh[1].sh_size = sizeof(names);
	sh[1].sh_addralign = 1;
	sh[2].sh_name = 11;
	sh[2].sh_type = SHT_PROGBITS;
	sh[2].sh_offset = sizeof(Elf64_Ehdr) + sizeof(names);
	sh[2].sh_size = data->d_size;
	sh[2].sh_addralign = 1;
	f->frame_elf = elf_memory(f->frame_image, size + 3 * sizeof(Elf64_Shdr));
	if (f->frame_elf)
		f->frame_dwarf = dwarf_begin_elf(f->frame_elf, DWARF_C_READ, NULL);
	if (f->frame_dwarf)
		f->cfi = dwarf_getcfi(f->frame_dwarf);
}

/*
 * libdw (0.188) takes .eh_frame_hdr's search table only from a section
 * before .eh_frame; files linked by lld (libLLVM, which PostgreSQL's JIT
 * loads) have it after, and libdw then finds an address's FDE by parsing
 * and keeping every FDE before it: all 95,000 of libLLVM-14's, 6 MB of
 * heap and 5 MB of file pages read for one lookup.  Swapping the two
 * section headers in libelf's copy of them (the file is untouched; both
 * are found by name) gives libdw the table.
 */
static void
put_eh_frame_hdr_first(Elf *elf)
{
	GElf_Shdr	frame_shdr;
	GElf_Shdr	hdr_shdr;
	Elf_Scn    *frame = parca_elf_section(elf, ".eh_frame", &frame_shdr);
	Elf_Scn    *hdr = parca_elf_section(elf, ".eh_frame_hdr", &hdr_shdr);

	if (frame != NULL && hdr != NULL && elf_ndxscn(frame) < elf_ndxscn(hdr) &&
		!(gelf_update_shdr(frame, &hdr_shdr) && gelf_update_shdr(hdr, &frame_shdr)))
		gelf_update_shdr(frame, &frame_shdr);
}

Dwarf_CFI *
objfile_cfi(ObjFile *f)
{
	if (!f->cfi_loaded && f->elf != NULL)
	{
		f->cfi_loaded = true;
		put_eh_frame_hdr_first(f->elf);
		f->cfi = dwarf_getcfi_elf(f->elf);
		if (f->cfi == NULL)
			load_debug_frame(f);
	}
	return f->cfi;
}

void
objfile_cfi_used(ObjFile *f, uint64_t fde_start)
{
	uint64_t	key = parca_hash64(&fde_start, sizeof(fde_start));

	if (u64map_get(&f->fdes_used, key) == NULL)
	{
		u64map_put(&f->fdes_used, key, (void *) 1);
		charge(f, CFI_BYTES_PER_FDE);
	}
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

static Elf *
debug_file(ObjFile *f)
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

/* The first section of this type with entries, or NULL. */
static Elf_Scn *
find_symtab(Elf *elf, GElf_Word type, GElf_Shdr *shdr)
{
	Elf_Scn    *scn = NULL;

	while (elf && (scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, shdr) != NULL && shdr->sh_type == type &&
			shdr->sh_entsize > 0 && shdr->sh_size / shdr->sh_entsize > 1)
			return scn;
	return NULL;
}

/*
 * While sorting, a symbol's binding preference (global, weak, local: lower
 * is better) rides in the top two bits of its size.
 */
#define RANK_SHIFT 30
#define SIZE_MASK ((1u << RANK_SHIFT) - 1)

/* Bits of an address sorted per pass of sort_by_address. */
#define RADIX_BITS 11
#define RADIX_MASK ((1u << RADIX_BITS) - 1)

/*
 * Sort symbols by address, stably: a least significant digit radix sort
 * on the address's distance from the lowest, a pass per 11 bits of the
 * span (two or three for a program's text).  qsort's merge sort through a
 * comparison function took 8 to 13 % of the agent's time on a loaded
 * machine, sorting the symbol tables of the programs it met (node's
 * 78,000 function symbols, libjvm's 44,000); this takes a few passes over
 * the table and a copy of it for the time of the sort.
 */
static void
sort_by_address(Symbol *syms, size_t n)
{
	size_t		count[1 << RADIX_BITS];
	uint64_t	low = UINT64_MAX;
	uint64_t	span = 0;
	Symbol	   *tmp;
	Symbol	   *from = syms;
	Symbol	   *to;

	if (n < 2)
		return;
	for (size_t i = 0; i < n; i++)
		low = syms[i].addr < low ? syms[i].addr : low;
	for (size_t i = 0; i < n; i++)
		span |= syms[i].addr - low;
	to = tmp = xmalloc(n * sizeof(Symbol));
	for (int shift = 0; shift < 64 && (span >> shift) != 0; shift += RADIX_BITS)
	{
		size_t		at = 0;
		Symbol	   *swap;

		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[((from[i].addr - low) >> shift) & RADIX_MASK]++;
		for (size_t d = 0; d <= RADIX_MASK; d++)
		{
			size_t		c = count[d];

			count[d] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			to[count[((from[i].addr - low) >> shift) & RADIX_MASK]++] = from[i];
		swap = from;
		from = to;
		to = swap;
	}
	if (from != syms)
		memcpy(syms, from, n * sizeof(Symbol));
	free(tmp);
}

/* Drop the whole pages of [from, from + len) from the agent's resident memory. */
static void
drop_pages(const char *from, size_t len)
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

static void
release_section(Elf *elf, const GElf_Shdr *shdr)
{
	size_t		size;
	char	   *base = elf_rawfile(elf, &size);

	if (base != NULL && shdr->sh_offset + shdr->sh_size <= size)
		drop_pages(base + shdr->sh_offset, shdr->sh_size);
}

/*
 * The function symbols of the file's .symtab, else its debug file's, else
 * its .dynsym, sorted, one per address (the preferred binding).  The table
 * is read once, so its pages are given back at once (a large program's is
 * megabytes).
 */
static void
load_function_symbols(ObjFile *f)
{
	GElf_Shdr	shdr;
	Elf_Scn    *scn = find_symtab(f->elf, SHT_SYMTAB, &shdr);
	Elf		   *elf = f->elf;
	Elf_Data   *data;
	size_t		n;
	int			kept = 0;

	if (scn == NULL && (scn = find_symtab(debug_file(f), SHT_SYMTAB, &shdr)) != NULL)
		elf = f->debug_elf;
	if (scn == NULL)
		scn = find_symtab(f->elf, SHT_DYNSYM, &shdr);
	if (scn == NULL || (data = elf_getdata(scn, NULL)) == NULL)
		return;
	f->sym_elf = elf;
	f->sym_strndx = shdr.sh_link;
	n = shdr.sh_size / shdr.sh_entsize;
	f->syms = xcalloc(n, sizeof(Symbol));
	for (size_t i = 1; i < n; i++)
	{
		GElf_Sym	sym;
		int			type;
		int			bind;

		if (gelf_getsym(data, (int) i, &sym) == NULL)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		bind = GELF_ST_BIND(sym.st_info);
		if (sym.st_name == 0 || sym.st_value == 0 || sym.st_shndx == SHN_UNDEF ||
			(type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		f->syms[kept].addr = sym.st_value;
		f->syms[kept].size = (sym.st_size > SIZE_MASK ? SIZE_MASK : (uint32_t) sym.st_size) |
			((uint32_t) (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2) << RANK_SHIFT);
		f->syms[kept].name = sym.st_name;
		kept++;
		if (i % PAGES_READ_AT_ONCE == PAGES_READ_AT_ONCE - 1)
			drop_pages((const char *) data->d_buf + (i + 1 - PAGES_READ_AT_ONCE) * shdr.sh_entsize,
					   PAGES_READ_AT_ONCE * shdr.sh_entsize);
	}
	release_section(elf, &shdr);
	sort_by_address(f->syms, kept);
	/* one per address: the best binding, the first in the table among equals */
	for (int i = 0; i < kept; i++)
	{
		Symbol	   *last = f->nsyms ? &f->syms[f->nsyms - 1] : NULL;

		if (last == NULL || last->addr != f->syms[i].addr)
			f->syms[f->nsyms++] = f->syms[i];
		else if ((f->syms[i].size >> RANK_SHIFT) < (last->size >> RANK_SHIFT))
			*last = f->syms[i];
	}
	for (int i = 0; i < f->nsyms; i++)
		f->syms[i].size &= SIZE_MASK;
	f->syms = xrealloc(f->syms, (f->nsyms ? f->nsyms : 1) * sizeof(Symbol));
	charge(f, (f->nsyms ? f->nsyms : 1) * sizeof(Symbol));
}

/*
 * The GOT slots that the dynamic linker fills with a symbol's address
 * (JUMP_SLOT and GLOB_DAT relocations), and the .rela.plt relocations in
 * order (a lazy PLT entry pushes its index): slot or index -> symbol.
 */
typedef struct PltRelocs
{
	U64Map		by_slot;		/* hash(GOT address) -> symbol index + 1 */
	uint32_t   *by_index;		/* .rela.plt's symbol indexes */
	size_t		nindex;
	Elf_Data   *dynsym;
	size_t		dynstr;			/* string section of dynsym */
} PltRelocs;

static void
read_plt_relocs(Elf *elf, PltRelocs *r)
{
	size_t		shstrndx;
	Elf_Scn    *scn = NULL;
	GElf_Shdr	plt_got;
	bool		want_dyn = parca_elf_section(elf, ".plt.got", &plt_got) != NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return;
	while ((scn = elf_nextscn(elf, scn)) != NULL)
	{
		GElf_Shdr	shdr;
		GElf_Shdr	symshdr;
		Elf_Scn    *symscn;
		Elf_Data   *data;
		const char *name;
		bool		is_plt;

		if (gelf_getshdr(scn, &shdr) == NULL || shdr.sh_type != SHT_RELA ||
			shdr.sh_entsize == 0 ||
			(name = elf_strptr(elf, shstrndx, shdr.sh_name)) == NULL)
			continue;
		is_plt = strcmp(name, ".rela.plt") == 0;

		/*
		 * .rela.dyn holds the GLOB_DAT slots that .plt.got jumps through,
		 * among every other dynamic relocation (tens of megabytes of them
		 * in a large PIE such as a browser): read only when there is a
		 * .plt.got, and its pages given back as it is read.
		 */
		if ((!is_plt && !want_dyn) || (data = elf_getdata(scn, NULL)) == NULL ||
			(symscn = elf_getscn(elf, shdr.sh_link)) == NULL ||
			gelf_getshdr(symscn, &symshdr) == NULL || symshdr.sh_type != SHT_DYNSYM)
			continue;
		r->dynsym = elf_getdata(symscn, NULL);
		r->dynstr = symshdr.sh_link;
		if (is_plt)
		{
			r->nindex = shdr.sh_size / shdr.sh_entsize;
			r->by_index = xcalloc(r->nindex ? r->nindex : 1, sizeof(uint32_t));
		}
		for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; i++)
		{
			GElf_Rela	rela;
			uint32_t	type;
			uint32_t	sym;

			if (gelf_getrela(data, (int) i, &rela) == NULL)
				continue;
			type = GELF_R_TYPE(rela.r_info);
			sym = GELF_R_SYM(rela.r_info);
			if (is_plt)
				r->by_index[i] = sym;
			if (sym != 0 && (type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT))
				u64map_put(&r->by_slot, parca_hash64(&rela.r_offset, sizeof(rela.r_offset)),
						   (void *) (uintptr_t) (sym + 1));
			if (i % PAGES_READ_AT_ONCE == PAGES_READ_AT_ONCE - 1)
				drop_pages((const char *) data->d_buf + (i + 1 - PAGES_READ_AT_ONCE) * shdr.sh_entsize,
						   PAGES_READ_AT_ONCE * shdr.sh_entsize);
		}
		release_section(elf, &shdr);
	}
}

/*
 * The symbol a PLT entry jumps to.  An entry jumps through its GOT slot
 * (jmp *slot(%rip), ff 25 disp32, after an endbr64 and a bnd prefix in
 * IBT builds); a lazy entry of an IBT build (.plt beside .plt.sec) only
 * pushes its relocation's index (68 imm32) and jumps to PLT0.
 */
static uint32_t
plt_entry_symbol(const unsigned char *code, size_t len, uint64_t vaddr, const PltRelocs *r)
{
	for (size_t i = 0; i + 6 <= len; i++)
	{
		int32_t		disp;
		uint64_t	slot;
		void	   *v;

		if (code[i] == 0xff && code[i + 1] == 0x25)
		{
			memcpy(&disp, code + i + 2, 4);
			slot = vaddr + i + 6 + (int64_t) disp;
			v = u64map_get(&r->by_slot, parca_hash64(&slot, sizeof(slot)));
			return v ? (uint32_t) ((uintptr_t) v - 1) : 0;
		}
	}
	for (size_t i = 0; i + 5 <= len && i <= 4; i += 4)
	{
		uint32_t	index;

		if (code[i] != 0x68)
			continue;
		memcpy(&index, code + i + 1, 4);
		return index < r->nindex ? r->by_index[index] : 0;
	}
	return 0;
}

static const char *const plt_sections[] = {".plt", ".plt.sec", ".plt.got"};

/* Where the PLT sections lie, so that their stubs are read only when needed. */
static void
find_plt(ObjFile *f)
{
	for (size_t s = 0; s < sizeof(plt_sections) / sizeof(plt_sections[0]); s++)
	{
		GElf_Shdr	shdr;

		if (parca_elf_section(f->elf, plt_sections[s], &shdr) == NULL || shdr.sh_size == 0)
			continue;
		if (f->plt_high == 0 || shdr.sh_addr < f->plt_low)
			f->plt_low = shdr.sh_addr;
		if (shdr.sh_addr + shdr.sh_size > f->plt_high)
			f->plt_high = shdr.sh_addr + shdr.sh_size;
	}
}

/*
 * The PLT stubs of .plt, .plt.sec and .plt.got, each named target@plt.
 * Read at the first address in them: naming a stub reads the PLT
 * relocations, and with .plt.got all of .rela.dyn (libjvm's 100,000, 2.4
 * MB, for its one .plt.got stub: a tenth of the agent's time in
 * bench/jit.sh, for stubs no sample was in).
 */
static void
load_plt(ObjFile *f)
{
	PltRelocs	r = {{0}};
	Buf			names = {0};
	int			cap = 0;

	read_plt_relocs(f->elf, &r);
	for (size_t s = 0; s < sizeof(plt_sections) / sizeof(plt_sections[0]) && r.dynsym; s++)
	{
		GElf_Shdr	shdr;
		Elf_Scn    *scn = parca_elf_section(f->elf, plt_sections[s], &shdr);
		Elf_Data   *data = scn ? elf_getdata(scn, NULL) : NULL;
		size_t		entsize = shdr.sh_entsize >= 8 ? shdr.sh_entsize : 16;

		if (data == NULL || data->d_buf == NULL)
			continue;
		for (size_t off = 0; off + entsize <= data->d_size; off += entsize)
		{
			uint32_t	sym = plt_entry_symbol((const unsigned char *) data->d_buf + off,
											   entsize, shdr.sh_addr + off, &r);
			GElf_Sym	gsym;
			const char *name;

			if (sym == 0 || gelf_getsym(r.dynsym, (int) sym, &gsym) == NULL ||
				(name = elf_strptr(f->elf, r.dynstr, gsym.st_name)) == NULL ||
				name[0] == '\0')
				continue;
			if (f->nplt == cap)
			{
				cap = cap ? cap * 2 : 64;
				f->plt = xrealloc(f->plt, cap * sizeof(Symbol));
			}
			f->plt[f->nplt].addr = shdr.sh_addr + off;
			f->plt[f->nplt].size = (uint32_t) entsize;
			f->plt[f->nplt].name = (uint32_t) names.len;
			buf_printf(&names, "%s@plt", name);
			buf_append(&names, "", 1);
			f->nplt++;
		}
	}
	sort_by_address(f->plt, f->nplt);
	f->plt_names = names.data;
	charge(f, cap * sizeof(Symbol) + names.cap);
	u64map_free(&r.by_slot);
	free(r.by_index);
}

/* The last symbol at or below addr, or NULL. */
static const Symbol *
last_at_or_below(const Symbol *syms, int n, uint64_t addr)
{
	int			lo = 0;
	int			hi = n;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 ? &syms[lo - 1] : NULL;
}

const char *
objfile_symbol(ObjFile *f, uint64_t vaddr)
{
	const Symbol *s;

	if (f->elf == NULL)
		return NULL;
	if (!f->syms_loaded)
	{
		f->syms_loaded = true;
		load_function_symbols(f);
		find_plt(f);
	}
	if (!f->plt_loaded && vaddr >= f->plt_low && vaddr < f->plt_high)
	{
		f->plt_loaded = true;
		load_plt(f);
	}
	s = last_at_or_below(f->plt, f->nplt, vaddr);
	if (s && vaddr < s->addr + s->size)
		return f->plt_names + s->name;
	s = last_at_or_below(f->syms, f->nsyms, vaddr);
	if (s == NULL)
		return NULL;
	/* Sized symbols must contain vaddr; unsized ones reach the next symbol. */
	if (s->size != 0 && vaddr >= s->addr + s->size)
		return NULL;
	return elf_strptr(f->sym_elf, f->sym_strndx, s->name);
}

/* The address and size of the function symbol called name, by a scan. */
static bool
find_function(ObjFile *f, const char *name, uint64_t *addr, uint64_t *size)
{
	if (!f->syms_loaded)
		objfile_symbol(f, 0);
	for (int i = 0; i < f->nsyms; i++)
	{
		const char *s = elf_strptr(f->sym_elf, f->sym_strndx, f->syms[i].name);

		if (s && strcmp(s, name) == 0)
		{
			*addr = f->syms[i].addr;
			*size = f->syms[i].size;
			return true;
		}
	}
	return false;
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
 * The defined dynamic symbol called name, found as the dynamic linker finds
 * it, through .gnu.hash: the few symbols of the name's hash chain rather
 * than every symbol (node exports 75,000; every PostgreSQL backend and
 * every Python process the agent meets is asked for its symbols).  1:
 * found, 0: not there, -1: the file has no usable table.
 */
static int
gnu_hash_lookup(Elf *elf, const char *name, GElf_Sym *sym)
{
	GElf_Shdr	shdr;
	GElf_Shdr	symshdr;
	Elf_Scn    *scn = parca_elf_section(elf, ".gnu.hash", &shdr);
	Elf_Data   *data = scn && shdr.sh_type == SHT_GNU_HASH ? elf_getdata(scn, NULL) : NULL;
	Elf_Scn    *symscn = data ? elf_getscn(elf, shdr.sh_link) : NULL;
	Elf_Data   *syms = symscn && gelf_getshdr(symscn, &symshdr) ?
		elf_getdata(symscn, NULL) : NULL;
	const uint32_t *w;
	size_t		nwords;
	size_t		buckets;
	size_t		chain;
	uint32_t	hash = 5381;

	if (syms == NULL || data->d_size < 4 * sizeof(uint32_t))
		return -1;
	w = data->d_buf;
	nwords = data->d_size / sizeof(uint32_t);
	/* nbuckets, symoffset, bloom words (64 or 32 bits), shift; bloom; buckets; chains */
	buckets = 4 + (size_t) w[2] * (gelf_getclass(elf) == ELFCLASS64 ? 2 : 1);
	chain = buckets + w[0];
	if (w[0] == 0 || chain > nwords)
		return -1;
	for (const unsigned char *c = (const unsigned char *) name; *c; c++)
		hash = hash * 33 + *c;
	for (uint64_t i = w[buckets + hash % w[0]]; i >= w[1] && chain + (i - w[1]) < nwords; i++)
	{
		uint32_t	entry = w[chain + (i - w[1])];
		const char *s;

		if ((entry | 1) == (hash | 1) && gelf_getsym(syms, (int) i, sym) != NULL &&
			sym->st_shndx != SHN_UNDEF &&
			(s = elf_strptr(elf, symshdr.sh_link, sym->st_name)) != NULL &&
			strcmp(s, name) == 0)
			return 1;
		if (entry & 1)
			break;
	}
	return 0;
}

bool
objfile_dynamic_symbol(ObjFile *f, const char *name, uint64_t *addr, uint64_t *size)
{
	GElf_Shdr	shdr;
	GElf_Sym	found;
	int			hashed = f->elf ? gnu_hash_lookup(f->elf, name, &found) : -1;
	Elf_Scn    *scn = hashed < 0 && f->elf ? find_symtab(f->elf, SHT_DYNSYM, &shdr) : NULL;
	Elf_Data   *data = scn ? elf_getdata(scn, NULL) : NULL;

	if (hashed > 0)
	{
		*addr = found.st_value;
		*size = found.st_size;
	}
	if (hashed >= 0)
		return hashed > 0;
	for (size_t i = 1; data && i < shdr.sh_size / shdr.sh_entsize; i++)
	{
		GElf_Sym	sym;
		const char *s;

		if (gelf_getsym(data, (int) i, &sym) != NULL && sym.st_shndx != SHN_UNDEF &&
			(s = elf_strptr(f->elf, shdr.sh_link, sym.st_name)) != NULL &&
			strcmp(s, name) == 0)
		{
			*addr = sym.st_value;
			*size = sym.st_size;
			return true;
		}
	}
	return false;
}

/*
 * runtime.systemstack (asm_amd64.s) begins, in every release since 1.17:
 *	mov %fs:TLS_G, %rax			64 48 8b 04 25 <disp32>
 *	mov 0x30(%rax), %rbx		48 8b 58 30			(g.m)
 *	...
 *	call *%rdi					ff d7				(the function, on g0)
 *	mov %fs:TLS_G, %rax
 *	mov 0x30(%rax), %rbx
 *	mov M_CURG(%rbx), %rax		48 8b 83 <disp32> or 48 8b 43 <disp8>
 * A binary whose code differs (cgo's dynamic TLS, another architecture) is
 * not taken for Go.
 */
static void
read_go_runtime(ObjFile *f)
{
	uint64_t	addr;
	uint64_t	size;
	const unsigned char *c;
	size_t		i;
	size_t		call = 0;
	int32_t		disp;
	GElf_Shdr	shdr;

	f->go_state = 0;
	if (parca_elf_section(f->elf, ".go.buildinfo", &shdr) == NULL ||
		(!find_function(f, "runtime.systemstack.abi0", &addr, &size) &&
		 !find_function(f, "runtime.systemstack", &addr, &size)) ||
		size < 32 || size > 4096 || (c = objfile_bytes(f, addr, size)) == NULL)
		return;
	if (memcmp(c + 5, "\x64\x48\x8b\x04\x25", 5) != 0 ||
		memcmp(c + 14, "\x48\x8b\x58\x30", 4) != 0)
		return;
	memcpy(&disp, c + 10, 4);
	for (i = 14; i + 2 <= size && call == 0; i++)
		if (c[i] == 0xff && c[i + 1] == 0xd7)
			call = i + 2;
	for (i = call; call && i + 7 <= size && i < call + 32; i++)
	{
		if (c[i] == 0x48 && c[i + 1] == 0x8b && (c[i + 2] == 0x83 || c[i + 2] == 0x43))
		{
			int32_t		off = 0;

			if (c[i + 2] == 0x83)
				memcpy(&off, c + i + 3, 4);
			else
				off = (int8_t) c[i + 3];
			if (off <= 0 || off >= 4096)
				return;
			f->go_tls_g = disp;
			f->go_m_curg = (uint64_t) off;
			f->go_state = 1;
			return;
		}
	}
}

bool
objfile_go_runtime(ObjFile *f, int64_t *tls_g, uint64_t *m_curg)
{
	if (f->elf == NULL)
		return false;
	if (f->go_state < 0)
		read_go_runtime(f);
	*tls_g = f->go_tls_g;
	*m_curg = f->go_m_curg;
	return f->go_state == 1;
}

const GoPclntab *
objfile_gopclntab(ObjFile *f)
{
	if (f->elf == NULL)
		return NULL;
	if (f->gopclntab_state < 0)
		f->gopclntab_state = gopclntab_open(f->elf, &f->gopclntab);
	return f->gopclntab_state == 1 ? &f->gopclntab : NULL;
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
	if (find_symtab(f->elf, SHT_SYMTAB, &shdr) == NULL &&
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
			state = debug_info_state(debug_file(f));
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
		drop_pages(base, size);
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
