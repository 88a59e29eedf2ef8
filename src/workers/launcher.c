/*
 * launcher.c
 *		The launcher: one background worker for the cluster that starts the
 *		workers of every database where extension parca is installed.
 *
 * It connects to no database and reads pg_database (a shared catalog):
 * at its start, whenever a session asks (events.c: CREATE EXTENSION,
 * CREATE DATABASE, a scrape job enabled, a database's DROP that failed,
 * ...) and every 30 s, for what no session told.  Whether a
 * database has the extension only a process connected to it can tell:
 * the launcher starts the database's maintenance worker, which ends at
 * once where there is none (a few at a time, so that a server with many
 * databases does not take every worker slot to look).  Where it stays,
 * the scrape worker follows, and ends by itself while no scrape job is
 * enabled, until the configuration changes.
 *
 * The workers are dynamic background workers that the postmaster never
 * restarts: the launcher does, after 5 s, then twice as long after each
 * failure in a row up to 5 minutes, so that a worker that fails at once
 * (a broken database) does not loop.  When RegisterDynamicBackgroundWorker
 * finds no slot (max_worker_processes, which parallel query shares) it
 * warns, naming the database, and tries again every 30 s.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "workers/workers_internal.h"

PGDLLEXPORT void parca_launcher_main(Datum arg);

bool		workers_enabled = true;

#define LAUNCHER_RESTART_S	10
#define RESCAN_MS			30000
#define SLOT_RETRY_MS		30000
#define BACKOFF_FIRST_MS	5000
#define BACKOFF_MAX_MS		300000
/* a worker that ran this long before it died starts again after BACKOFF_FIRST_MS */
#define STABLE_MS			300000
/* databases looked at (for the extension) at once */
#define PROBES_AT_ONCE		2

/* What the launcher knows of a database. */
typedef enum DatabaseState
{
	DB_UNKNOWN,					/* to look at: its maintenance worker tells */
	DB_SERVED,					/* it has the extension */
	DB_NO_EXTENSION,
	DB_DISABLED					/* parca.workers = off in it */
} DatabaseState;

typedef struct KindState
{
	BackgroundWorkerHandle *handle; /* NULL: not started */
	int			entry;			/* in workers_shared, -1: none */
	bool		wanted;			/* the scrape worker: start it */
	int			failures;		/* in a row */
	TimestampTz retry_at;
	TimestampTz started_at;
	bool		warned;			/* about a missing slot, since it last started */
	bool		no_slot;		/* waits for a background worker slot */
} KindState;

typedef struct LauncherDatabase
{
	Oid			dboid;			/* hash key */
	NameData	name;
	DatabaseState state;
	bool		present;		/* in the last look at pg_database */
	KindState	kinds[WORKER_KINDS];
} LauncherDatabase;

static HTAB *databases = NULL;

/*
 * The workers of a database, the one place that says what they are; each
 * one's main and settings stay with the module that does its work.
 */
const WorkerKindInfo worker_kinds[WORKER_KINDS] = {
	[WORKER_MAINTENANCE] = {"maintenance", "parca maintenance worker",
	"parca_maintenance_worker_main"},	/* maintenance/partitions.c */
	[WORKER_SCRAPE] = {"scrape", "parca scrape worker",
	"parca_scrape_worker_main"},	/* scrape/scrape_worker.c */
};

void
workers_init(void)
{
	BackgroundWorker worker;

	DefineCustomBoolVariable("parca.workers",
							 "Whether the background workers serve the databases that have the extension.",
							 "Off in the server's configuration, no worker runs; off for one database (ALTER DATABASE ... SET), none runs there.",
							 &workers_enabled, true,
							 PGC_SUSET, 0, NULL, NULL, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;

	registry_init();
	events_init();

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = LAUNCHER_RESTART_S;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "parca");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "parca_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "parca launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "parca launcher");
	RegisterBackgroundWorker(&worker);
}

/* Whether the database's worker of this kind should run. */
static bool
wanted(LauncherDatabase *db, WorkerKind kind)
{
	if (!workers_enabled || !db->present)
		return false;
	if (kind == WORKER_MAINTENANCE)
		return db->state == DB_UNKNOWN || db->state == DB_SERVED;
	return db->state == DB_SERVED && db->kinds[kind].wanted;
}

