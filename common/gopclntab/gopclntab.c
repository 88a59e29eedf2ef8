/*
 * gopclntab.c
 *		Frames of an address of a Go program from its .gopclntab; see
 *		gopclntab.h.
 *
 * The layout is the Go runtime's (runtime/symtab.go, cmd/link's pcln.go):
 * a header (pcHeader) giving the offsets of the function names, the
 * compilation units' file lists (cutab), the file names, the pc-value
 * tables and the function table; each function's record (_func) gives its
 * name, its pc-file and pc-line tables, and its pcdata and funcdata.  The
 * inlined frames at a pc are those of the function's inline tree
 * (FUNCDATA_InlTree), entered at the index its PCDATA_InlTreeIndex table
 * gives for the pc: the file and line tables describe the innermost
 * inlined function, and each inlined call names the pc (parentPc) whose
 * position is its call site, whose index in turn gives its caller.
 *
 * Up to Go 1.17, function entries and funcdata are absolute addresses;
 * from 1.18 on, entries are offsets from the text start the header gives
 * and funcdata offsets from go:func.* (moduledata.gofunc), which the table
 * does not hold: it is read from the runtime's first moduledata, found in
 * the writable data as the word that points at the table.
 */
#include "gopclntab/gopclntab.h"

#include <string.h>

#include "dwarf/dwarf_lines.h"

#define MAGIC_GO116 0xfffffffau
#define MAGIC_GO118 0xfffffff0u
#define MAGIC_GO120 0xfffffff1u

#define PCDATA_INLTREEINDEX 2
#define FUNCDATA_INLTREE 3

/* Where moduledata.text and moduledata.gofunc are, on 64-bit machines. */
#define MODULEDATA_TEXT 176
#define MODULEDATA_GOFUNC_GO118 304
#define MODULEDATA_GOFUNC_GO120 320

/* The inline tree's depth followed at most (a hostile tree may loop). */
#define MAX_INLINE_DEPTH 64

static bool
read_u32(const GoBytes *b, uint64_t off, uint32_t *v)
{
	if (off > b->len || b->len - off < 4)
		return false;
	memcpy(v, b->p + off, 4);
	return true;
}

static bool
read_u64(const GoBytes *b, uint64_t off, uint64_t *v)
{
	if (off > b->len || b->len - off < 8)
		return false;
	memcpy(v, b->p + off, 8);
	return true;
}

/* The NUL-terminated string at off, or NULL if it does not end inside b. */
static const char *
string_at(const GoBytes *b, uint64_t off)
{
	if (off >= b->len || memchr(b->p + off, '\0', b->len - off) == NULL)
		return NULL;
	return (const char *) b->p + off;
}

static GoBytes
slice(const GoBytes *b, uint64_t from, uint64_t to)
{
	GoBytes		r = {NULL, 0};

	if (from <= to && to <= b->len)
	{
		r.p = b->p + from;
		r.len = to - from;
	}
	return r;
}

/* The file's bytes at a virtual address, to the end of its segment's file part. */
static GoBytes
bytes_at_vaddr(Elf *elf, const GoBytes *file, uint64_t vaddr)
{
	GoBytes		none = {NULL, 0};
	size_t		n;

	if (elf_getphdrnum(elf, &n) != 0)
		return none;
	for (size_t i = 0; i < n; i++)
	{
		GElf_Phdr	ph;

		if (gelf_getphdr(elf, (int) i, &ph) != NULL && ph.p_type == PT_LOAD &&
			vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz &&
			ph.p_offset <= file->len && ph.p_filesz <= file->len - ph.p_offset)
			return slice(file, ph.p_offset + (vaddr - ph.p_vaddr), ph.p_offset + ph.p_filesz);
	}
	return none;
}

