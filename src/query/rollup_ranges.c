/*
 * rollup_ranges.c
 *		Which parts of a query's time range are read from the hourly
 *		rollups and which from raw sample rows.
 *
 * An hour listed in parca.rollup_hours has its merge in
 * parca.samples_hourly (sql/46_rollups.sql), exactly: rows per series,
 * stack and period whose values add up to the hour's raw values.  So a
 * range is read hour by hour from the rollups where it covers whole
 * rolled-up hours, and from raw rows elsewhere, and the sum is the raw
 * merge of the range.  The list of rolled-up hours is read under the
 * caller's snapshot, as are the rows, so an hour being rolled up while
 * the query runs is read from one side only.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/timestamp.h"

#include "partitions.h"
#include "query/rollup_ranges.h"
#include "rollups.h"
#include "samples_table.h"

static List *
add_range(List *ranges, TimestampTz start, TimestampTz stop, Oid relid, bool hourly)
{
	QueryRange *r;

	if (ranges != NIL)
	{
		r = llast(ranges);
		if (r->hourly == hourly && r->stop + 1 == start)
		{
			r->stop = stop;
			return ranges;
		}
	}
	r = palloc(sizeof(QueryRange));
	r->start = start;
	r->stop = stop;
	r->relid = relid;
	r->hourly = hourly;
	return lappend(ranges, r);
}

/* Raises the NOTICE when a raw part reaches back past parca.retention. */
static void
check_retention(List *ranges, const char *caller)
{
	int64		retention = partitions_retention_seconds();
	TimestampTz kept_from;
	ListCell   *lc;

	if (retention <= 0)
		return;
	kept_from = TimestampTzPlusMilliseconds(GetCurrentTransactionStartTimestamp(),
											-retention * 1000);
	foreach(lc, ranges)
	{
		QueryRange *r = lfirst(lc);

		if (!r->hourly && r->start < kept_from)
		{
			ereport(NOTICE,
					(errmsg("%s: part of the range is older than parca.retention and not in hourly rollups: its raw samples may have been dropped",
							caller),
					 errdetail("parca.retention keeps raw samples for %s; from %s the range is read from raw samples, not from whole hours kept in rollups.",
							   GetConfigOptionByName("parca.retention", NULL, false),
							   timestamptz_to_str(r->start)),
					 errhint("Ranges that start and end on whole hours are read from the hourly rollups, which parca.rollup_retention keeps.")));
			return;
		}
	}
}

/*
 * parca.samples_hourly, if the rollups are to be read: parca.rollups is on,
 * and the caller may read them (SELECT on parca.samples_hourly and
 * parca.rollup_hours) and is not restricted to some rows of parca.samples
 * by row-level security, which the rollups, holding every series, would
 * not apply.  Else InvalidOid.
 */
static Oid
readable_rollups(Oid raw)
{
	Oid			hourly;
	Oid			hours;

	if (!parca_rollups)
		return InvalidOid;
	hourly = samples_table_hourly_relid();
	hours = get_relname_relid("rollup_hours", get_namespace_oid("parca", false));
	if (!OidIsValid(hourly) || !OidIsValid(hours) ||
		pg_class_aclcheck(hourly, GetUserId(), ACL_SELECT) != ACLCHECK_OK ||
		pg_class_aclcheck(hours, GetUserId(), ACL_SELECT) != ACLCHECK_OK ||
		check_enable_rls(raw, InvalidOid, true) == RLS_ENABLED)
		return InvalidOid;
	return hourly;
}

List *
rollup_ranges(TimestampTz start, TimestampTz stop, const char *caller)
{
	Oid			raw = samples_table_relid();
	Oid			hourly = readable_rollups(raw);
	List	   *ranges = NIL;
	TimestampTz cursor = start;
	TimestampTz last_hour;
	int			ret;

	if (start > stop)
		return NIL;
	/* the last hour that ends within the range */
	last_hour = TIMESTAMP_NOT_FINITE(stop) ? stop : stop - USECS_PER_HOUR + 1;
	if (OidIsValid(hourly) && start <= last_hour)
	{
		ret = SPI_execute_with_args("SELECT hour FROM parca.rollup_hours"
									" WHERE hour OPERATOR(pg_catalog.>=) $1"
									" AND hour OPERATOR(pg_catalog.<=) $2 ORDER BY hour",
									2, (Oid[]) {TIMESTAMPTZOID, TIMESTAMPTZOID},
									(Datum[]) {TimestampTzGetDatum(start),
									TimestampTzGetDatum(last_hour)},
									NULL, true, 0);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(ret));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			bool		isnull;
			TimestampTz h = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i],
															  SPI_tuptable->tupdesc, 1,
															  &isnull));

			if (isnull || TIMESTAMP_NOT_FINITE(h))
				continue;
			if (h > cursor)
				ranges = add_range(ranges, cursor, h - 1, raw, false);
			ranges = add_range(ranges, h, h + USECS_PER_HOUR - 1, hourly, true);
			cursor = h + USECS_PER_HOUR;
		}
		SPI_freetuptable(SPI_tuptable);
	}
	if (cursor <= stop)
		ranges = add_range(ranges, cursor, stop, raw, false);
	check_retention(ranges, caller);
	return ranges;
}
