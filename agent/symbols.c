/*
 * symbols.c
 *		ELF and DWARF symbolization; see symbols.h.
 *
 * Each file gets a libdwfl session of its own with the file reported at
 * its link-time addresses, so a file offset turns into the address the
 * symbol table and DWARF use through the PT_LOAD program headers: the
 * same for a PIE, a shared library or a fixed-address executable, and
 * whatever address ASLR put it at in the process.
 */
#include "symbols.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ids.h"
#include "demangle.h"
#include "util.h"

/* A file seen in some process's mappings. */
typedef struct FileInfo
{
	char	   *build_id;		/* hex or "" */
} FileInfo;

typedef struct LoadSegment
{
	uint64_t	offset;
	uint64_t	filesz;
	uint64_t	vaddr;
} LoadSegment;

/* A function symbol; name points into the ELF file's string table. */
typedef struct FuncSym
{
	uint64_t	addr;
	uint64_t	size;
	const char *name;
	int			rank;			/* binding preference, lower is better */
} FuncSym;

/* An open libdwfl session for one file. */
typedef struct Session
{
	Dwfl	   *dwfl;
	Dwfl_Module *mod;
	LoadSegment *segs;
	int			nsegs;
	FuncSym    *syms;			/* sorted by address */
	int			nsyms;
	bool		syms_loaded;
	bool		use_dwarf;		/* DWARF is there and not compressed */
} Session;

static U64Map files;			/* hash(dev, ino) -> FileInfo */
static U64Map sessions;			/* hash(build id or dev/ino) -> Session */

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static uint64_t
file_key(uint64_t dev, uint64_t ino)
{
	uint64_t	k[2] = {dev, ino};

	return parca_hash64(k, sizeof(k));
}

static char *
read_build_id(const char *path)
{
	int			fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf		   *elf;
	const void *bits = NULL;
	ssize_t		n = 0;
	char	   *hex;

	if (fd < 0)
		return xstrdup("");
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf)
		n = dwelf_elf_gnu_build_id(elf, &bits);
	hex = xmalloc(n > 0 ? 2 * n + 1 : 1);
	hex[0] = '\0';
	for (ssize_t i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", ((const unsigned char *) bits)[i]);
	if (elf)
		elf_end(elf);
	close(fd);
	return hex;
}

static FileInfo *
file_info(const char *open_path, uint64_t dev, uint64_t ino)
{
	uint64_t	key = file_key(dev, ino);
	FileInfo   *f = u64map_get(&files, key);

	if (f == NULL)
	{
		f = xcalloc(1, sizeof(FileInfo));
		f->build_id = read_build_id(open_path);
		u64map_put(&files, key, f);
	}
	return f;
}

const char *
symbols_build_id(const char *open_path, uint64_t dev, uint64_t ino)
{
	return file_info(open_path, dev, ino)->build_id;
}

/*
 * What the ELF file says about its DWARF: 1 if it has uncompressed
 * .debug_info, 0 if compressed, -1 if none.
 */
static int
dwarf_state(Elf *elf)
{
	size_t		shstrndx;
	Elf_Scn    *scn = NULL;

	if (elf == NULL || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return -1;
	while ((scn = elf_nextscn(elf, scn)) != NULL)
	{
		GElf_Shdr	shdr;
		const char *name;

		if (gelf_getshdr(scn, &shdr) == NULL ||
			(name = elf_strptr(elf, shstrndx, shdr.sh_name)) == NULL)
			continue;
		if (strcmp(name, ".zdebug_info") == 0)
			return 0;
		if (strcmp(name, ".debug_info") == 0 && shdr.sh_type != SHT_NOBITS)
			return (shdr.sh_flags & SHF_COMPRESSED) ? 0 : 1;
	}
	return -1;
}

/*
 * Whether to read the file's DWARF: only when it is not compressed, in the
 * file or in its separate debug file (found by build id, as libdwfl would).
 * libdw decompresses every debug section of a file when it first reads
 * it, which costs tens of milliseconds and megabytes each time a file is
 * opened again (Debian's -dbg files, Go binaries); uncompressed DWARF is
 * read in place from the mapped file.  Without DWARF, names come from the
 * symbol table, and the stored build id and address let the server
 * symbolize fully later.
 */
static bool
dwarf_is_cheap(Elf *elf, const char *build_id)
{
	int			state = dwarf_state(elf);
	char		path[256];
	int			fd;
	Elf		   *debug;

	if (state >= 0 || strlen(build_id) < 3)
		return state == 1;
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug",
			 build_id, build_id + 2);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	debug = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	state = dwarf_state(debug);
	if (debug)
		elf_end(debug);
	close(fd);
	return state == 1;
}

