/*
 * symbolize_internal.h
 *		What the files of src/symbolize/ share among themselves.
 */
#ifndef PARCA_SYMBOLIZE_INTERNAL_H
#define PARCA_SYMBOLIZE_INTERNAL_H

#include "postgres.h"

#include "nodes/pg_list.h"

/* The role the worker works as, and that may upload (sql/75_symbolize.sql). */
#define SYMBOLIZE_ROLE "parca_debuginfo"

/* symbolize.c: ERROR unless build_id is 2 to 1024 hexadecimal digits. */
extern void symbolize_check_build_id(const char *build_id);

/*
 * symbolize.c: validate elf as the build id's ELF file, store it (source:
 * "upload" or "debuginfod") and name the build id's locations; returns how
 * many were named.  Connected to SPI.
 */
extern int64 symbolize_store(const char *build_id, bytea *elf, const char *source);

/* symbolize.c: the first column of the last SPI result, as strings in cxt. */
extern List *symbolize_first_column(MemoryContext cxt);

/*
 * guard.c: the worker notes the build id whose file it reads (fetch: one
 * fetched from debuginfod, else a stored one) until it is done with it;
 * symbolize_guard_recover, at the start of a pass, in a transaction
 * connected to SPI, stops reading a build id whose file was being read
 * when the server went down twice in a row.
 */
extern void symbolize_guard_begin(const char *build_id, bool fetch);
extern void symbolize_guard_end(void);
extern bool symbolize_guard_noted(void);	/* a note is there */
extern void symbolize_guard_recover(void);

/* worker.c: settings, from symbolize_init. */
extern void symbolize_worker_init(void);

#endif							/* PARCA_SYMBOLIZE_INTERNAL_H */
