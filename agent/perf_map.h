/*
 * perf_map.h
 *		Reading a perf map (/tmp/perf-PID.map), the text file in which
 *		runtimes with a JIT compiler name their code for perf: one line per
 *		piece of code, "START SIZE NAME" (hexadecimal, with or without 0x),
 *		written by Node.js (--perf-basic-prof), .NET (DOTNET_PerfMapEnabled),
 *		Erlang (+JPperf true), CPython 3.12 (-X perf) and JVMs on request
 *		(jcmd Compiler.perfmap).
 *
 * The file grows as code is compiled: each read takes what was added since
 * the previous one.  A file that was replaced or rewritten (another inode,
 * shorter than what was read, or other bytes where the last read ended) is
 * read again from its start.  V8's names carry their source,
 * "JS:*fib /app/fib.js:12:3" (older releases "LazyCompile:*fib ..."): the
 * file and line are taken apart from the name.
 */
#ifndef AGENT_PERF_MAP_H
#define AGENT_PERF_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jit_table.h"

typedef struct PerfMapReader
{
	uint64_t	dev;
	uint64_t	ino;
	uint64_t	offset;			/* through the last whole line read */
	uint64_t	tail_hash;		/* of the bytes just before offset */
	uint32_t	tail_len;
	bool		skipping;		/* inside a line too long to keep */
} PerfMapReader;

/*
 * Read into t what the map open at fd holds beyond what r has read, at
 * most max_read bytes now (the rest at the next call); lines that are not
 * "START SIZE NAME" are skipped.  When the file was replaced or rewritten,
 * r and t start over.  Returns whether anything changed in t.
 */
extern bool perf_map_read(PerfMapReader *r, int fd, JitTable *t, size_t max_read);

/*
 * V8's "NAME FILE:LINE:COLUMN" (or FILE:LINE), in name[0..len): the
 * position of FILE, its length and the line; false for any other name.
 * (jitdump's names are V8's too.)
 */
extern bool perf_map_split_source(const char *name, size_t len, size_t *file_at,
								  size_t *file_len, int32_t *line);

#endif							/* AGENT_PERF_MAP_H */