/* Set an entry's state and note, for parca.workers.  note may be NULL. */
static void
set_entry(KindState *ks, EntryState state, const char *note)
{
	WorkerEntry *e;

	if (ks->entry < 0)
		return;
	LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
	e = &workers_shared->entries[ks->entry];
	e->state = state;
	e->since = GetCurrentTimestamp();
	strlcpy(e->note, note ? note : "", sizeof(e->note));
	LWLockRelease(workers_shared->lock);
}

static void
free_entry(KindState *ks)
{
	if (ks->entry < 0)
		return;
	LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
	workers_shared->entries[ks->entry].dboid = InvalidOid;
	workers_shared->entries[ks->entry].state = ENTRY_FREE;
	LWLockRelease(workers_shared->lock);
	ks->entry = -1;
}

static void
stop_worker(KindState *ks)
{
	if (ks->handle == NULL)
		return;
	if (ks->entry >= 0)
	{
		LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
		workers_shared->entries[ks->entry].stop_requested = true;
		workers_shared->entries[ks->entry].state = ENTRY_STOPPING;
		LWLockRelease(workers_shared->lock);
	}
	TerminateBackgroundWorker(ks->handle);
}

/* At the launcher's exit: its workers end too (a new launcher starts them). */
static void
launcher_exit(int code, Datum arg)
{
	HASH_SEQ_STATUS seq;
	LauncherDatabase *db;

	if (databases != NULL)
	{
		hash_seq_init(&seq, databases);
		while ((db = hash_seq_search(&seq)) != NULL)
			for (int k = 0; k < WORKER_KINDS; k++)
				stop_worker(&db->kinds[k]);
	}
	LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
	workers_shared->launcher_latch = NULL;
	LWLockRelease(workers_shared->lock);
}

/*
 * Attach as the launcher; the workers of a launcher before this one were
 * told to stop when it ended: wait for them, then start afresh.
 */