/* Is vaddr in an executable segment? */
static bool
in_text(Elf *elf, uint64_t vaddr)
{
	size_t		n;

	if (elf_getphdrnum(elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++)
	{
		GElf_Phdr	ph;

		if (gelf_getphdr(elf, (int) i, &ph) != NULL && ph.p_type == PT_LOAD &&
			(ph.p_flags & PF_X) && vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_memsz)
			return true;
	}
	return false;
}

/* A function table entry: {entry, _func offset}, words up to 1.17, uint32 since. */
static uint64_t
functab_entry_size(const GoPclntab *t)
{
	return t->layout == GO_116 ? 16 : 8;
}

/* Function i of the table: its entry pc and the offset of its _func. */
static bool
functab_entry(const GoPclntab *t, uint64_t i, uint64_t *entry, uint64_t *funcoff)
{
	uint64_t	at = i * functab_entry_size(t);
	uint32_t	e32;
	uint32_t	f32;

	if (t->layout == GO_116)
		return read_u64(&t->functab, at, entry) && read_u64(&t->functab, at + 8, funcoff);
	if (!read_u32(&t->functab, at, &e32) || !read_u32(&t->functab, at + 4, &f32))
		return false;
	*entry = t->text_start + e32;
	*funcoff = f32;
	return true;
}

/*
 * The region of the table starting at off: up to the next region's start
 * (the regions follow each other, but the reader does not rely on their
 * order), else to the table's end.
 */
static GoBytes
region(const GoBytes *tab, const uint64_t *offsets, int n, uint64_t off)
{
	uint64_t	end = tab->len;

	for (int i = 0; i < n; i++)
		if (offsets[i] > off && offsets[i] < end)
			end = offsets[i];
	return slice(tab, off, end);
}

/*
 * The runtime's first moduledata: in .noptrdata, where the Go linker puts
 * it, else in other writable data; its first word points at the table and
 * its text field names the same text start.  Scanning .noptrdata first
 * keeps a large program's other data (a cgo program's megabytes of
 * .data.rel.ro) unread.
 */
static GoBytes
find_moduledata(Elf *elf, const GoBytes *file, uint64_t tab_vaddr, uint64_t text_start,
				uint64_t size)
{
	GoBytes		none = {NULL, 0};

	for (int pass = 0; pass < 2; pass++)
	{
		Elf_Scn    *scn = NULL;
		size_t		shstrndx;

		if (elf_getshdrstrndx(elf, &shstrndx) != 0)
			return none;
		while ((scn = elf_nextscn(elf, scn)) != NULL)
		{
			GElf_Shdr	shdr;
			const char *name;
			GoBytes		data;

			if (gelf_getshdr(scn, &shdr) == NULL || shdr.sh_type != SHT_PROGBITS ||
				(shdr.sh_flags & (SHF_ALLOC | SHF_WRITE)) != (SHF_ALLOC | SHF_WRITE) ||
				(name = elf_strptr(elf, shstrndx, shdr.sh_name)) == NULL ||
				(strcmp(name, ".noptrdata") == 0) != (pass == 0))
				continue;
			data = slice(file, shdr.sh_offset, shdr.sh_offset + shdr.sh_size);
			for (uint64_t off = 0; off + size <= data.len; off += 8)
			{
				uint64_t	v;
				uint64_t	text;
				GoBytes		md = slice(&data, off, off + size);

				if (read_u64(&md, 0, &v) && v == tab_vaddr &&
					read_u64(&md, MODULEDATA_TEXT, &text) && text == text_start)
					return md;
			}
		}
	}
	return none;
}

/* go:func.*, from the runtime's first moduledata. */
static void
find_gofunc(Elf *elf, const GoBytes *file, uint64_t tab_vaddr, GoPclntab *t)
{
	uint64_t	gofunc_at = t->layout == GO_120 ? MODULEDATA_GOFUNC_GO120 : MODULEDATA_GOFUNC_GO118;
	GoBytes		md = find_moduledata(elf, file, tab_vaddr, t->text_start, gofunc_at + 8);
	uint64_t	gofunc;

	if (read_u64(&md, gofunc_at, &gofunc))
		t->gofunc = bytes_at_vaddr(elf, file, gofunc);
}

/*
 * Read the table at tab (virtual address tab_vaddr) into t; false if it is
 * not one this reader knows or does not hold together.
 */
static bool
open_at(Elf *elf, GoBytes tab, uint64_t tab_vaddr, GoPclntab *t)
{
	GElf_Shdr	text;
	uint32_t	magic;
	uint64_t	offsets[5];
	uint64_t	first;
	uint64_t	unused;

	t->tab = tab;

	/* magic, two zero bytes, the pc quantum, the pointer size, then words */
	if (!read_u32(&t->tab, 0, &magic) || t->tab.len < 72 || t->tab.p[4] != 0 ||
		t->tab.p[5] != 0 || (t->tab.p[6] != 1 && t->tab.p[6] != 2 && t->tab.p[6] != 4) ||
		t->tab.p[7] != 8)
		return false;
	if (magic == MAGIC_GO116)
		t->layout = GO_116;
	else if (magic == MAGIC_GO118)
		t->layout = GO_118;
	else if (magic == MAGIC_GO120)
		t->layout = GO_120;
	else
		return false;
	t->quantum = t->tab.p[6];
	read_u64(&t->tab, 8, &t->nfunc);
	/* 1.18 put the text start between the file count and the offsets */
	first = 24;
	t->text_start = 0;
	if (t->layout != GO_116)
	{
		read_u64(&t->tab, 24, &t->text_start);
		first = 32;
	}
	for (int i = 0; i < 5; i++)
		if (!read_u64(&t->tab, first + 8 * i, &offsets[i]) || offsets[i] < first + 40 ||
			offsets[i] > t->tab.len)
			return false;
	t->funcnames = region(&t->tab, offsets, 5, offsets[0]);
	t->cutab = region(&t->tab, offsets, 5, offsets[1]);
	t->filetab = region(&t->tab, offsets, 5, offsets[2]);
	t->pctab = region(&t->tab, offsets, 5, offsets[3]);
	t->functab = region(&t->tab, offsets, 5, offsets[4]);

	/* nfunc entries and the end of the last function */
	if (t->nfunc == 0 || t->nfunc >= t->functab.len / functab_entry_size(t))
		return false;
	if (t->layout == GO_116)
		return functab_entry(t, 0, &t->first_entry, &unused);

	/*
	 * A position-independent program's text start is a dynamic
	 * relocation, which the file may hold as 0: it is then the start of
	 * .text, where the Go linker puts runtime.text.  A debug file without
	 * its code (.text removed, as in Parca's fixtures) keeps the header's.
	 */
	if (!in_text(elf, t->text_start))
	{
		if (parca_elf_section(elf, ".text", &text) != NULL)
			t->text_start = text.sh_addr;
		else if (t->text_start == 0)
			return false;
	}
	find_gofunc(elf, &t->file, tab_vaddr, t);
	return functab_entry(t, 0, &t->first_entry, &unused);
}

/* Is there a table at vaddr (in the file's bytes)?  Then t holds it. */
static bool
table_at(Elf *elf, uint64_t vaddr, GoPclntab *t)
{
	GoBytes		at = bytes_at_vaddr(elf, &t->file, vaddr);
	uint32_t	magic;

	if (!read_u32(&at, 0, &magic) ||
		(magic != MAGIC_GO116 && magic != MAGIC_GO118 && magic != MAGIC_GO120) ||
		at.len < 8 || at.p[4] != 0 || at.p[5] != 0 || at.p[7] != 8)
		return false;
	return open_at(elf, at, vaddr, t) && in_text(elf, t->first_entry);
}

/*
 * A program linked by the system's linker (cgo's external linking) with a
 * recent Go has no .gopclntab section: the table lies in its read-only
 * data, and must describe functions in the program's code.  It is found
 * through the word of .noptrdata that points at it (the runtime's first
 * moduledata), which reads a few pages; else (a position-independent
 * program, whose pointers the file holds as relocations) by its header,
 * through the whole of the read-only data.
 */
static bool
find_in_data(Elf *elf, GoPclntab *t)
{
	Elf_Scn    *scn = NULL;
	GElf_Shdr	shdr;

	if ((scn = parca_elf_section(elf, ".noptrdata", &shdr)) != NULL)
	{
		GoBytes		data = slice(&t->file, shdr.sh_offset, shdr.sh_offset + shdr.sh_size);

		/*
		 * A moduledata: the table's address, then its function names as a
		 * slice {pointer past it, length, capacity (the same)}, ... and the
		 * text start in the program's code; only then is the table read.
		 */
		for (uint64_t off = 0; off + MODULEDATA_TEXT + 8 <= data.len; off += 8)
		{
			uint64_t	w[4] = {0};
			uint64_t	text = 0;

			for (int i = 0; i < 4; i++)
				read_u64(&data, off + 8 * i, &w[i]);
			read_u64(&data, off + MODULEDATA_TEXT, &text);
			if (w[0] != 0 && w[1] > w[0] && w[2] != 0 && w[2] == w[3] &&
				in_text(elf, text) && table_at(elf, w[0], t))
				return true;
		}
	}
	scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL)
	{
		if (gelf_getshdr(scn, &shdr) == NULL || shdr.sh_type != SHT_PROGBITS ||
			(shdr.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) != SHF_ALLOC)
			continue;
		for (uint64_t off = 0; off + 8 <= shdr.sh_size; off += 8)
			if (table_at(elf, shdr.sh_addr + off, t))
				return true;
	}
	return false;
}

