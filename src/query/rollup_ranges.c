/*
 * rollup_ranges.c
 *		Which parts of a query's time range are read from the weekly, daily
 *		or hourly rollups and which from raw sample rows.
 *
 * An hour listed in parca.rollup_hours has its merge in
 * parca.samples_hourly (sql/46_rollups.sql), exactly: rows per series,
 * stack and period whose values add up to the hour's raw values; a day
 * listed in parca.rollup_days has in parca.samples_daily the sums of its
 * hours' rollup rows, and a week listed in parca.rollup_weeks has in
 * parca.samples_weekly those of its days.  So a range is read week by
 * week from the weekly rollups where it covers whole rolled-up weeks, day
 * by day from the daily ones where it covers whole rolled-up days, hour
 * by hour from the hourly ones where it covers whole rolled-up hours, and
 * from raw rows elsewhere, and the sum is the raw merge of the range.  The lists are
 * read under the caller's snapshot, as are the rows, so a period being
 * rolled up while the query runs is read from one side only.
 *
 * A period listed whose source rows were written into since it was
 * rolled up (the write log, columnar_written(), still has entries that
 * meet it, under the same snapshot) is read from the level below, as if
 * it were not rolled up: the rows it lacks are there.  Unless its
 * generation is above 0: retention dropped source rows that its rollup
 * holds, which the level below no longer has, and its rollup is read
 * (without the rows written since, until the maintenance worker's next
 * round rolls them up).
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

#include "columnar/columnar.h"
#include "maintenance/partitions.h"
#include "query/rollup_ranges.h"
#include "maintenance/rollups.h"
#include "metastore/samples_table.h"

/* A level of rollups: its table, the list of what it holds, its width. */
typedef struct Level
{
	const char *table;
	const char *list;
	int64		width;
	Oid			relid;			/* InvalidOid: not read */
} Level;

#define NLEVELS 3

static List *
add_range(List *ranges, TimestampTz start, TimestampTz stop, const Level *level)
{
	QueryRange *r;

	if (ranges != NIL)
	{
		r = llast(ranges);
		if (r->relid == level->relid && r->stop + 1 == start)
		{
			r->stop = stop;
			return ranges;
		}
	}
	r = palloc(sizeof(QueryRange));
	r->start = start;
	r->stop = stop;
	r->relid = level->relid;
	r->table = level->table;
	r->raw = level->list == NULL;
	return lappend(ranges, r);
}

/*
 * Adds [start, stop] to ranges: the runs of whole periods that levels[0]
 * lists from its table (those that rows of raw_relid were written into
 * since left out), the rest through the levels below it; the last level
 * is raw rows.
 */
static List *
add_level(List *ranges, TimestampTz start, TimestampTz stop, const Level *levels,
		  Oid raw_relid)
{
	TimestampTz cursor = start;
	TimestampTz last;
	TimestampTz *starts;
	bool	   *sealed;
	uint64		n;
	int			ret;

	if (levels->list == NULL)
		return add_range(ranges, start, stop, levels);
	/* the last period that ends within the range */
	last = TIMESTAMP_NOT_FINITE(stop) ? stop : stop - levels->width + 1;
	if (!OidIsValid(levels->relid) || start > last)
		return add_level(ranges, start, stop, levels + 1, raw_relid);
	ret = SPI_execute_with_args(psprintf("SELECT start, generation OPERATOR(pg_catalog.>) 0 FROM %s"
										 " WHERE start OPERATOR(pg_catalog.>=) $1"
										 " AND start OPERATOR(pg_catalog.<=) $2 ORDER BY start",
										 levels->list),
								2, (Oid[]) {TIMESTAMPTZOID, TIMESTAMPTZOID},
								(Datum[]) {TimestampTzGetDatum(start), TimestampTzGetDatum(last)},
								NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(ret));
	/* copied out: the levels below run queries of their own */
	n = SPI_processed;
	starts = palloc(sizeof(TimestampTz) * Max(n, 1));
	sealed = palloc(sizeof(bool) * Max(n, 1));
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;

		starts[i] = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i],
													  SPI_tuptable->tupdesc, 1, &isnull));
		if (isnull)
			starts[i] = DT_NOBEGIN;
		sealed[i] = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i],
											   SPI_tuptable->tupdesc, 2, &isnull));
		if (isnull)
			sealed[i] = false;
	}
	SPI_freetuptable(SPI_tuptable);
	for (uint64 i = 0; i < n; i++)
	{
		TimestampTz t = starts[i];

		if (TIMESTAMP_NOT_FINITE(t) || t < cursor)
			continue;
		/* written into since it was rolled up: read from the level below */
		if (!sealed[i] && columnar_written(raw_relid, t, t + levels->width - 1))
			continue;
		if (t > cursor)
			ranges = add_level(ranges, cursor, t - 1, levels + 1, raw_relid);
		ranges = add_range(ranges, t, t + levels->width - 1, levels);
		cursor = t + levels->width;
	}
	if (cursor <= stop)
		ranges = add_level(ranges, cursor, stop, levels + 1, raw_relid);
	return ranges;
}

void
rollup_ranges_notice(List *ranges, const char *caller)
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

		if (r->raw && r->start < kept_from)
		{
			ereport(NOTICE,
					(errmsg("%s: part of the range is older than parca.retention and not in rollups: its raw samples may have been dropped",
							caller),
					 errdetail("parca.retention keeps raw samples for %s; from %s the range is read from raw samples, not from whole hours, days or weeks kept in rollups.",
							   GetConfigOptionByName("parca.retention", NULL, false),
							   timestamptz_to_str(r->start)),
					 errhint("Ranges that start and end on whole hours are read from the rollups, which parca.rollup_retention and parca.rollup_daily_retention keep.")));
			return;
		}
	}
}

/*
 * The OID of rollup table name if it is to be read: parca.rollups is on,
 * the table and its list exist, and the caller may read both and is not
 * restricted to some rows of parca.samples by row-level security, which
 * the rollups, holding every series, would not apply.  Else InvalidOid.
 */
static Oid
readable_rollups(Oid raw, const char *name, const char *list)
{
	Oid			nsp = get_namespace_oid("parca", false);
	Oid			table = get_relname_relid(name, nsp);
	Oid			listed = get_relname_relid(list, nsp);

	if (!parca_rollups || !OidIsValid(table) || !OidIsValid(listed) ||
		pg_class_aclcheck(table, GetUserId(), ACL_SELECT) != ACLCHECK_OK ||
		pg_class_aclcheck(listed, GetUserId(), ACL_SELECT) != ACLCHECK_OK ||
		check_enable_rls(raw, InvalidOid, true) == RLS_ENABLED)
		return InvalidOid;
	return table;
}

List *
rollup_ranges(TimestampTz start, TimestampTz stop, const char *caller)
{
	Oid			raw = samples_table_relid();
	Level		levels[NLEVELS + 1] = {
		{"parca.samples_weekly", "parca.rollup_weeks", 7 * USECS_PER_DAY,
		readable_rollups(raw, "samples_weekly", "rollup_weeks")},
		{"parca.samples_daily", "parca.rollup_days", USECS_PER_DAY,
		readable_rollups(raw, "samples_daily", "rollup_days")},
		{"parca.samples_hourly", "parca.rollup_hours", USECS_PER_HOUR,
		readable_rollups(raw, "samples_hourly", "rollup_hours")},
		{"parca.samples", NULL, 0, raw},
	};
	List	   *ranges;

	if (start > stop)
		return NIL;
	ranges = add_level(NIL, start, stop, levels, raw);
	if (caller)
		rollup_ranges_notice(ranges, caller);
	return ranges;
}
