/*
 * partitions.c
 *		The settings of parca.samples' time partitions, and the maintenance
 *		worker that keeps them.
 *
 * What is done lives in SQL (parca_maintain_partitions() and
 * parca_metastore_gc(), sql/41_partitions.sql and sql/45_metastore_gc.sql), so
 * that it runs the same by hand, from cron, or here.  The worker is its
 * own process, not a task of the scrape worker: partitions must be made
 * whether or not anything is scraped (parca.scrape_enabled = off, an
 * agent-only installation), and the DDL it runs waits for locks (up to
 * the lock_timeout the functions set), which must not hold up the scrape
 * loop's stores or its HTTP transfers.  The launcher (src/workers/) starts
 * it in every database that has the extension; between its rounds it
 * runs the symbolizer, whose work waits as well as the rounds' does.
 */
#include "postgres.h"

#include <limits.h>

#include "access/xact.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

#include "installation/citus.h"
#include "installation/extension_version.h"
#include "maintenance/partitions.h"
#include "maintenance/maintenance_internal.h"
#include "symbolize/symbolize.h"
#include "workers/workers.h"

PGDLLEXPORT void parca_maintenance_worker_main(Datum arg);

#define SECONDS_PER_MINUTE 60

static int	partition_interval_min = 24 * 60;
static int	retention_min = 0;
static int	partition_premake = 2;
static int	maintenance_naptime_s = 60;
static bool metastore_gc = true;

void
partitions_init(void)
{
	DefineCustomIntVariable("parca.partition_interval",
							"Time range of each partition of parca.samples.",
							"Partitions start at multiples of it from 1970-01-01 00:00 UTC; a change applies to partitions made from then on.",
							&partition_interval_min, 24 * 60, 1, INT_MAX / SECONDS_PER_MINUTE,
							PGC_SUSET, GUC_UNIT_MIN, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.retention",
							"Age past which partitions of parca.samples are dropped; 0 keeps them.",
							"A partition goes once its whole time range is older.",
							&retention_min, 0, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MIN, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.partition_premake",
							"How many partitions of parca.samples are made ahead of the current one.",
							NULL,
							&partition_premake, 2, 0, 1000,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.maintenance_naptime",
							"Time between two rounds of the maintenance worker.",
							NULL,
							&maintenance_naptime_s, 60, 1, 24 * 3600,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomBoolVariable("parca.metastore_gc",
							 "Whether the maintenance worker collects the metastore's garbage after dropping partitions.",
							 "Every writer must follow the protocol of docs/ingestion.md, parca-agent included.",
							 &metastore_gc, true,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
}

int64
partitions_retention_seconds(void)
{
	return (int64) retention_min * SECONDS_PER_MINUTE;
}

PG_FUNCTION_INFO_V1(parca_partition_settings);

/* (interval_seconds, retention_seconds, premake): the settings above. */
Datum
parca_partition_settings(PG_FUNCTION_ARGS)
{
	Datum		values[3];

	values[0] = Int64GetDatum((int64) partition_interval_min * SECONDS_PER_MINUTE);
	values[1] = Int64GetDatum((int64) retention_min * SECONDS_PER_MINUTE);
	values[2] = Int32GetDatum(partition_premake);
	PG_RETURN_DATUM(settings_row(fcinfo, values));
}

/*
 * Runs a maintenance function of the extension, if it is installed, in a
 * transaction of its own; an error is logged and the next round tries
 * again.  Returns whether the extension is installed; *first is the
 * function's result column (0 if none).
 */
static bool
maintain(const char *function, const char *column, int64 *first)
{
	MemoryContext cxt = CurrentMemoryContext;
	bool		installed = false;

	*first = 0;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	PG_TRY();
	{
		char	   *schema = parca_extension_schema();

		installed = schema != NULL;
		if (installed)
		{
			char	   *sql = psprintf("SELECT %s::pg_catalog.int8 FROM %s.%s()", column,
									   quote_identifier(schema), function);

			pgstat_report_activity(STATE_RUNNING, sql);
			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "SPI_connect failed");
			if (SPI_execute(sql, false, 0) != SPI_OK_SELECT)
				elog(ERROR, "%s failed", sql);
			if (SPI_processed == 1)
			{
				bool		isnull;
				Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											  &isnull);

				*first = isnull ? 0 : DatumGetInt64(d);
			}
			SPI_finish();
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ereport(LOG,
				(errcode(edata->sqlerrcode),
				 errmsg("parca maintenance worker: %s() failed, trying again in %d s: %s",
						function, maintenance_naptime_s, edata->message)));
		FreeErrorData(edata);
		installed = true;
	}
	PG_END_TRY();
	pgstat_report_activity(STATE_IDLE, NULL);
	return installed;
}

/*
 * Whether this server is a Citus worker node (docs/scale-out.md): its
 * parca.samples and metastore are Citus's shells and shards, kept by the
 * coordinator's worker through Citus.  A round here would make partitions
 * of the shells, move the default partition's rows or roll up on the
 * coordinator's behalf, and symbolize what the coordinator symbolizes.
 * Asked every round: a node is added to a cluster after its extension is
 * created.
 */
static bool
on_citus_worker_node(void)
{
	static bool said = false;
	bool		worker;

	StartTransactionCommand();
	worker = citus_worker_node();
	CommitTransactionCommand();
	if (worker != said)
		ereport(LOG,
				(errmsg(worker ? "parca maintenance worker: this server is a Citus worker node, the coordinator keeps its tables: idle"
						: "parca maintenance worker: this server is not a Citus worker node (any more): working")));
	said = worker;
	return worker;
}

void
parca_maintenance_worker_main(Datum arg)
{
	workers_begin(arg);

	for (;;)
	{
		long		wait_ms;
		int64		dropped;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		wait_ms = maintenance_naptime_s * 1000L;
		if (on_citus_worker_node())
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, wait_ms,
							 PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			continue;
		}
		/* dropped: the launcher starts the worker again if it comes back */
		if (!maintain("parca_maintain_partitions", "dropped", &dropped))
			workers_exit(WORKER_EXIT_NO_EXTENSION);
		else
		{
			int64		hours;

			/* dropped partitions leave garbage in the metastore */
			if (dropped > 0 && metastore_gc)
				(void) maintain("parca_metastore_gc", "locations", &dropped);
			/* hours completed since the last round (parca.rollups) */
			(void) maintain("parca_maintain_rollups", "hours", &hours);
		}
		/*
		 * A worker's statistics reach the shared counts only when it says so:
		 * autovacuum is to know of the rows this round moved, wrote and
		 * deleted (the write log's entries it took in).
		 */
		pgstat_report_stat(true);
		symbolize_while_waiting(wait_ms);
	}
}
