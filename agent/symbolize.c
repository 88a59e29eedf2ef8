/*
 * symbolize.c
 *		ELF and DWARF symbolization; see symbolize.h.
 *
 * A file offset becomes the ELF virtual address that the symbol table and
 * DWARF use through the file's PT_LOAD segments: the same for a PIE, a
 * shared library or a fixed-address executable, and whatever address ASLR
 * put it at in the process.  A separate debug file (found by build id)
 * has the same addresses as the file it was split from.
 */
#include "symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "demangle.h"

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

static char demangled[SYMBOLIZE_MAX_LINES][1024];

/* Fill a line for a function known by its linkage name or plain name. */
static void
set_function(FrameLine *l, int slot, const char *linkage, const char *plain)
{
	const char *sys = linkage ? linkage : plain;

	l->system_name = sys;
	l->name = linkage ? demangle(linkage, demangled[slot], sizeof(demangled[slot])) : plain;
}

/*
 * The compilation unit holding addr.  .debug_aranges says, when the
 * compiler wrote it (GCC does, Clang only with -gdwarf-aranges); else each
 * unit is asked.
 */
static Dwarf_Die *
unit_of(Dwarf *dw, uint64_t addr, Dwarf_Die *result)
{
	Dwarf_Off	off = 0;
	Dwarf_Off	next;
	size_t		hsize;
	Dwarf_Aranges *aranges;
	size_t		naranges = 0;

	if (dwarf_addrdie(dw, addr, result) != NULL)
		return result;
	if (dwarf_getaranges(dw, &aranges, &naranges) == 0 && naranges > 0)
		return NULL;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0)
	{
		if (dwarf_offdie(dw, off + hsize, result) != NULL && dwarf_haspc(result, addr) > 0)
			return result;
		off = next;
	}
	return NULL;
}

/* The chain of inlined frames at addr down to its function, from DWARF. */
static int
dwarf_lines(Dwarf *dw, uint64_t addr, FrameLine *lines)
{
	Dwarf_Die	cu;
	Dwarf_Die  *scopes = NULL;
	Dwarf_Line *src;
	int			nscopes;
	int			line = 0;
	int			n = 0;

	if (unit_of(dw, addr, &cu) == NULL)
		return 0;
	nscopes = dwarf_getscopes(&cu, addr, &scopes);
	if ((src = dwarf_getsrc_die(&cu, addr)) != NULL)
		dwarf_lineno(src, &line);
	for (int i = 0; i < nscopes && n < SYMBOLIZE_MAX_LINES; i++)
	{
		Dwarf_Die  *d = &scopes[i];
		int			tag = dwarf_tag(d);
		const char *plain;
		const char *linkage;
		const char *file;
		int			decl_line = 0;

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		plain = die_string(d, DW_AT_name);
		if (plain == NULL)
			break;
		linkage = die_string(d, DW_AT_linkage_name);
		if (linkage == NULL)
			linkage = die_string(d, DW_AT_MIPS_linkage_name);
		set_function(&lines[n], n, linkage, plain);
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
	return n;
}

int
symbolize(ObjFile *f, uint64_t file_offset, FrameLine *lines)
{
	uint64_t	addr;
	Dwarf	   *dw;
	const char *name;
	int			n = 0;

	if (!objfile_vaddr(f, file_offset, &addr))
		return 0;
	if ((dw = objfile_dwarf(f)) != NULL)
		n = dwarf_lines(dw, addr, lines);
	if (n > 0)
		return n;
	/* No DWARF: the symbol table (or the debug file's). */
	if ((name = objfile_symbol(f, addr)) == NULL)
		return 0;
	set_function(&lines[0], 0, name, name);
	lines[0].filename = "";
	lines[0].start_line = 0;
	lines[0].line = 0;
	return 1;
}