static void
launcher_attach(void)
{
	for (;;)
	{
		bool		left = false;

		LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
		for (int i = 0; i < workers_shared->nentries; i++)
		{
			WorkerEntry *e = &workers_shared->entries[i];

			if (e->pid != 0)
				left = true;
			else
			{
				e->dboid = InvalidOid;
				e->state = ENTRY_FREE;
			}
		}
		if (!left)
			workers_shared->launcher_latch = MyLatch;
		LWLockRelease(workers_shared->lock);
		if (!left)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	before_shmem_exit(launcher_exit, 0);
}

/*
 * Read pg_database: databases that take connections and are no templates
 * (a session connected to a template keeps CREATE DATABASE from copying
 * it) are looked at; those gone are forgotten once their workers ended.
 */
static void
scan_databases(void)
{
	HASH_SEQ_STATUS seq;
	LauncherDatabase *db;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;
	MemoryContext cxt = CurrentMemoryContext;

	hash_seq_init(&seq, databases);
	while ((db = hash_seq_search(&seq)) != NULL)
		db->present = false;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tuple = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database form = (Form_pg_database) GETSTRUCT(tuple);
		bool		found;

		if (!form->datallowconn || form->datistemplate || database_is_invalid_form(form))
			continue;
		db = hash_search(databases, &form->oid, HASH_ENTER, &found);
		if (!found)
		{
			NameStr(db->name)[0] = '\0';
			db->state = DB_UNKNOWN;
			for (int k = 0; k < WORKER_KINDS; k++)
			{
				memset(&db->kinds[k], 0, sizeof(KindState));
				db->kinds[k].entry = -1;
			}
		}
		if (strcmp(NameStr(db->name), NameStr(form->datname)) != 0)
		{
			/* new, or renamed: parca.workers shows the name */
			namestrcpy(&db->name, NameStr(form->datname));
			LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
			for (int k = 0; k < WORKER_KINDS; k++)
				if (db->kinds[k].entry >= 0)
					namestrcpy(&workers_shared->entries[db->kinds[k].entry].dbname,
							   NameStr(db->name));
			LWLockRelease(workers_shared->lock);
		}
		db->present = true;
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * Look at every database without workers again (a reload, lost requests);
 * lost requests may have been for scrape workers too.
 */
static void
look_again_everywhere(bool scrape)
{
	HASH_SEQ_STATUS seq;
	LauncherDatabase *db;

	hash_seq_init(&seq, databases);
	while ((db = hash_seq_search(&seq)) != NULL)
	{
		if (db->state == DB_NO_EXTENSION || db->state == DB_DISABLED)
			db->state = DB_UNKNOWN;
		else if (db->state == DB_SERVED && scrape)
			db->kinds[WORKER_SCRAPE].wanted = true;
	}
}

/* What sessions asked for since the last round. */
static void
apply_requests(void)
{
	WorkerRequest requests[WORKER_REQUESTS];
	int			n;
	bool		lost;

	LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
	n = workers_shared->nrequests;
	memcpy(requests, workers_shared->requests, sizeof(WorkerRequest) * n);
	lost = workers_shared->requests_lost;
	workers_shared->nrequests = 0;
	workers_shared->requests_lost = false;
	LWLockRelease(workers_shared->lock);

	if (n == 0 && !lost)
		return;
	/* a new database, a renamed one, one that was dropped */
	scan_databases();
	if (lost)
		look_again_everywhere(true);
	for (int i = 0; i < n; i++)
	{
		LauncherDatabase *db = hash_search(databases, &requests[i].dboid, HASH_FIND, NULL);

		/* not found: a template, or gone, or taking no connections */
		if (db == NULL)
			continue;
		if (requests[i].restart)
		{
			for (int k = 0; k < WORKER_KINDS; k++)
			{
				stop_worker(&db->kinds[k]);
				db->kinds[k].wanted = false;
				db->kinds[k].failures = 0;
				db->kinds[k].retry_at = 0;
			}
			db->state = DB_UNKNOWN;
		}
		else
		{
			if (db->state == DB_NO_EXTENSION || db->state == DB_DISABLED)
				db->state = DB_UNKNOWN;
			/* (started once the database is served) */
			if (requests[i].scrape)
				db->kinds[WORKER_SCRAPE].wanted = true;
		}
	}
}

static long
backoff_ms(int failures)
{
	long		ms = BACKOFF_FIRST_MS;

	for (int i = 1; i < failures && ms < BACKOFF_MAX_MS; i++)
		ms *= 2;
	return Min(ms, BACKOFF_MAX_MS);
}

/*
 * A worker that ended: what it said, or, if it said nothing, a failure
 * unless it was asked to stop.
 */
static void
reap(LauncherDatabase *db, WorkerKind kind, const WorkerEntry *e)
{
	KindState  *ks = &db->kinds[kind];
	TimestampTz now = GetCurrentTimestamp();

	pfree(ks->handle);
	ks->handle = NULL;
	switch (e->exit)
	{
		case WORKER_EXIT_NO_EXTENSION:
		case WORKER_EXIT_DISABLED:
			if (kind == WORKER_MAINTENANCE)
			{
				if (db->state == DB_SERVED)
					ereport(LOG,
							(errmsg("parca workers of database \"%s\" stop: %s", NameStr(db->name),
									e->exit == WORKER_EXIT_DISABLED ? "parca.workers is off there"
									: "the extension was dropped")));
				db->state = e->exit == WORKER_EXIT_DISABLED ? DB_DISABLED : DB_NO_EXTENSION;
				db->kinds[WORKER_SCRAPE].wanted = false;
			}
			ks->wanted = false;
			ks->failures = 0;
			free_entry(ks);
			return;
		case WORKER_EXIT_IDLE:
			ks->failures = 0;
			/* woken after it read its configuration: start it again */
			ks->wanted = e->wakeups != e->wakeups_seen;
			if (!ks->wanted)
				free_entry(ks);
			return;
		case WORKER_EXIT_NONE:
			break;
	}
	if (!wanted(db, kind))
	{
		free_entry(ks);
		return;
	}
	if (e->stop_requested)
	{
		/* stopped for a restart, or while a session dropped (...) the database */
		ks->retry_at = 0;
		set_entry(ks, ENTRY_STARTING, NULL);
		LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
		workers_shared->entries[ks->entry].stop_requested = false;
		LWLockRelease(workers_shared->lock);
		return;
	}
	if (TimestampDifferenceExceeds(ks->started_at, now, STABLE_MS))
		ks->failures = 0;
	ks->failures++;
	ks->retry_at = TimestampTzPlusMilliseconds(now, backoff_ms(ks->failures));
	ereport(LOG,
			(errmsg("%s of database \"%s\" ended unexpectedly; starting it again in %ld s",
					worker_kinds[kind].type, NameStr(db->name), backoff_ms(ks->failures) / 1000)));
	set_entry(ks, ENTRY_RESTARTING,
			  psprintf("ended unexpectedly %d time(s) in a row; starting again at %s",
					   ks->failures, timestamptz_to_str(ks->retry_at)));
}

/*
 * Look at each started worker: serving, or ended.  Returns whether one
 * ended (its slot is free for a worker waiting for one).
 */
static bool
reap_workers(void)
{
	HASH_SEQ_STATUS seq;
	LauncherDatabase *db;
	bool		ended = false;

	hash_seq_init(&seq, databases);
	while ((db = hash_seq_search(&seq)) != NULL)
	{
		for (int k = 0; k < WORKER_KINDS; k++)
		{
			KindState  *ks = &db->kinds[k];
			WorkerEntry e;
			pid_t		pid;
			BgwHandleStatus status;

			if (ks->handle == NULL)
				continue;
			status = GetBackgroundWorkerPid(ks->handle, &pid);
			if (status == BGWH_POSTMASTER_DIED)
				proc_exit(1);
			LWLockAcquire(workers_shared->lock, LW_SHARED);
			e = workers_shared->entries[ks->entry];
			LWLockRelease(workers_shared->lock);
			if (status == BGWH_STOPPED)
			{
				reap(db, k, &e);
				ended = true;
			}
			else if (k == WORKER_MAINTENANCE && e.serving && db->state == DB_UNKNOWN)
			{
				db->state = DB_SERVED;
				db->kinds[WORKER_SCRAPE].wanted |= e.wants_scrape;
				ereport(LOG,
						(errmsg("parca workers serve database \"%s\"", NameStr(db->name))));
			}
		}
	}
	return ended;
}

/* Stop the workers no longer wanted; forget databases gone without workers. */
static void
stop_unwanted(void)
{
	HASH_SEQ_STATUS seq;
	LauncherDatabase *db;

	hash_seq_init(&seq, databases);
	while ((db = hash_seq_search(&seq)) != NULL)
	{
		bool		any = false;

		for (int k = 0; k < WORKER_KINDS; k++)
		{
			KindState  *ks = &db->kinds[k];

			if (ks->handle != NULL && !wanted(db, k))
			{
				bool		asked;

				LWLockAcquire(workers_shared->lock, LW_SHARED);
				asked = workers_shared->entries[ks->entry].stop_requested;
				LWLockRelease(workers_shared->lock);
				if (!asked)
					stop_worker(ks);
			}
			else if (ks->handle == NULL && !wanted(db, k))
				free_entry(ks);
			any |= ks->handle != NULL;
		}
		if (!db->present && !any)
			(void) hash_search(databases, &db->dboid, HASH_REMOVE, NULL);
	}
}

/* Start one worker; false if no slot was free. */
static bool
start_worker(LauncherDatabase *db, WorkerKind kind)
{
	KindState  *ks = &db->kinds[kind];
	BackgroundWorker worker;
	WorkerStart start;
	TimestampTz now = GetCurrentTimestamp();
	MemoryContext cxt;
	bool		registered = false;

	if (ks->entry < 0)
	{
		LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
		ks->entry = registry_entry_alloc(db->dboid, NameStr(db->name), kind);
		LWLockRelease(workers_shared->lock);
	}

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "parca");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "%s", worker_kinds[kind].function);
	snprintf(worker.bgw_name, BGW_MAXLEN, "%s for %s", worker_kinds[kind].type, NameStr(db->name));
	snprintf(worker.bgw_type, BGW_MAXLEN, "%s", worker_kinds[kind].type);
	worker.bgw_notify_pid = MyProcPid;
	if (ks->entry >= 0)
	{
		start.dboid = db->dboid;
		start.kind = kind;
		LWLockAcquire(workers_shared->lock, LW_SHARED);
		start.generation = workers_shared->entries[ks->entry].generation;
		LWLockRelease(workers_shared->lock);
		memcpy(worker.bgw_extra, &start, sizeof(start));
		worker.bgw_main_arg = Int32GetDatum(ks->entry);
	}
	/* the handle lives as long as the worker */
	cxt = MemoryContextSwitchTo(TopMemoryContext);
	if (ks->entry >= 0)
		registered = RegisterDynamicBackgroundWorker(&worker, &ks->handle);
	MemoryContextSwitchTo(cxt);
	ks->no_slot = !registered;
	if (!registered)
	{
		ks->handle = NULL;
		ks->retry_at = TimestampTzPlusMilliseconds(now, SLOT_RETRY_MS);
		set_entry(ks, ENTRY_WAITING,
				  psprintf("no background worker slot free (max_worker_processes = %d); trying again every %d s",
						   max_worker_processes, SLOT_RETRY_MS / 1000));
		if (!ks->warned)
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("parca: no background worker slot free for the %s of database \"%s\"",
							worker_kinds[kind].type, NameStr(db->name)),
					 errhint("Raise max_worker_processes (now %d; a restart is needed), which parallel query and "
							 "logical replication share: parca takes one for its launcher and, in every database "
							 "with the extension, one, or two where a scrape job is enabled.  Trying again every %d s.",
							 max_worker_processes, SLOT_RETRY_MS / 1000)));
		ks->warned = true;
		return false;
	}
	if (ks->warned)
		ereport(LOG,
				(errmsg("parca: the %s of database \"%s\" got a background worker slot",
						worker_kinds[kind].type, NameStr(db->name))));
	ks->warned = false;
	ks->started_at = now;
	set_entry(ks, ENTRY_STARTING, NULL);
	return true;
}

