/*
 * frame_names.c
 *		ELF and DWARF symbolization; see frame_names.h.
 *
 * A file offset becomes the ELF virtual address that the symbol table and
 * DWARF use through the file's PT_LOAD segments: the same for a PIE, a
 * shared library or a fixed-address executable, and whatever address ASLR
 * put it at in the process.  A separate debug file (found by build id)
 * has the same addresses as the file it was split from.  A Go program is
 * named from its .gopclntab (file, line and inlined calls, read in place;
 * its DWARF is compressed, too dear to read, objfile.h), first, as the
 * database names it, so that both give a function the same row.
 */
#include "frame_names.h"

#include <stdbool.h>
#include <stdio.h>

#include "dwarf/dwarf_lines.h"
#include "demangle.h"

static char demangled[SYMBOLIZE_MAX_LINES][1024];

/* Fill a line for a function known by its linkage name or plain name. */
static void
set_function(FrameLine *l, int slot, const char *linkage, const char *plain)
{
	const char *sys = linkage ? linkage : plain;

	l->system_name = sys;
	l->name = linkage ? demangle(linkage, demangled[slot], sizeof(demangled[slot])) : plain;
}

/* The chain of inlined frames at addr down to its function, from DWARF. */
static int
dwarf_frames(Dwarf *dw, uint64_t addr, FrameLine *lines)
{
	static char paths[SYMBOLIZE_MAX_LINES][4096];
	DwarfLine	dl[SYMBOLIZE_MAX_LINES];
	int			n = dwarf_lines_at(dw, addr, dl, SYMBOLIZE_MAX_LINES);

	for (int i = 0; i < n; i++)
	{
		set_function(&lines[i], i, dl[i].linkage_name, dl[i].name);
		lines[i].filename = dl[i].filename;
		/* a relative file is in the unit's compilation directory */
		if (dl[i].filename[0] != '/' && dl[i].filename[0] != '\0' && dl[i].comp_dir)
		{
			snprintf(paths[i], sizeof(paths[i]), "%s/%s", dl[i].comp_dir, dl[i].filename);
			lines[i].filename = paths[i];
		}
		lines[i].start_line = dl[i].start_line;
		lines[i].line = dl[i].line;
	}
	return n;
}

/*
 * The chain of inlined frames at addr down to its function, from
 * .gopclntab; *complete as gopclntab_lines says.
 */
static int
go_frames(const GoPclntab *t, uint64_t addr, FrameLine *lines, bool *complete)
{
	GoLine		gl[SYMBOLIZE_MAX_LINES];
	int			n = gopclntab_lines(t, addr, gl, SYMBOLIZE_MAX_LINES, complete);

	for (int i = 0; i < n; i++)
	{
		lines[i].name = lines[i].system_name = gl[i].function;
		lines[i].filename = gl[i].filename;
		lines[i].start_line = gl[i].start_line;
		lines[i].line = gl[i].line;
	}
	return n;
}

int
symbolize(ObjFile *f, uint64_t file_offset, FrameLine *lines)
{
	uint64_t	addr;
	Dwarf	   *dw;
	const GoPclntab *go;
	const char *name;
	bool		complete = true;
	int			n = 0;
	int			ndwarf;

	if (!objfile_vaddr(f, file_offset, &addr))
		return 0;

	/*
	 * A Go program: its own table, as the database reads it; DWARF where
	 * the table cannot name the inlined calls at addr.
	 */
	if ((go = objfile_gopclntab(f)) != NULL)
		n = go_frames(go, addr, lines, &complete);
	if ((n == 0 || !complete) && (dw = objfile_dwarf(f)) != NULL &&
		(ndwarf = dwarf_frames(dw, addr, lines)) > 0)
		return ndwarf;
	if (n > 0)
		return n;
	/* Neither: the symbol table (or the debug file's). */
	if ((name = objfile_symbol(f, addr)) == NULL)
		return 0;
	set_function(&lines[0], 0, name, name);
	lines[0].filename = "";
	lines[0].start_line = 0;
	lines[0].line = 0;
	return 1;
}
