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

#include "metastore/metastore.h"

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

/* What of a location a filter looks at. */
typedef enum LocationField
{
	LOCATION_FUNCTION,			/* the name of any of its functions (inlined ones too) */
	LOCATION_FILE,				/* the source file of any of its functions */
	LOCATION_BINARY,			/* its mapping's file name, without the directories */
	LOCATION_MAPPING_PATH,		/* its mapping's file, the whole path */
	LOCATION_ADDRESS			/* its address, as a decimal number (only NAME_EQUAL) */
} LocationField;

/* How the field is compared with the text. */
typedef enum NameMatch
{
	NAME_EQUAL,
	NAME_CONTAINS,
	NAME_STARTS_WITH,
	NAME_CONTAINS_ANY_CASE		/* contains, case-insensitively */
} NameMatch;

/* The ids (sorted as bigint) among location ids whose field matches text. */
extern uint64 *metastore_locations_matching(const uint64 *ids, int n, LocationField field,
											NameMatch match, const char *text, int *nfound);

#endif							/* PARCA_METASTORE_READ_H */
