/*
 * objfile_internal.h
 *		What the files of the per-file cache (objfile.c: opening, mapping,
 *		charging, flushing; objfile_cfi.c: CFI; objfile_symbols.c: symbol
 *		tables, PLT stubs, Go's runtime) share: the cache's record of a file.
 */
#ifndef AGENT_OBJFILE_INTERNAL_H
#define AGENT_OBJFILE_INTERNAL_H

#include <gelf.h>

#include "objfile.h"
#include "util.h"

/*
 * Tables read once (symbols, relocations) are given back as they are read,
 * every this many entries (a megabyte or two), so that a large program's
 * (node's symbol table is 2.6 MB, a browser's relocations 26 MB) never
 * lies in the agent's resident memory whole.
 */
#define PAGES_READ_AT_ONCE 65536

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

/* Counts bytes the agent keeps for f against the cache's bound. */
extern void objfile_charge(ObjFile *f, size_t bytes);

/* f's separate debug file (by build id, mapped on first use), or NULL. */
extern Elf *objfile_debug_elf(ObjFile *f);

/* Drops the whole pages of [from, from + len) from the agent's resident memory. */
extern void objfile_drop_range(const char *from, size_t len);

/* Drops the pages of a section of elf read once. */
extern void objfile_release_section(Elf *elf, const GElf_Shdr *shdr);

/* The first section of this type with entries, or NULL. */
extern Elf_Scn *objfile_find_symtab(Elf *elf, GElf_Word type, GElf_Shdr *shdr);

#endif							/* AGENT_OBJFILE_INTERNAL_H */