bool
gopclntab_open(Elf *elf, GoPclntab *t)
{
	GElf_Ehdr	ehdr;
	GElf_Shdr	shdr;
	size_t		size;

	memset(t, 0, sizeof(*t));
	t->elf = elf;
	t->file.p = (const unsigned char *) elf_rawfile(elf, &size);
	t->file.len = size;
	if (t->file.p == NULL || gelf_getehdr(elf, &ehdr) == NULL ||
		ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_ident[EI_DATA] != ELFDATA2LSB)
		return false;
	if (parca_elf_section(elf, ".gopclntab", &shdr) != NULL)
		return shdr.sh_type != SHT_NOBITS && (shdr.sh_flags & SHF_COMPRESSED) == 0 &&
			open_at(elf, slice(&t->file, shdr.sh_offset, shdr.sh_offset + shdr.sh_size),
					shdr.sh_addr, t);
	return parca_elf_section(elf, ".go.buildinfo", &shdr) != NULL && find_in_data(elf, t);
}

static bool
read_varint(const GoBytes *b, uint64_t *pos, uint32_t *v)
{
	uint32_t	r = 0;

	for (int shift = 0; shift < 35 && *pos < b->len; shift += 7)
	{
		unsigned char c = b->p[(*pos)++];

		r |= (uint32_t) (c & 0x7f) << shift;
		if ((c & 0x80) == 0)
		{
			*v = r;
			return true;
		}
	}
	return false;
}

