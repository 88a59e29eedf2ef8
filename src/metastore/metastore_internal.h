/*
 * metastore_internal.h
 *		Between metastore.c (registering) and metastore_cache.c (what this
 *		backend knows to be stored); nothing outside src/metastore/ uses it.
 */
#ifndef PARCA_METASTORE_INTERNAL_H
#define PARCA_METASTORE_INTERNAL_H

#include "postgres.h"

/*
 * Every use of the caches comes here first: the place to refuse a database
 * whose extension is older than this library, and to forget what an
 * invalidation (TRUNCATE, DROP, the garbage collection) removed.
 */
extern void metastore_cache_begin(void);

/*
 * Stored already, committed or by this transaction, and (for locations
 * that now have lines) no symbolization due.
 */
extern bool metastore_cache_known(uint64 id, bool have_lines);

/* This transaction stored id (a location with lines: symbolized). */
extern void metastore_cache_remember_id(uint64 id, bool symbolized);

/* The series of key (profile type, NUL, labels as text), if known. */
extern bool metastore_cache_series(uint64 key_hash, const char *key, Size key_len,
								   int64 *series_id);

/* This transaction found or created the series of key. */
extern void metastore_cache_remember_series(uint64 key_hash, const char *key, Size key_len,
											int64 series_id);

/* The stacktrace type's OID (array: its array type's), InvalidOid if not known. */
extern Oid	metastore_cache_stacktrace_type(bool array);
extern void metastore_cache_set_stacktrace_type(Oid type, Oid array_type);

#endif							/* PARCA_METASTORE_INTERNAL_H */
