/*
 * debugfile.c
 *		An ELF file from untrusted bytes; see debugfile.h.
 *
 * libelf and libdw check the offsets they follow against the image, but
 * allocate what a file's headers ask for: a compressed debug section says
 * how large it becomes, and libdw inflates every one of them when it opens
 * the DWARF.  So before anything is read, every section must lie in the
 * file and the decompressed sizes must fit the limit.  What libelf and
 * libdw allocate is theirs (malloc); a reset callback of the memory
 * context that holds the file gives it back, on error too.
 */
#include "postgres.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>

#include "miscadmin.h"

#include "dwarf/dwarf_lines.h"
#include "gopclntab/gopclntab.h"
#include "symbolize/debugfile.h"
#include "symbolize/symbolize.h"
#include "types/valid_text.h"

/* The debug sections, decompressed, may take this many times the file's limit. */
#define DECOMPRESSED_PER_LIMIT 4

typedef struct FuncSymbol
{
	uint64		addr;
	uint64		size;
	size_t		name;			/* offset in the string table */
} FuncSymbol;

/* A compilation unit's address range, when .debug_aranges is missing. */
typedef struct UnitRange
{
	uint64		lo;
	uint64		hi;
	uint64		max_hi;			/* the highest hi of this range and those before */
	Dwarf_Off	die;
} UnitRange;

struct DebugFile
{
	Elf		   *elf;
	Dwarf	   *dwarf;			/* NULL: no DWARF */
	MemoryContext cxt;			/* the file's: what is read lazily lives here */
	MemoryContextCallback release;

	bool		units_indexed;
	UnitRange  *units;			/* sorted by lo; NULL: libdw's aranges serve */
	int			nunits;

	int			go_state;		/* -1: not checked; 0: none; 1: go is a Go table */
	GoPclntab	go;
	int			code_lost;		/* -1: not checked; else go_code_lost() */

	bool		symbols_loaded;
	FuncSymbol *symbols;		/* sorted by address */
	int			nsymbols;
	size_t		strndx;
};

static void
release_file(void *arg)
{
	DebugFile  *f = arg;

	if (f->dwarf)
		dwarf_end(f->dwarf);
	if (f->elf)
		elf_end(f->elf);
	f->dwarf = NULL;
	f->elf = NULL;
}

static void
invalid(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("debug information is not a valid ELF file"),
			 errdetail("%s", detail)));
}

/* Size of a compressed section once inflated, 0 if it is not compressed. */
static uint64
inflated_size(Elf_Scn *scn, const GElf_Shdr *shdr, const char *name)
{
	if (shdr->sh_flags & SHF_COMPRESSED)
	{
		GElf_Chdr	chdr;

		if (gelf_getchdr(scn, &chdr) == NULL)
			invalid("a compressed section has no valid header");
		return chdr.ch_size;
	}
	if (name != NULL && strncmp(name, ".zdebug", 7) == 0)
	{
		/* GNU style: "ZLIB", then the size in 8 big-endian bytes */
		Elf_Data   *raw = elf_rawdata(scn, NULL);
		const unsigned char *p;
		uint64		size = 0;

		if (raw == NULL || raw->d_size < 12 || memcmp(raw->d_buf, "ZLIB", 4) != 0)
			return 0;			/* libdw does not inflate it either */
		p = (const unsigned char *) raw->d_buf + 4;
		for (int i = 0; i < 8; i++)
			size = (size << 8) | p[i];
		return size;
	}
	return 0;
}

/* Every section in the file; the decompressed ones within the limit. */
static void
check_sections(Elf *elf, Size len)
{
	size_t		shstrndx;
	Elf_Scn    *scn = NULL;
	uint64		inflated = 0;
	uint64		limit = (uint64) symbolize_max_debuginfo_size * DECOMPRESSED_PER_LIMIT;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		invalid(elf_errmsg(-1));
	while ((scn = elf_nextscn(elf, scn)) != NULL)
	{
		GElf_Shdr	shdr;
		const char *name;
		uint64		size;

		if (gelf_getshdr(scn, &shdr) == NULL)
			invalid(elf_errmsg(-1));
		if (shdr.sh_type == SHT_NOBITS)
			continue;
		if (shdr.sh_offset > len || shdr.sh_size > len - shdr.sh_offset)
			invalid(psprintf("section %zu lies outside the file", elf_ndxscn(scn)));
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		size = inflated_size(scn, &shdr, name);
		if (size > limit || inflated + size > limit)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("debug information would decompress to more than %llu bytes",
							(unsigned long long) limit),
					 errhint("The limit is %d times parca.max_debuginfo_size.",
							 DECOMPRESSED_PER_LIMIT)));
		inflated += size;
	}
}