static Session *
session_open(const char *open_path, const char *build_id)
{
	Session    *s = xcalloc(1, sizeof(Session));
	int			fd = open(open_path, O_RDONLY | O_CLOEXEC);
	GElf_Addr	bias;
	Elf		   *elf;
	size_t		nphdr = 0;

	s->dwfl = dwfl_begin(&dwfl_callbacks);
	if (fd >= 0 && s->dwfl)
	{
		dwfl_report_begin(s->dwfl);
		/* Consumes fd on success. */
		s->mod = dwfl_report_elf(s->dwfl, open_path, open_path, fd, 0, true);
		dwfl_report_end(s->dwfl, NULL, NULL);
		if (s->mod == NULL)
			close(fd);
	}
	else if (fd >= 0)
		close(fd);
	elf = s->mod ? dwfl_module_getelf(s->mod, &bias) : NULL;
	s->use_dwarf = dwarf_is_cheap(elf, build_id);
	if (elf && elf_getphdrnum(elf, &nphdr) == 0)
	{
		s->segs = xcalloc(nphdr, sizeof(LoadSegment));
		for (size_t i = 0; i < nphdr; i++)
		{
			GElf_Phdr	ph;

			if (gelf_getphdr(elf, (int) i, &ph) == NULL || ph.p_type != PT_LOAD)
				continue;
			s->segs[s->nsegs].offset = ph.p_offset;
			s->segs[s->nsegs].filesz = ph.p_filesz;
			s->segs[s->nsegs].vaddr = ph.p_vaddr + bias;
			s->nsegs++;
		}
	}
	return s;
}

static void
session_close(Session *s)
{
	if (s->dwfl)
		dwfl_end(s->dwfl);
	free(s->segs);
	free(s->syms);
	free(s);
}

static Session *
session_get(const char *open_path, uint64_t dev, uint64_t ino)
{
	const char *build_id = file_info(open_path, dev, ino)->build_id;
	uint64_t	key = build_id[0] ? parca_hash64(build_id, strlen(build_id))
		: file_key(dev, ino);
	Session    *s = u64map_get(&sessions, key);

	if (s == NULL)
	{
		s = session_open(open_path, build_id);
		u64map_put(&sessions, key, s);
	}
	return s;
}

static int
funcsym_cmp(const void *a, const void *b)
{
	const FuncSym *x = a;
	const FuncSym *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->rank - y->rank;
}

/*
 * The module's function symbols (from .symtab, or the debug file's, else
 * .dynsym), sorted once: libdwfl's own lookup scans the whole table on
 * every call, which costs much with large binaries.
 */
