/*
 * symbols.h
 *		User-space symbolization: ELF files by build id, their symbol
 *		tables and DWARF line information through libdwfl, separate debug
 *		files (/usr/lib/debug/.build-id/), inlined frames and demangling.
 *
 * Two caches: file identity (device, inode) -> build id, bounded by
 * symbols_trim(); build id -> open libdwfl session, the costly one, which
 * lives only until symbols_close_sessions().
 */
#ifndef AGENT_SYMBOLS_H
#define AGENT_SYMBOLS_H

#include <stdint.h>

#include "metastore.h"

/* Deepest chain of inlined frames reported for one address. */
#define SYMBOLS_MAX_LINES 16

/*
 * The build id (hex, "" if the file has none or cannot be read) of the
 * file at path (opened as open_path) with this device and inode.  The
 * string stays valid until symbols_trim().
 */
extern const char *symbols_build_id(const char *open_path, uint64_t dev,
									uint64_t ino);

/*
 * Symbolize file_offset in the file (the one symbols_build_id was asked
 * about).  Fills lines[] innermost first and returns their number; 0 when
 * nothing is known.  The strings stay valid until the next call.
 */
extern int	symbols_lookup(const char *open_path, uint64_t dev, uint64_t ino,
						   uint64_t file_offset, FrameLine *lines);

/*
 * Close every open libdwfl session.  Symbolization opens a file's session
 * when it first needs it; the agent closes them all after each flush,
 * having looked up all the addresses it waited with, one file at a time.
 */
extern void symbols_close_sessions(void);

/* Forget the files seen (their build ids) if there are more than max_files. */
extern void symbols_trim(int max_files);

#endif							/* AGENT_SYMBOLS_H */
