/*
 * worker.c
 *		The symbolizer: every parca.symbolize_interval, the maintenance
 *		worker of each database (src/maintenance/partitions.c) names the locations that
 *		arrived without lines for build ids whose debug information is
 *		stored, and fetches what debuginfod servers have, between its rounds.
 *
 * It works as the NOLOGIN role parca_debuginfo, in a security-restricted
 * operation, as the scrape worker works as parca_scrape_worker (see
 * docs/security.md), and, like it, as its session's user on Citus unless
 * that role may log in.  A build id is looked at again only when its count
 * of unnamed locations differs from what its last run left, so addresses
 * the debug information cannot name are not tried every interval.  A file
 * the server went down on twice while it was read is read no more
 * (guard.c).
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "installation/citus.h"
#include "installation/extension_version.h"
#include "symbolize/debuginfod.h"
#include "symbolize/symbolize.h"
#include "symbolize/symbolize_internal.h"

static int	symbolize_interval_s = 10;

static Oid	session_userid = InvalidOid;
static int	session_sec_context = 0;

static void
end_work(void)
{
	SPI_finish();
	PopActiveSnapshot();
	SetUserIdAndSecContext(session_userid, session_sec_context);
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * A transaction as the worker's role; false (and no transaction) when the
 * extension is not installed.
 */
static bool
begin_work(const char *activity)
{
	Oid			role;

	/* now() is the transaction's start: a worker must set the clock itself */
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	/* its statements are small: compiling them would cost more than running them */
	(void) set_config_option("jit", "off", PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0,
							 false);
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
	GetUserIdAndSecContext(&session_userid, &session_sec_context);
	if (parca_extension_schema() == NULL)
	{
		end_work();
		return false;
	}
	role = get_role_oid(SYMBOLIZE_ROLE, true);
	if (!OidIsValid(role))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role \"%s\" does not exist", SYMBOLIZE_ROLE),
				 errhint("CREATE EXTENSION parca creates it.")));
	/* on Citus it writes parca.locations on every node, as the scrape worker writes rows */
	if (!citus_refuses_role(get_relname_relid("locations", get_namespace_oid("parca", true)), role))
		SetUserIdAndSecContext(role, session_sec_context | SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);
	return true;
}

/*
 * Log the error and roll back (which restores the session's user); returns
 * the error's message, in oldcxt.
 */
static char *
abort_work(MemoryContext oldcxt, const char *what)
{
	ErrorData  *edata;
	char	   *message;

	MemoryContextSwitchTo(oldcxt);
	edata = CopyErrorData();
	FlushErrorState();
	AbortCurrentTransaction();
	pgstat_report_activity(STATE_IDLE, NULL);
	ereport(WARNING,
			(errcode(edata->sqlerrcode),
			 errmsg("parca symbolizer: %s: %s", what, edata->message)));
	message = pstrdup(edata->message);
	FreeErrorData(edata);
	return message;
}

