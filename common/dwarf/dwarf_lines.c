/*
 * dwarf_lines.c
 *		Frames of an address from DWARF; see dwarf_lines.h.
 *
 * The innermost function or inlined instance at an address is a frame
 * named by its abstract origin; each inlined instance is called by the
 * function or instance that physically contains it in the DIE tree
 * (dwarf_getscopes_die; dwarf_getscopes itself goes on from an inlined
 * instance into its abstract definition, not to its caller).  The line of
 * the innermost frame is the line table's, the line of each caller is
 * where the instance below it was inlined (DW_AT_call_file,
 * DW_AT_call_line), as eu-addr2line -i prints them.
 */
#include "dwarf/dwarf_lines.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * The compilation unit holding addr.  .debug_aranges says, when the
 * compiler wrote it (GCC does; Clang only with -gdwarf-aranges, Go never);
 * else each unit is asked.
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

/* Entry index of the unit's file table, or "". */
static const char *
unit_file(Dwarf_Die *cu, int64_t index)
{
	Dwarf_Files *files;
	size_t		nfiles;
	const char *name;

	if (index <= 0 || dwarf_getsrcfiles(cu, &files, &nfiles) != 0 || (size_t) index >= nfiles)
		return "";
	name = dwarf_filesrc(files, (size_t) index, NULL, NULL);
	return name ? name : "";
}

int
dwarf_lines_at(Dwarf *dw, uint64_t addr, DwarfLine *lines, int max)
{
	Dwarf_Die	cu;

	if (unit_of(dw, addr, &cu) == NULL)
		return 0;
	return dwarf_lines_in_unit(&cu, addr, lines, max);
}

static bool
is_function(Dwarf_Die *d)
{
	int			tag = dwarf_tag(d);

	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/*
 * The function or inlined instance that physically contains die (not the
 * abstract definition dwarf_getscopes continues with after an inlined
 * instance); false if none.
 */
static bool
caller_of(Dwarf_Die *die, Dwarf_Die *caller)
{
	Dwarf_Die  *scopes = NULL;
	int			n = dwarf_getscopes_die(die, &scopes);
	bool		found = false;

	for (int i = 1; i < n && !found; i++)
		if (is_function(&scopes[i]))
		{
			*caller = scopes[i];
			found = true;
		}
	free(scopes);
	return found;
}

int
dwarf_lines_in_unit(Dwarf_Die *cu, uint64_t addr, DwarfLine *lines, int max)
{
	Dwarf_Die  *scopes = NULL;
	Dwarf_Die	d;
	Dwarf_Line *src;
	Dwarf_Attribute attr;
	const char *comp_dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
	int			nscopes;
	int			line = 0;
	const char *file = NULL;
	bool		found = false;
	int			n = 0;

	/* the innermost function or inlined instance at addr */
	nscopes = dwarf_getscopes(cu, addr, &scopes);
	for (int i = 0; i < nscopes && !found; i++)
		if (is_function(&scopes[i]))
		{
			d = scopes[i];
			found = true;
		}
	free(scopes);
	if (!found)
		return 0;
	if ((src = dwarf_getsrc_die(cu, addr)) != NULL)
	{
		dwarf_lineno(src, &line);
		file = dwarf_linesrc(src, NULL, NULL);
	}
	while (n < max)
	{
		const char *plain = die_string(&d, DW_AT_name);
		const char *linkage;
		int			decl_line = 0;

		if (plain == NULL)
			break;
		linkage = die_string(&d, DW_AT_linkage_name);
		if (linkage == NULL)
			linkage = die_string(&d, DW_AT_MIPS_linkage_name);
		dwarf_decl_line(&d, &decl_line);
		lines[n].name = plain;
		lines[n].linkage_name = linkage;
		lines[n].filename = file ? file : "";
		lines[n].comp_dir = comp_dir;
		lines[n].start_line = decl_line;
		lines[n].line = line;
		n++;
		if (dwarf_tag(&d) != DW_TAG_inlined_subroutine)
			break;
		/* The caller's file and line are where this instance was inlined. */
		line = (int) die_udata(&d, DW_AT_call_line);
		file = unit_file(cu, die_udata(&d, DW_AT_call_file));
		if (!caller_of(&d, &d))
			break;
	}
	return n;
}

bool
parca_elf_vaddr(Elf *elf, uint64_t offset, uint64_t *vaddr)
{
	size_t		n;

	if (elf_getphdrnum(elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++)
	{
		GElf_Phdr	ph;

		if (gelf_getphdr(elf, (int) i, &ph) != NULL && ph.p_type == PT_LOAD &&
			offset >= ph.p_offset && offset - ph.p_offset < ph.p_filesz)
		{
			*vaddr = ph.p_vaddr + (offset - ph.p_offset);
			return true;
		}
	}
	return false;
}

Elf_Scn *
parca_elf_section(Elf *elf, const char *want, GElf_Shdr *shdr)
{
	size_t		shstrndx;
	Elf_Scn    *scn = NULL;

	if (elf == NULL || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL)
	{
		const char *name;

		if (gelf_getshdr(scn, shdr) != NULL &&
			(name = elf_strptr(elf, shstrndx, shdr->sh_name)) != NULL &&
			strcmp(name, want) == 0)
			return scn;
	}
	return NULL;
}