static bool
hex_equal(const unsigned char *bits, ssize_t n, const char *hex)
{
	static const char digits[] = "0123456789abcdef";

	if (n <= 0 || strlen(hex) != (size_t) (2 * n))
		return false;
	for (ssize_t i = 0; i < n; i++)
		if (pg_tolower((unsigned char) hex[2 * i]) != digits[bits[i] >> 4] ||
			pg_tolower((unsigned char) hex[2 * i + 1]) != digits[bits[i] & 15])
			return false;
	return true;
}

DebugFile *
debugfile_open(const char *data, Size len, const char *build_id)
{
	DebugFile  *f = palloc0(sizeof(DebugFile));
	GElf_Ehdr	ehdr;
	size_t		nphdr;
	const void *bits;
	ssize_t		nbits;

	if (elf_version(EV_CURRENT) == EV_NONE)
		elog(ERROR, "libelf is out of date");
	f->cxt = CurrentMemoryContext;
	f->release.func = release_file;
	f->release.arg = f;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &f->release);

	if (len < EI_NIDENT || memcmp(data, ELFMAG, SELFMAG) != 0)
		invalid("It is not an ELF header with its magic number.");
	f->elf = elf_memory((char *) data, len);
	if (f->elf == NULL || elf_kind(f->elf) != ELF_K_ELF || gelf_getehdr(f->elf, &ehdr) == NULL)
		invalid(elf_errmsg(-1));
	if (elf_getphdrnum(f->elf, &nphdr) != 0)
		invalid(elf_errmsg(-1));
	check_sections(f->elf, len);

	/*
	 * A GNU build id that is not this one means the wrong file.  Go
	 * programs often have none (their own build id is another note), and
	 * writers name them in different ways, so they are taken as said.
	 */
	nbits = dwelf_elf_gnu_build_id(f->elf, &bits);
	if (nbits > 0 && !hex_equal(bits, nbits, build_id))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the ELF file's build id does not match %s", message_quote_cstring(build_id))));

	/*
	 * no DWARF (or DWARF libdw cannot read): a Go program's .gopclntab,
	 * else the symbol table names
	 */
	f->dwarf = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
	f->go_state = -1;
	f->code_lost = -1;
	return f;
}