static void
load_symbols(Session *s)
{
	int			n = dwfl_module_getsymtab(s->mod);
	int			kept = 0;

	s->syms_loaded = true;
	if (n <= 1)
		return;
	s->syms = xcalloc(n, sizeof(FuncSym));
	for (int i = 1; i < n; i++)
	{
		GElf_Sym	sym;
		GElf_Addr	addr;
		GElf_Word	shndx;
		const char *name = dwfl_module_getsym_info(s->mod, i, &sym, &addr, &shndx,
												   NULL, NULL);
		int			type = GELF_ST_TYPE(sym.st_info);
		int			bind = GELF_ST_BIND(sym.st_info);

		if (name == NULL || name[0] == '\0' || addr == 0 || shndx == SHN_UNDEF ||
			(type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		s->syms[kept].addr = addr;
		s->syms[kept].size = sym.st_size;
		s->syms[kept].name = name;
		s->syms[kept].rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
		kept++;
	}
	qsort(s->syms, kept, sizeof(FuncSym), funcsym_cmp);
	/* Keep the preferred symbol of each address. */
	s->nsyms = 0;
	for (int i = 0; i < kept; i++)
		if (s->nsyms == 0 || s->syms[s->nsyms - 1].addr != s->syms[i].addr)
			s->syms[s->nsyms++] = s->syms[i];
}

/* The function symbol containing addr, or NULL. */
static const char *
find_symbol(Session *s, uint64_t addr)
{
	int			lo = 0;
	int			hi;

	if (!s->syms_loaded)
		load_symbols(s);
	hi = s->nsyms;
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (s->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	/* Sized symbols must contain addr; unsized ones reach the next symbol. */
	if (s->syms[lo - 1].size != 0 && addr >= s->syms[lo - 1].addr + s->syms[lo - 1].size)
		return NULL;
	return s->syms[lo - 1].name;
}

/* A string attribute, following DW_AT_abstract_origin and DW_AT_specification. */
static const char *
die_string(Dwarf_Die *die, int name)
{
	Dwarf_Attribute attr;

	return dwarf_formstring(dwarf_attr_integrate(die, name, &attr));
}

static int64_t
die_udata(Dwarf_Die *die, int name)
{
	Dwarf_Attribute attr;
	Dwarf_Word	w;

	if (dwarf_formudata(dwarf_attr(die, name, &attr), &w) != 0)
		return 0;
	return (int64_t) w;
}

static char demangled[SYMBOLS_MAX_LINES][1024];

/* Fill a line for a function known by its linkage name or plain name. */
static void
set_function(FrameLine *l, int slot, const char *linkage, const char *plain)
{
	const char *sys = linkage ? linkage : plain;

	l->system_name = sys;
	l->name = linkage ? demangle(linkage, demangled[slot], sizeof(demangled[slot])) : plain;
}

int
symbols_lookup(const char *open_path, uint64_t dev, uint64_t ino,
			   uint64_t file_offset, FrameLine *lines)
{
	Session    *s = session_get(open_path, dev, ino);
	uint64_t	addr = 0;
	bool		found = false;
	Dwarf_Addr	dwbias;
	Dwarf_Die  *cu;
	int			n = 0;

	if (s->mod == NULL)
		return 0;
	for (int i = 0; i < s->nsegs; i++)
	{
		if (file_offset >= s->segs[i].offset &&
			file_offset < s->segs[i].offset + s->segs[i].filesz)
		{
			addr = file_offset - s->segs[i].offset + s->segs[i].vaddr;
			found = true;
			break;
		}
	}
	if (!found)
		return 0;

	/* DWARF: the chain of inlined frames down to the containing function. */
	cu = s->use_dwarf ? dwfl_module_addrdie(s->mod, addr, &dwbias) : NULL;
	if (cu)
	{
		Dwarf_Die  *scopes = NULL;
		int			nscopes = dwarf_getscopes(cu, addr - dwbias, &scopes);
		Dwfl_Line  *src = dwfl_module_getsrc(s->mod, addr);
		int			line = 0;

		if (src)
			dwfl_lineinfo(src, NULL, &line, NULL, NULL, NULL);
		for (int i = 0; i < nscopes && n < SYMBOLS_MAX_LINES; i++)
		{
			Dwarf_Die  *d = &scopes[i];
			int			tag = dwarf_tag(d);
			const char *plain;
			const char *file;
			int			decl_line = 0;

			if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
				continue;
			plain = die_string(d, DW_AT_name);
			if (plain == NULL)
				break;
			{
				const char *linkage = die_string(d, DW_AT_linkage_name);

				if (linkage == NULL)
					linkage = die_string(d, DW_AT_MIPS_linkage_name);
				set_function(&lines[n], n, linkage, plain);
			}
			file = dwarf_decl_file(d);
			dwarf_decl_line(d, &decl_line);
			lines[n].filename = file ? file : "";
			lines[n].start_line = decl_line;
			lines[n].line = line;
			n++;
			if (tag == DW_TAG_subprogram)
				break;
			/* The caller's line is where this instance was inlined. */
			line = (int) die_udata(d, DW_AT_call_line);
		}
		free(scopes);
	}

	/* No DWARF: the symbol table (or the debug file's). */
	if (n == 0)
	{
		const char *name = find_symbol(s, addr);

		if (name == NULL)
			return 0;
		set_function(&lines[0], 0, name, name);
		lines[0].filename = "";
		lines[0].start_line = 0;
		lines[0].line = 0;
		n = 1;
	}
	return n;
}

void
symbols_close_sessions(void)
{
	size_t		pos = 0;
	void	   *v;

	if (sessions.count == 0)
		return;
	while (u64map_next(&sessions, &pos, NULL, &v))
		session_close(v);
	u64map_clear(&sessions);
	/* Give what libdw and libelf freed back to the system. */
	malloc_trim(0);
}

void
symbols_trim(int max_files)
{
	size_t		pos = 0;
	void	   *v;

	if (files.count <= (size_t) max_files)
		return;
	while (u64map_next(&files, &pos, NULL, &v))
	{
		free(((FileInfo *) v)->build_id);
		free(v);
	}
	u64map_clear(&files);
}