/* The build ids due for a run, in cxt. */
static List *
due_build_ids(MemoryContext cxt)
{
	int			rc;

	rc = SPI_execute("SELECT d.build_id FROM parca.debuginfo d "
					 "WHERE d.unnamed IS DISTINCT FROM ("
					 " SELECT pg_catalog.count(*) FROM parca.mappings m"
					 " JOIN parca.locations l ON l.mapping_id OPERATOR(pg_catalog.=) m.id"
					 " WHERE m.build_id OPERATOR(pg_catalog.=) d.build_id"
					 " AND pg_catalog.cardinality(l.function_ids) OPERATOR(pg_catalog.=) 0"
					 " AND l.address OPERATOR(pg_catalog.<>) 0)"
					 " AND d.symbolized_at IS DISTINCT FROM 'infinity'",
					 true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read parca.debuginfo: %s", SPI_result_code_string(rc));
	return symbolize_first_column(cxt);
}

/* One pass: each due build id in a transaction of its own. */
static void
symbolize_pass(MemoryContext cxt)
{
	List	   *volatile ids = NIL;
	ListCell   *lc;

	PG_TRY();
	{
		if (begin_work("parca: looking for locations to name"))
		{
			ids = due_build_ids(cxt);
			end_work();
		}
	}
	PG_CATCH();
	{
		abort_work(cxt, "could not look for locations to name");
	}
	PG_END_TRY();

	foreach(lc, ids)
	{
		const char *build_id = lfirst(lc);
		char	   *what;

		/*
		 * A commit leaves TopMemoryContext current, and what a failed
		 * transaction allocated is gone in PG_CATCH: this loop's own
		 * allocations live in cxt.
		 */
		MemoryContextSwitchTo(cxt);
		what = psprintf("build id %s", build_id);

		CHECK_FOR_INTERRUPTS();
		PG_TRY();
		{
			int64		named = 0;

			symbolize_guard_begin(build_id, false);
			if (begin_work("parca: naming locations"))
			{
				named = symbolize_build_id(build_id);
				end_work();
			}
			if (named > 0)
				ereport(LOG,
						(errmsg("parca symbolizer named %lld locations of build id %s",
								(long long) named, build_id)));
		}
		PG_CATCH();
		{
			abort_work(cxt, what);
		}
		PG_END_TRY();
		symbolize_guard_end();
	}
}

/*
 * Store what debuginfod servers have for build ids without debug
 * information (which names their locations), or note that they have
 * nothing; each transfer outside transactions.
 */
static void
fetch_pass(MemoryContext cxt)
{
	List	   *volatile ids = NIL;
	ListCell   *lc;

	if (!debuginfod_enabled())
		return;
	PG_TRY();
	{
		if (begin_work("parca: looking for missing debug information"))
		{
			ids = debuginfod_wanted(cxt);
			end_work();
		}
	}
	PG_CATCH();
	{
		abort_work(cxt, "could not look for missing debug information");
	}
	PG_END_TRY();

	foreach(lc, ids)
	{
		const char *build_id = lfirst(lc);
		char		error[512];
		bytea	   *elf;
		char	   *volatile failure = NULL;
		char	   *what;

		/* as in symbolize_pass: allocations of this loop live in cxt */
		MemoryContextSwitchTo(cxt);
		what = psprintf("debug information of build id %s", build_id);
		pgstat_report_activity(STATE_RUNNING, "parca: fetching debug information");
		elf = debuginfod_fetch(build_id, error, sizeof(error));
		pgstat_report_activity(STATE_IDLE, NULL);
		PG_TRY();
		{
			if (elf != NULL)
				symbolize_guard_begin(build_id, true);
			if (begin_work("parca: storing fetched debug information"))
			{
				if (elf != NULL)
				{
					symbolize_store(build_id, elf, "debuginfod");
					debuginfod_trim_cache();
				}
				else
					debuginfod_note_missing(build_id, error);
				end_work();
			}
		}
		PG_CATCH();
		{
			failure = abort_work(cxt, what);
		}
		PG_END_TRY();
		if (elf != NULL)
		{
			symbolize_guard_end();
			pfree(elf);
		}
		/* a file refused (not ELF, too large when inflated) is not asked for again soon */
		if (failure != NULL)
		{
			PG_TRY();
			{
				if (begin_work("parca: noting refused debug information"))
				{
					debuginfod_note_missing(build_id, failure);
					end_work();
				}
			}
			PG_CATCH();
			{
				abort_work(cxt, "could not update parca.debuginfo_missing");
			}
			PG_END_TRY();
		}
	}
}

/* What the last file read left behind, if the server went down meanwhile. */
static void
guard_pass(MemoryContext cxt)
{
	if (!symbolize_guard_noted())
		return;
	PG_TRY();
	{
		if (begin_work("parca: checking the last debug information read"))
		{
			symbolize_guard_recover();
			end_work();
		}
	}
	PG_CATCH();
	{
		abort_work(cxt, "could not check the last debug information read");
	}
	PG_END_TRY();
}

void
symbolize_while_waiting(long wait_ms)
{
	TimestampTz end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms);
	static MemoryContext pass_cxt = NULL;
	static TimestampTz next_pass = 0;

	if (pass_cxt == NULL)
		pass_cxt = AllocSetContextCreate(TopMemoryContext, "parca symbolizer pass",
										 ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		TimestampTz now = GetCurrentTimestamp();
		TimestampTz wake = end;
		int			rc;

		CHECK_FOR_INTERRUPTS();
		if (symbolize_interval_s > 0 && now >= next_pass)
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(pass_cxt);

			guard_pass(pass_cxt);
			fetch_pass(pass_cxt);
			symbolize_pass(pass_cxt);
			MemoryContextSwitchTo(oldcxt);
			MemoryContextReset(pass_cxt);
			now = GetCurrentTimestamp();
			next_pass = TimestampTzPlusMilliseconds(now, symbolize_interval_s * 1000L);
		}
		if (symbolize_interval_s > 0)
			wake = Min(wake, next_pass);
		if (now >= end)
			return;
		rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					   Max(TimestampDifferenceMilliseconds(now, wake), 1), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		/* a reload, or something to look at: back to the caller */
		if (rc & WL_LATCH_SET)
			return;
	}
}

void
symbolize_worker_init(void)
{
	DefineCustomIntVariable("parca.symbolize_interval",
							"How often the symbolizer names new locations and fetches debug information.",
							"0 stops it.",
							&symbolize_interval_s, 10, 0, 86400,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	debuginfod_init();
}