static int
symbol_cmp(const void *a, const void *b)
{
	const FuncSymbol *x = a;
	const FuncSymbol *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The function symbols of .symtab, else .dynsym, sorted by address. */
static void
load_symbols(DebugFile *f)
{
	int			types[2] = {SHT_SYMTAB, SHT_DYNSYM};

	f->symbols_loaded = true;
	for (int t = 0; t < 2 && f->nsymbols == 0; t++)
	{
		Elf_Scn    *scn = NULL;

		while ((scn = elf_nextscn(f->elf, scn)) != NULL)
		{
			GElf_Shdr	shdr;
			Elf_Data   *data;
			size_t		n;

			if (gelf_getshdr(scn, &shdr) == NULL || shdr.sh_type != types[t] ||
				shdr.sh_entsize == 0 || (data = elf_getdata(scn, NULL)) == NULL)
				continue;
			n = data->d_size / shdr.sh_entsize;
			f->symbols = palloc_extended(Max(n, 1) * sizeof(FuncSymbol), MCXT_ALLOC_HUGE);
			f->strndx = shdr.sh_link;
			for (size_t i = 1; i < n; i++)
			{
				GElf_Sym	sym;
				int			type;

				if (gelf_getsym(data, (int) i, &sym) == NULL)
					continue;
				type = GELF_ST_TYPE(sym.st_info);
				if (sym.st_name == 0 || sym.st_value == 0 || sym.st_shndx == SHN_UNDEF ||
					(type != STT_FUNC && type != STT_GNU_IFUNC))
					continue;
				f->symbols[f->nsymbols].addr = sym.st_value;
				f->symbols[f->nsymbols].size = sym.st_size;
				f->symbols[f->nsymbols].name = sym.st_name;
				f->nsymbols++;
			}
			break;
		}
	}
	qsort(f->symbols, f->nsymbols, sizeof(FuncSymbol), symbol_cmp);
}

static const char *
symbol_at(DebugFile *f, uint64 vaddr)
{
	int			lo = 0;
	int			hi;
	const FuncSymbol *s;

	if (!f->symbols_loaded)
	{
		MemoryContext old = MemoryContextSwitchTo(f->cxt);

		load_symbols(f);
		MemoryContextSwitchTo(old);
	}
	hi = f->nsymbols;
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (f->symbols[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	s = &f->symbols[lo - 1];
	/* a sized symbol must hold the address; an unsized one reaches the next */
	if (s->size != 0 && vaddr - s->addr >= s->size)
		return NULL;
	return elf_strptr(f->elf, f->strndx, s->name);
}

static int
unit_cmp(const void *a, const void *b)
{
	const UnitRange *x = a;
	const UnitRange *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * Without .debug_aranges (Go, Clang), libdw would walk every unit for every
 * address: the units' ranges are read once instead.
 */
static void
index_units(DebugFile *f)
{
	Dwarf_Aranges *aranges;
	size_t		naranges = 0;
	Dwarf_Off	off = 0;
	Dwarf_Off	next;
	size_t		hsize;
	int			cap = 0;

	f->units_indexed = true;
	if (dwarf_getaranges(f->dwarf, &aranges, &naranges) == 0 && naranges > 0)
		return;
	while (dwarf_nextcu(f->dwarf, off, &next, &hsize, NULL, NULL, NULL) == 0)
	{
		Dwarf_Die	cu;
		Dwarf_Addr	base,
					lo,
					hi;
		ptrdiff_t	pos = 0;

		CHECK_FOR_INTERRUPTS();
		if (dwarf_offdie(f->dwarf, off + hsize, &cu) != NULL)
			while ((pos = dwarf_ranges(&cu, pos, &base, &lo, &hi)) > 0)
			{
				if (hi <= lo)
					continue;
				if (f->nunits == cap)
				{
					cap = cap ? cap * 2 : 256;
					f->units = f->units ? repalloc_huge(f->units, cap * sizeof(UnitRange))
						: palloc(cap * sizeof(UnitRange));
				}
				f->units[f->nunits].lo = lo;
				f->units[f->nunits].hi = hi;
				f->units[f->nunits].die = off + hsize;
				f->nunits++;
			}
		off = next;
	}
	if (f->nunits > 0)
		qsort(f->units, f->nunits, sizeof(UnitRange), unit_cmp);
	for (int i = 0; i < f->nunits; i++)
		f->units[i].max_hi = Max(f->units[i].hi, i > 0 ? f->units[i - 1].max_hi : 0);
}

static int
lines_from_dwarf(DebugFile *f, uint64 vaddr, DwarfLine *lines)
{
	int			lo = 0;
	int			hi;
	Dwarf_Die	cu;

	if (!f->units_indexed)
	{
		MemoryContext old = MemoryContextSwitchTo(f->cxt);

		index_units(f);
		MemoryContextSwitchTo(old);
	}
	if (f->units == NULL)
		return dwarf_lines_at(f->dwarf, vaddr, lines, DEBUGFILE_MAX_LINES);
	hi = f->nunits;
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (f->units[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/*
	 * A unit's range may span others' (Go's units cover the gaps between
	 * their functions): every range that holds the address is asked, the
	 * latest first, until one has a function there.
	 */
	for (int i = lo - 1; i >= 0 && f->units[i].max_hi > vaddr; i--)
	{
		int			n;

		if (vaddr >= f->units[i].hi || dwarf_offdie(f->dwarf, f->units[i].die, &cu) == NULL)
			continue;
		if ((n = dwarf_lines_in_unit(&cu, vaddr, lines, DEBUGFILE_MAX_LINES)) > 0)
			return n;
	}
	return 0;
}

static const char *
text_of(const char *s)
{
	bool		repaired;

	if (s == NULL)
		return "";
	return valid_text(s, strlen(s), &repaired);
}

/* A Go program's .gopclntab, opened at the first use; NULL if none. */
static const GoPclntab *
go_table(DebugFile *f)
{
	if (f->go_state < 0)
		f->go_state = gopclntab_open(f->elf, &f->go);
	return f->go_state == 1 ? &f->go : NULL;
}

/*
 * Does the file keep a Go program's table but not its code: no executable
 * segment holds the first function in its file part?  Such debug files
 * (Parca's agents upload them) keep the segments' addresses but not their
 * offsets or sizes.
 */
static bool
go_code_lost(DebugFile *f)
{
	const GoPclntab *go = go_table(f);
	size_t		n;

	if (go == NULL || elf_getphdrnum(f->elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++)
	{
		GElf_Phdr	ph;

		if (gelf_getphdr(f->elf, (int) i, &ph) != NULL && ph.p_type == PT_LOAD &&
			(ph.p_flags & PF_X) && go->first_entry >= ph.p_vaddr &&
			go->first_entry - ph.p_vaddr < ph.p_filesz)
			return false;
	}
	return true;
}

/*
 * The virtual address of a file offset of the program.  A separate debug
 * file made by objcopy --only-keep-debug (Debian's -dbg packages) keeps
 * its program's segments' addresses and sizes but not their file offsets:
 * the program is then taken to lie at its virtual addresses less the
 * image base (its first segment's page), as GNU ld lays programs and
 * libraries out; so does a Go program's debug file without its code
 * (go_code_lost), whose own table then says which addresses are code.  The
 * program itself, or a debug file that keeps the offsets (Go's), maps
 * exactly.
 */
static bool
file_vaddr(DebugFile *f, uint64 offset, uint64 *vaddr)
{
	size_t		n;
	bool		offsets_lost = false;
	uint64		base = 0;
	bool		have_base = false;

	if (f->code_lost < 0)
		f->code_lost = go_code_lost(f);
	if (!f->code_lost && parca_elf_vaddr(f->elf, offset, vaddr))
		return true;
	if (elf_getphdrnum(f->elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++)
	{
		GElf_Phdr	ph;

		if (gelf_getphdr(f->elf, (int) i, &ph) == NULL || ph.p_type != PT_LOAD)
			continue;
		if (!have_base)
			base = ph.p_vaddr & ~(uint64) 0xfff;
		have_base = true;
		offsets_lost |= (ph.p_flags & PF_X) && ph.p_filesz == 0 && ph.p_memsz > 0;
	}
	if (!(offsets_lost || f->code_lost) || !have_base || offset > PG_UINT64_MAX - base)
		return false;
	*vaddr = offset + base;
	if (f->code_lost)
		return true;
	for (size_t i = 0; i < n; i++)
	{
		GElf_Phdr	ph;

		if (gelf_getphdr(f->elf, (int) i, &ph) != NULL && ph.p_type == PT_LOAD &&
			offset + base >= ph.p_vaddr && offset + base - ph.p_vaddr < ph.p_memsz)
			return true;
	}
	return false;
}

/* The frames at vaddr from a Go program's .gopclntab (see gopclntab_lines). */
static int
lines_from_go(DebugFile *f, uint64 vaddr, DebugLine *lines, bool *complete)
{
	GoLine		gl[DEBUGFILE_MAX_LINES];
	int			n = gopclntab_lines(&f->go, vaddr, gl, DEBUGFILE_MAX_LINES, complete);

	for (int i = 0; i < n; i++)
	{
		lines[i].name = lines[i].system_name = text_of(gl[i].function);
		lines[i].filename = text_of(gl[i].filename);
		lines[i].start_line = gl[i].start_line;
		lines[i].line = gl[i].line;
	}
	return n;
}

int
debugfile_lines(DebugFile *f, uint64 file_offset, DebugLine *lines)
{
	uint64		vaddr;
	DwarfLine	dl[DEBUGFILE_MAX_LINES];
	int			n = 0;
	int			ngo = 0;
	bool		complete = true;
	const char *symbol;

	if (!file_vaddr(f, file_offset, &vaddr))
		return 0;

	/*
	 * A Go program: its .gopclntab first, as the agent reads it, so that
	 * both name a function alike (and tens of times faster than Go's
	 * DWARF, whose units hold whole packages).  DWARF names the inlined
	 * calls at an address where the file lacks the table's inline tree.
	 */
	if (go_table(f) != NULL && (ngo = lines_from_go(f, vaddr, lines, &complete)) > 0 && complete)
		return ngo;
	if (f->dwarf != NULL)
		n = lines_from_dwarf(f, vaddr, dl);
	if (n == 0 && ngo > 0)
		return ngo;
	for (int i = 0; i < n; i++)
	{
		lines[i].name = text_of(dl[i].name);
		lines[i].system_name = dl[i].linkage_name ? text_of(dl[i].linkage_name) : lines[i].name;
		lines[i].filename = text_of(dl[i].filename[0] != '/' && dl[i].filename[0] != '\0' && dl[i].comp_dir ?
									psprintf("%s/%s", dl[i].comp_dir, dl[i].filename) :
									dl[i].filename);
		lines[i].start_line = dl[i].start_line;
		lines[i].line = dl[i].line;
	}
	if (n > 0)
		return n;
	if ((symbol = symbol_at(f, vaddr)) == NULL)
		return 0;
	lines[0].name = lines[0].system_name = text_of(symbol);
	lines[0].filename = "";
	lines[0].start_line = 0;
	lines[0].line = 0;
	return 1;
}
