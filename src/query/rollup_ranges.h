/*
 * rollup_ranges.h
 *		Which parts of a query's time range are read from the weekly, daily
 *		or hourly rollups and which from raw sample rows (docs/rollups.md).
 */
#ifndef PARCA_QUERY_ROLLUP_RANGES_H
#define PARCA_QUERY_ROLLUP_RANGES_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"

/* One part of a time range, inclusive at both ends, and its table. */
typedef struct QueryRange
{
	TimestampTz start;
	TimestampTz stop;
	Oid			relid;
	const char *table;			/* parca.samples, parca.samples_hourly, _daily or _weekly */
	bool		raw;			/* parca.samples */
} QueryRange;

/*
 * [start, stop] cut into parts, in time order: each run of whole weeks
 * that are rolled up (parca.rollup_weeks) read from parca.samples_weekly,
 * within the rest each run of whole days rolled up (parca.rollup_days)
 * from parca.samples_daily, within the rest each run of whole hours
 * rolled up (parca.rollup_hours)
 * from parca.samples_hourly, the rest (the ragged edges, what is not
 * rolled up yet) from parca.samples; one part of parca.samples when
 * parca.rollups is off.  Raises rollup_ranges_notice(), naming caller
 * (none when caller is NULL).  The caller is connected to SPI; the parts
 * are read under the same snapshot.
 */
extern List *rollup_ranges(TimestampTz start, TimestampTz stop, const char *caller);

/*
 * Raises a NOTICE, naming caller, when one of ranges read from raw rows
 * reaches back past parca.retention, where raw rows may have been
 * dropped.
 */
extern void rollup_ranges_notice(List *ranges, const char *caller);

#endif							/* PARCA_QUERY_ROLLUP_RANGES_H */
