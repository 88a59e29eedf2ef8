/*
 * metastore_cache.h
 *		The agent's cache of the server's metastore: the mappings,
 *		functions and locations it has seen, with their content ids
 *		(common/ids/ids.c, as the server computes them) and whether the
 *		server has them yet.
 *
 * Bounded in bytes: ms_trim() forgets, when the copy holds more, the
 * locations not used during the last flush interval and the functions and
 * mappings no other location uses, and everything if that is not enough.
 * Forgetting is safe because ids are content hashes: a location seen
 * again gets the same id, and sending a row twice is harmless (the server
 * inserts with ON CONFLICT DO NOTHING).
 */
#ifndef AGENT_METASTORE_CACHE_H
#define AGENT_METASTORE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct MsMapping
{
	uint64_t	id;
	char	   *build_id;		/* hex, "" if none */
	char	   *file;
	bool		persisted;		/* the server has it */
	bool		referenced;		/* by a location, while trimming */
} MsMapping;

typedef struct MsFunction
{
	uint64_t	id;
	char	   *name;			/* demangled */
	char	   *system_name;	/* as in the symbol table */
	char	   *filename;		/* source file, "" if unknown */
	int64_t		start_line;
	bool		persisted;
	bool		referenced;		/* by a location, while trimming */
} MsFunction;

typedef struct MsLocation
{
	uint64_t	id;
	uint64_t	mapping_id;		/* 0: none */
	uint64_t	address;		/* normalized to the mapped file */
	int			nlines;
	uint64_t   *function_ids;	/* innermost first */
	int64_t    *lines;
	bool		symbolized;		/* lines are final (possibly none) */
	bool		persisted;
	uint64_t	last_used;		/* the flush interval it was last seen in */
} MsLocation;

/* One line of a symbolized location, as the symbolizer finds it. */
typedef struct FrameLine
{
	const char *name;
	const char *system_name;
	const char *filename;
	int64_t		start_line;
	int64_t		line;
} FrameLine;

/* Register a mapping; returns its id. */
extern uint64_t ms_mapping(const char *build_id, const char *file);

/*
 * The location already registered for this address in this mapping (as
 * passed to ms_location), or NULL.
 */
extern MsLocation *ms_find_address(uint64_t mapping_id, uint64_t address);

/*
 * Register a location in the mapping (build_id, file), or in no mapping if
 * file is NULL, with its lines (innermost first) and their functions.  A
 * location in a mapping with a build id is identified by its address
 * alone, so it can be registered with symbolized = false and no lines,
 * and get its lines later from ms_set_lines().
 */
extern MsLocation *ms_location(const char *build_id, const char *file,
							   uint64_t address, int nlines,
							   const FrameLine *lines, bool symbolized);

/* Give a location registered unsymbolized its lines. */
extern void ms_set_lines(MsLocation *loc, int nlines, const FrameLine *lines);

extern MsMapping *ms_get_mapping(uint64_t id);
extern MsFunction *ms_get_function(uint64_t id);
extern MsLocation *ms_get_location(uint64_t id);

/*
 * The location with this id, counted as used in this interval (as a
 * location found by ms_find_address or registered is), or NULL if the copy
 * no longer holds it.
 */
extern MsLocation *ms_use_location(uint64_t id);

/* At a flush: bring the copy down to max_bytes (see above). */
extern void ms_trim(size_t max_bytes);

/*
 * Forget which rows the server has: after a collection of the server's
 * metastore (parca_metastore_gc) any of them may be gone, and is sent
 * again when a batch next needs it.
 */
extern void ms_forget_persisted(void);

/* Bytes the copy holds now. */
extern size_t ms_bytes(void);

#endif							/* AGENT_METASTORE_CACHE_H */
