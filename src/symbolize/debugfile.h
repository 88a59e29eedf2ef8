/*
 * debugfile.h
 *		An ELF file held in memory (bytes from an upload or a debuginfod
 *		server: untrusted), read with libelf and libdw.
 */
#ifndef PARCA_DEBUGFILE_H
#define PARCA_DEBUGFILE_H

#include "postgres.h"

typedef struct DebugFile DebugFile;

/* One frame of an address, innermost first; strings are valid text. */
typedef struct DebugLine
{
	const char *name;
	const char *system_name;
	const char *filename;
	int64		start_line;
	int64		line;
} DebugLine;

/* Deepest chain of inlined frames named for one address. */
#define DEBUGFILE_MAX_LINES 32

/*
 * Validate data[0..len) as an ELF file of this build id and open it:
 * ERROR (22P03, or 54000 when its debug sections would decompress past
 * the limit) if it is not one.  The file's libelf and libdw memory is
 * released with the current memory context, which must outlive data.
 */
extern DebugFile *debugfile_open(const char *data, Size len, const char *build_id);

/*
 * The frames at an offset into the file the build id names (a location's
 * normalized address): from a Go program's .gopclntab, else DWARF (also
 * where the file lacks the table's inlined calls), else the symbol table.  Returns their number, 0 when nothing is known.  The
 * strings stay valid as long as the file.
 */
extern int	debugfile_lines(DebugFile *f, uint64 file_offset, DebugLine *lines);

#endif							/* PARCA_DEBUGFILE_H */
