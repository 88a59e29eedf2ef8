/*
 * metastore.h
 *		Registering mappings, functions, locations and series.
 *
 * Callers must be connected to SPI.  Each backend remembers which ids it
 * has seen committed, so a warm ingest asks the database nothing about
 * locations it already knows; ids written by a transaction that aborts
 * are forgotten with it.
 */
#ifndef PARCA_METASTORE_H
#define PARCA_METASTORE_H

#include "postgres.h"

#include "utils/jsonb.h"

typedef struct MetaMapping
{
	uint64		id;
	const char *build_id;
	const char *file;
} MetaMapping;

typedef struct MetaFunction
{
	uint64		id;
	const char *name;
	const char *system_name;
	const char *filename;
	int64		start_line;
} MetaFunction;

typedef struct MetaLocation
{
	uint64		id;
	bool		has_mapping;
	uint64		mapping_id;
	uint64		address;		/* normalized */
	bool		is_folded;
	int			nlines;			/* innermost first */
	const uint64 *function_ids;
	const int64 *lines;
} MetaLocation;

/*
 * Stores whatever of these the metastore lacks (arrays may repeat ids),
 * and adds lines to stored locations that have none.
 */
extern void metastore_register(const MetaMapping *mappings, int nmappings,
							   const MetaFunction *functions, int nfunctions,
							   const MetaLocation *locations, int nlocations);

/* The series id of a profile type and label set, created if new. */
extern int64 metastore_series_id(const char *profile_type, Jsonb *labels);

/* Ids (or any 64-bit values) as a bigint[] datum, for SPI arguments. */
extern Datum metastore_id_array(const uint64 *ids, int n);

/* The type OIDs of the extension's stacktrace and stacktrace[]. */
extern Oid	metastore_stacktrace_type(bool array);

#endif							/* PARCA_METASTORE_H */
