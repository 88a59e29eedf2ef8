/*
 * frame_names.h
 *		User-space symbolization: a Go program's .gopclntab (inlined frames,
 *		source files and lines, read in place), else DWARF (the same) where
 *		a file's DWARF is cheap to read, else its symbol table (PLT stubs
 *		named target@plt); C++ and Rust names demangled.
 *
 * The files, their symbol tables and their DWARF handles are the shared
 * per-file cache's (objfile.h).
 */
#ifndef AGENT_FRAME_NAMES_H
#define AGENT_FRAME_NAMES_H

#include <stdint.h>

#include "metastore_cache.h"
#include "objfile.h"

/* Deepest chain of inlined frames reported for one address. */
#define SYMBOLIZE_MAX_LINES 16

/*
 * Symbolize file_offset in the file.  Fills lines[] innermost first and
 * returns their number; 0 when nothing is known.  The strings stay valid
 * until the next call or the next objfile_end_flush().
 */
extern int	symbolize(ObjFile *f, uint64_t file_offset, FrameLine *lines);

#endif							/* AGENT_FRAME_NAMES_H */
