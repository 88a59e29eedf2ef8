/*
 * merge_scan.h
 *		parca_query's merge, read straight from a parca_columnar samples table.
 */
#ifndef PARCA_QUERY_MERGE_SCAN_H
#define PARCA_QUERY_MERGE_SCAN_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "profile.h"

/*
 * Adds to b the stacks of the parca.samples rows of the given series in
 * [start, stop], each with its value (times its period when scale), and
 * sets *min_period to the smallest period seen (left alone if none).
 * Returns false, having read nothing, when parca.samples is not a
 * parca_columnar table this user may read directly (no row-level
 * security); the caller then merges with SQL.  The caller is connected
 * to SPI.
 */
extern bool merge_scan_samples(ProfileBuilder *b, const int64 *series_ids, int nseries,
							   TimestampTz start, TimestampTz stop, bool scale,
							   int64 *min_period);

#endif							/* PARCA_QUERY_MERGE_SCAN_H */
