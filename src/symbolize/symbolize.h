/*
 * symbolize.h
 *		Symbolization in the database: debug information stored by build
 *		id (parca.debuginfo) names the locations of that build id.
 *
 *	debugfile.c		an ELF file from untrusted bytes: validated, then read
 *					with libelf and libdw (DWARF, else the symbol table)
 *	symbolize.c		parca_debuginfo_upload, parca_symbolize: locations of a
 *					build id named through the metastore
 *	worker.c		what the maintenance worker runs between its rounds:
 *					symbolizes what arrived since the last pass, fetches
 *					missing debug information (debuginfod)
 *	debuginfod.c	the debuginfod client (libcurl)
 */
#ifndef PARCA_SYMBOLIZE_H
#define PARCA_SYMBOLIZE_H

#include "postgres.h"

/* Settings, defined in symbolize_init. */
extern int	symbolize_max_debuginfo_size;

/* Called from _PG_init: settings. */
extern void symbolize_init(void);

/*
 * In a database's maintenance worker: waits wait_ms, or until its latch is
 * set, and symbolizes every parca.symbolize_interval meanwhile.
 */
extern void symbolize_while_waiting(long wait_ms);

/*
 * Name the unnamed locations of this build id from its stored debug
 * information; returns how many were named (0 when none is stored).
 * Connected to SPI.
 */
extern int64 symbolize_build_id(const char *build_id);

#endif							/* PARCA_SYMBOLIZE_H */
