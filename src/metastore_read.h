/*
 * metastore_read.h
 *		Reading the metastore: locations, functions and mappings by id.
 *
 * The one way C code reads parca.locations, parca.functions and
 * parca.mappings (writing is metastore.h's).  Each call is one query,
 * whatever the number of ids.  Callers are connected to SPI; what is
 * returned lives in the memory context current at the call.  Ids that are
 * not stored are left out.  Locations come in no particular order;
 * functions and mappings sorted by id, for the metastore_find_* functions.
 */
#ifndef PARCA_METASTORE_READ_H
#define PARCA_METASTORE_READ_H

#include "postgres.h"

#include "metastore.h"

/*
 * The stored locations among ids.  A location has one line per function
 * id; a line number the row lacks is 0.
 */
extern MetaLocation *metastore_read_locations(const uint64 *ids, int n, int *nfound);

extern MetaFunction *metastore_read_functions(const uint64 *ids, int n, int *nfound);

extern MetaMapping *metastore_read_mappings(const uint64 *ids, int n, int *nfound);

/* An entry of what metastore_read_* returned, by id; NULL if absent. */
extern const MetaFunction *metastore_find_function(const MetaFunction *functions, int n,
												   uint64 id);
extern const MetaMapping *metastore_find_mapping(const MetaMapping *mappings, int n,
												 uint64 id);

/*
 * The ids (sorted as bigint) among location ids whose function name, or
 * with binary whose mapping's file, contains needle, case-insensitively.
 */
extern uint64 *metastore_locations_matching(const uint64 *ids, int n, const char *needle,
											bool binary, int *nfound);

#endif							/* PARCA_METASTORE_READ_H */
