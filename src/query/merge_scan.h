/*
 * merge_scan.h
 *		parca_query's merge, read straight from a parca_columnar samples table.
 */
#ifndef PARCA_QUERY_MERGE_SCAN_H
#define PARCA_QUERY_MERGE_SCAN_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "types/profile.h"

/*
 * The periods of the rows merged.  A period of 0 means unknown (Parca's
 * own agent writes such profiles): when scaling, those rows keep their
 * counts instead of being multiplied by 0.
 */
typedef struct MergePeriods
{
	int64		min_known;		/* the smallest period > 0 seen, 0 if none */
	bool		unknown_seen;	/* a row had a period <= 0 */
} MergePeriods;

struct ParallelContext;

/*
 * Adds to builders[groups[i]] the stacks of the rows of table relid
 * (parca.samples, or its rollups parca.samples_hourly and
 * parca.samples_daily, which have the same columns) of series_ids[i] in
 * [start, stop] (all to builders[0] when groups is NULL; 0 <= groups[i] <
 * ngroups), each with its value (times its period when scale and the
 * period is known), in one pass over the table, and adds what it saw to
 * *periods.  Returns false, having read nothing, when the table is not a
 * parca_columnar table this user may read directly (no row-level
 * security), or is distributed by Citus (citus.h); the caller then merges
 * with SQL.  What it read stays locked
 * (ACCESS SHARE) until the transaction ends, as a scan's tables do.  The
 * caller is connected to SPI.
 *
 * A merge shared with parallel workers ends with their exit, which takes
 * the kernel 1-3 ms after they sent their shares.  Given exiting (else
 * NULL), the merge leaves that wait there for the caller, which does its
 * own work first (a profile's bytes) and then calls
 * merge_scan_end_parallel(exiting); until then the backend stays in
 * parallel mode, where SQL may not write, so the caller runs none.
 */
extern bool merge_scan_samples(ProfileBuilder **builders, int ngroups, Oid relid,
							   const int64 *series_ids, const int32 *groups, int nseries,
							   TimestampTz start, TimestampTz stop, bool scale,
							   MergePeriods *periods, struct ParallelContext **exiting);

/* Waits for the exit of the workers of *exiting, if any, and clears it. */
extern void merge_scan_end_parallel(struct ParallelContext **exiting);

/*
 * Where merge_scan_rows() sends the rows it reads, a chunk group at a
 * time: n rows, row sel[i] with value values[i] (scaled as above), its
 * time time[sel[i]], and its stack either entry[sel[i]], an index into
 * dict (the stripe's stacks, ndict of them, the same for every chunk
 * group of a stripe: new_stripe says when the stripe, so the dictionary,
 * changed), or, when entry is NULL, the stacktrace datum stack[sel[i]].
 * Rows whose stack is NULL are left out.
 */
typedef struct MergeRowSink MergeRowSink;
struct MergeRowSink
{
	void		(*rows) (MergeRowSink *sink, const Datum *time, const int *sel,
						 const int64 *values, int n, const int64 *entry, bool new_stripe,
						 char **dict, int ndict, const Datum *stack);
};

/*
 * merge_scan_samples() for one group whose rows go to sink, not into a
 * profile: for merges that need each row's time.
 */
extern bool merge_scan_rows(MergeRowSink *sink, Oid relid, const int64 *series_ids, int nseries,
							TimestampTz start, TimestampTz stop, bool scale,
							MergePeriods *periods);

#endif							/* PARCA_QUERY_MERGE_SCAN_H */