/*
 * Start what is wanted and due: the maintenance workers of databases
 * served, then a few of those still to look at, then the scrape workers;
 * those waiting for a slot at once if one was freed.  Returns how long the
 * launcher may sleep, in ms.
 */
static long
start_wanted(bool slot_freed)
{
	HASH_SEQ_STATUS seq;
	LauncherDatabase *db;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz next = TimestampTzPlusMilliseconds(now, RESCAN_MS);
	int			probing = 0;

	hash_seq_init(&seq, databases);
	while ((db = hash_seq_search(&seq)) != NULL)
		if (db->state == DB_UNKNOWN && db->kinds[WORKER_MAINTENANCE].handle != NULL)
			probing++;

	for (int pass = 0; pass < 3; pass++)
	{
		WorkerKind	kind = pass < 2 ? WORKER_MAINTENANCE : WORKER_SCRAPE;
		bool		paused;

		hash_seq_init(&seq, databases);
		while ((db = hash_seq_search(&seq)) != NULL)
		{
			KindState  *ks = &db->kinds[kind];

			if (ks->handle != NULL || !wanted(db, kind))
				continue;
			if (kind == WORKER_MAINTENANCE && (pass == 0) != (db->state == DB_SERVED))
				continue;
			if (ks->retry_at > now && !(slot_freed && ks->no_slot))
			{
				next = Min(next, ks->retry_at);
				continue;
			}
			if (pass == 1 && probing >= PROBES_AT_ONCE)
				continue;
			LWLockAcquire(workers_shared->lock, LW_SHARED);
			paused = registry_paused(db->dboid);
			LWLockRelease(workers_shared->lock);
			if (paused)
				continue;
			if (start_worker(db, kind))
			{
				if (pass == 1)
					probing++;
			}
			else
				next = Min(next, ks->retry_at);
		}
	}
	return Max(TimestampDifferenceMilliseconds(now, next), 10);
}

void
parca_launcher_main(Datum arg)
{
	HASHCTL		ctl;
	TimestampTz next_scan = 0;
	MemoryContext loop_cxt;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* no database: pg_database is a shared catalog */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("parca launcher");

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(LauncherDatabase);
	databases = hash_create("parca launcher databases", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	launcher_attach();
	loop_cxt = AllocSetContextCreate(TopMemoryContext, "parca launcher loop",
									 ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		long		wait_ms;
		TimestampTz now;
		bool		slot_freed;

		MemoryContextSwitchTo(loop_cxt);
		MemoryContextReset(loop_cxt);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			/* (a reload is how to have the launcher look again) */
			look_again_everywhere(false);
		}
		now = GetCurrentTimestamp();
		if (now >= next_scan)
		{
			scan_databases();
			next_scan = TimestampTzPlusMilliseconds(now, RESCAN_MS);
		}
		apply_requests();
		slot_freed = reap_workers();
		stop_unwanted();
		wait_ms = start_wanted(slot_freed);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, wait_ms,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