/*
 * The value of the pc-value table at off for pc in the function [entry,
 * end): pairs of a zig-zag value delta and a pc delta in quanta, the first
 * value relative to -1, ended by a zero value delta.
 */
static bool
pc_value(const GoPclntab *t, uint32_t off, uint64_t entry, uint64_t end, uint64_t pc,
		 int32_t *value)
{
	uint64_t	pos = off;
	uint32_t	val = (uint32_t) -1;
	uint64_t	at = entry;

	if (off == 0)
		return false;
	for (bool first = true;; first = false)
	{
		uint32_t	vdelta;
		uint32_t	pcdelta;

		if (!read_varint(&t->pctab, &pos, &vdelta) || (vdelta == 0 && !first) ||
			!read_varint(&t->pctab, &pos, &pcdelta))
			return false;
		val += -(vdelta & 1) ^ (vdelta >> 1);
		at += (uint64_t) pcdelta * t->quantum;
		if (pc < at)
		{
			*value = (int32_t) val;
			return true;
		}
		if (at >= end)
			return false;
	}
}

/* Where a _func's fields are, in each layout; nfuncdata is its last byte. */
typedef struct FuncLayout
{
	uint8_t		name;
	uint8_t		pcfile;
	uint8_t		pcln;
	uint8_t		npcdata;
	uint8_t		cu;
	uint8_t		start_line;		/* 0: none */
	uint8_t		size;
} FuncLayout;

static const FuncLayout func_layouts[] = {
	[GO_116] = {8, 24, 28, 32, 36, 0, 44},
	[GO_118] = {4, 20, 24, 28, 32, 0, 40},
	[GO_120] = {4, 20, 24, 28, 32, 36, 44},
};

/* A function's record: what the reader needs of its _func. */
typedef struct GoFunc
{
	uint64_t	entry;
	uint64_t	end;
	uint32_t	name;			/* offset into funcnames */
	uint32_t	pcfile;
	uint32_t	pcln;
	uint32_t	cu;				/* its compilation unit's first cutab entry */
	int32_t		start_line;		/* 1.20 and later */
	uint32_t	inl_index;		/* its PCDATA_InlTreeIndex table, 0 if none */
	GoBytes		inl_tree;		/* its FUNCDATA_InlTree; len 0 if none */
} GoFunc;

/* The inline tree of a function whose funcdata start at off of its record. */
static GoBytes
inline_tree(const GoPclntab *t, const GoBytes *rec, uint64_t off, uint8_t nfuncdata)
{
	GoBytes		none = {NULL, 0};
	uint64_t	ptr;
	uint32_t	rel;

	if (nfuncdata <= FUNCDATA_INLTREE)
		return none;
	if (t->layout == GO_116)
	{
		/* pointers, after the pcdata aligned to 8 */
		off = (off + 7) & ~(uint64_t) 7;
		if (!read_u64(rec, off + 8 * FUNCDATA_INLTREE, &ptr) || ptr == 0)
			return none;
		return bytes_at_vaddr(t->elf, &t->file, ptr);
	}
	if (!read_u32(rec, off + 4 * FUNCDATA_INLTREE, &rel) || rel == UINT32_MAX)
		return none;
	return slice(&t->gofunc, rel, t->gofunc.len);
}

