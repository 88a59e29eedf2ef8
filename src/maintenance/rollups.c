/*
 * rollups.c
 *		The settings of the hourly, daily and weekly rollups of parca.samples.
 *
 * What is done lives in SQL (sql/46_rollups.sql): the maintenance worker
 * (src/maintenance/partitions.c) calls parca_maintain_rollups() every round, and
 * parca_query reads the rollups (src/query/rollup_ranges.c).  One
 * setting turns both off: parca.rollups.  In a session it only decides
 * whether that session's queries read rollups; the worker follows the
 * server's configuration.
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "utils/guc.h"

#include "maintenance/rollups.h"
#include "maintenance/maintenance_internal.h"

#define SECONDS_PER_MINUTE 60

bool		parca_rollups = true;
static int	rollup_retention_min = 0;
static int	rollup_daily_retention_min = 0;

void
rollups_init(void)
{
	DefineCustomBoolVariable("parca.rollups",
							 "Whether hourly, daily and weekly rollups of parca.samples are kept and read.",
							 "Off in the server's configuration, the maintenance worker writes none; off in a session, its queries read raw rows only.",
							 &parca_rollups, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.rollup_retention",
							"Age past which hourly rollups are dropped; 0 keeps them.",
							"A week's partition of parca.samples_hourly goes once its whole range is older.",
							&rollup_retention_min, 0, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MIN, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.rollup_daily_retention",
							"Age past which daily and weekly rollups are dropped; 0 keeps them.",
							"A 28 days' partition of parca.samples_daily or parca.samples_weekly goes once its whole range is older.",
							&rollup_daily_retention_min, 0, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MIN, NULL, NULL, NULL);
}

PG_FUNCTION_INFO_V1(parca_rollup_settings);

/* (enabled, retention_seconds, daily_retention_seconds). */
Datum
parca_rollup_settings(PG_FUNCTION_ARGS)
{
	Datum		values[3];

	values[0] = BoolGetDatum(parca_rollups);
	values[1] = Int64GetDatum((int64) rollup_retention_min * SECONDS_PER_MINUTE);
	values[2] = Int64GetDatum((int64) rollup_daily_retention_min * SECONDS_PER_MINUTE);
	PG_RETURN_DATUM(settings_row(fcinfo, values));
}
