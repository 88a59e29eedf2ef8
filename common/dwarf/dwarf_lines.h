/*
 * dwarf_lines.h
 *		The function, file and line of an address from DWARF, inlined
 *		frames included: what eu-addr2line -f -i prints.
 *
 * Plain C over libdw and libelf: the agent (symbolize.c, on the files
 * processes map) and the extension (src/symbolize/, on debug information
 * stored in the database) name frames with the same code.
 */
#ifndef PARCA_DWARF_LINES_H
#define PARCA_DWARF_LINES_H

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct DwarfLine
{
	const char *name;			/* DW_AT_name */
	const char *linkage_name;	/* DW_AT_linkage_name, or NULL */
	const char *filename;		/* the source file of this line, "" if unknown */
	const char *comp_dir;		/* the directory a relative filename is in, or NULL */
	int64_t		start_line;		/* DW_AT_decl_line of the function, 0 if unknown */
	int64_t		line;			/* 0 if unknown */
} DwarfLine;

/*
 * The chain of frames at ELF virtual address addr, innermost (inlined)
 * first, down to the function that contains it; at most max.  Returns
 * their number, 0 when DWARF does not know the address.  The strings
 * belong to dw.
 */
extern int	dwarf_lines_at(Dwarf *dw, uint64_t addr, DwarfLine *lines, int max);

/* The same, in the compilation unit (DIE) known to hold addr. */
extern int	dwarf_lines_in_unit(Dwarf_Die *cu, uint64_t addr, DwarfLine *lines, int max);

/*
 * The ELF virtual address of a file offset, through the file's PT_LOAD
 * segments: a separate debug file keeps the program headers of the file
 * it was split from, so offsets of the original map the same way.
 */
extern bool parca_elf_vaddr(Elf *elf, uint64_t offset, uint64_t *vaddr);

/* The section of this name (its header in *shdr), or NULL; NULL elf: NULL. */
extern Elf_Scn *parca_elf_section(Elf *elf, const char *name, GElf_Shdr *shdr);

#endif							/* PARCA_DWARF_LINES_H */