/* The function containing pc, by a binary search of the function table. */
static bool
find_func(const GoPclntab *t, uint64_t pc, GoFunc *f)
{
	const FuncLayout *fl = &func_layouts[t->layout];
	uint64_t	lo = 0;
	uint64_t	hi = t->nfunc;
	uint64_t	entry;
	uint64_t	next;
	uint64_t	funcoff;
	uint64_t	unused;
	uint32_t	npcdata;
	uint8_t		nfuncdata;
	GoBytes		rec;

	memset(f, 0, sizeof(*f));
	while (lo < hi)
	{
		uint64_t	mid = lo + (hi - lo) / 2;

		if (!functab_entry(t, mid, &entry, &unused))
			return false;
		if (entry <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || !functab_entry(t, lo - 1, &entry, &funcoff) ||
		!functab_entry(t, lo, &next, &unused) || pc >= next)
		return false;
	rec = slice(&t->functab, funcoff, t->functab.len);
	if (rec.len < fl->size || !read_u32(&rec, fl->npcdata, &npcdata) || npcdata > rec.len / 4)
		return false;
	nfuncdata = rec.p[fl->size - 1];
	f->entry = entry;
	f->end = next;
	read_u32(&rec, fl->name, &f->name);
	read_u32(&rec, fl->pcfile, &f->pcfile);
	read_u32(&rec, fl->pcln, &f->pcln);
	read_u32(&rec, fl->cu, &f->cu);
	if (fl->start_line)
		read_u32(&rec, fl->start_line, (uint32_t *) &f->start_line);
	if (npcdata > PCDATA_INLTREEINDEX)
		read_u32(&rec, fl->size + 4 * PCDATA_INLTREEINDEX, &f->inl_index);
	f->inl_tree = inline_tree(t, &rec, fl->size + 4 * (uint64_t) npcdata, nfuncdata);
	return true;
}

/* The file and line at pc in function f. */
static void
position(const GoPclntab *t, const GoFunc *f, uint64_t pc, GoLine *l)
{
	int32_t		file;
	int32_t		line;
	uint32_t	fileoff;
	const char *name = NULL;

	if (pc_value(t, f->pcfile, f->entry, f->end, pc, &file) && file >= 0 &&
		read_u32(&t->cutab, 4 * ((uint64_t) f->cu + (uint32_t) file), &fileoff))
		name = string_at(&t->filetab, fileoff);
	l->filename = name ? name : "";
	l->line = pc_value(t, f->pcln, f->entry, f->end, pc, &line) && line > 0 ? line : 0;
}

/*
 * The inlined call ix (>= 0) of f's tree: its name, call site pc and start
 * line; false if the tree does not hold it.
 * Up to 1.19 an inlinedCall is {parent int16, funcID, pad, file, line,
 * name, parentPc int32}; from 1.20 on {funcID, pad[3], name, parentPc,
 * startLine int32}.
 */
static bool
inlined_call(const GoPclntab *t, const GoFunc *f, int32_t ix, const char **name,
			 uint64_t *call_pc, int64_t *start_line)
{
	uint64_t	size = t->layout == GO_120 ? 16 : 20;
	uint64_t	at;
	uint32_t	name_off = 0;
	uint32_t	parent_pc = 0;
	uint32_t	line = 0;
	GoBytes		call;

	at = (uint64_t) ix * size;
	call = slice(&f->inl_tree, at, at + size);
	if (call.len != size)
		return false;
	if (t->layout == GO_120)
	{
		read_u32(&call, 4, &name_off);
		read_u32(&call, 8, &parent_pc);
		read_u32(&call, 12, &line);
	}
	else
	{
		read_u32(&call, 12, &name_off);
		read_u32(&call, 16, &parent_pc);
	}
	if ((*name = string_at(&t->funcnames, name_off)) == NULL ||
		parent_pc >= f->end - f->entry)
		return false;
	*call_pc = f->entry + parent_pc;
	*start_line = (int32_t) line > 0 ? (int32_t) line : 0;
	return true;
}

int
gopclntab_lines(const GoPclntab *t, uint64_t pc, GoLine *lines, int max, bool *complete)
{
	GoFunc		f;
	const char *name;
	int32_t		ix;
	int			n = 0;

	*complete = true;
	if (max <= 0 || !find_func(t, pc, &f) || (name = string_at(&t->funcnames, f.name)) == NULL)
		return 0;
	position(t, &f, pc, &lines[0]);

	/* the inlined calls at pc, innermost first, each at its caller's position next */
	while (n < max - 1 && n < MAX_INLINE_DEPTH &&
		   pc_value(t, f.inl_index, f.entry, f.end, pc, &ix) && ix >= 0)
	{
		if (!inlined_call(t, &f, ix, &lines[n].function, &pc, &lines[n].start_line))
		{
			*complete = false;
			break;
		}
		position(t, &f, pc, &lines[++n]);
	}
	lines[n].function = name;
	lines[n].start_line = f.start_line > 0 ? f.start_line : 0;
	return n + 1;
}
