/*
 * debuginfod.h
 *		The debuginfod client of the symbolizer: debug information for
 *		build ids that have none, fetched from the servers that
 *		parca.debuginfod_urls names.
 */
#ifndef PARCA_DEBUGINFOD_H
#define PARCA_DEBUGINFOD_H

#include "postgres.h"

#include "nodes/pg_list.h"

/* Settings, from symbolize_worker_init. */
extern void debuginfod_init(void);

/* Whether any server is configured. */
extern bool debuginfod_enabled(void);

/*
 * Build ids (strings in cxt) with unnamed locations, no debug information
 * and no recent failure: a few per pass.  Connected to SPI.
 */
extern List *debuginfod_wanted(MemoryContext cxt);

/*
 * The build id's ELF file from the first server that has it, as a bytea
 * in the current memory context; NULL with error set when none has it.
 * Outside transactions: a transfer may take parca.debuginfod_timeout.
 */
extern bytea *debuginfod_fetch(const char *build_id, char *error, size_t errlen);

/* Note that the build id could not be had (parca.debuginfo_missing).  SPI. */
extern void debuginfod_note_missing(const char *build_id, const char *error);

/* Delete the oldest fetched files beyond parca.debuginfod_cache_size.  SPI. */
extern void debuginfod_trim_cache(void);

#endif							/* PARCA_DEBUGINFOD_H */
