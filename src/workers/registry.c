/*
 * registry.c
 *		The shared memory between the launcher, the workers it started and
 *		every other session: one entry per worker the launcher wants, the
 *		requests sessions make of the launcher, the databases sessions
 *		wait to drop; and parca.workers, which shows the entries.
 *
 * A worker attaches to its entry first thing (workers_begin) and says there
 * whether its database has the extension and, when it ends by itself, why.
 * A session that changed what a worker reads wakes it through its entry
 * (workers_wake); a session about to drop, rename, move or copy a database
 * stops the database's workers and keeps the launcher from starting them
 * until it is done (registry_pause, from events.c).
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/backendid.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "workers/workers_internal.h"

WorkersShared *workers_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Whether a database has work for a kind of worker: workers_set_wanted(). */
static bool (*kind_wanted[WORKER_KINDS]) (void);

/* This worker's entry, while it is attached. */
static WorkerEntry *my_entry = NULL;

/* How long a session waits for a database's workers to end before it goes on. */
#define PAUSE_WAIT_MS	60000

/*
 * Two entries per worker process the server may have: enough for every
 * database that can get its workers, and for those waiting for a slot.
 */
static int
entries_count(void)
{
	return Max(2 * max_worker_processes, 16);
}

static Size
shared_size(void)
{
	Size		size = offsetof(WorkersShared, entries);

	size = add_size(size, mul_size(entries_count(), sizeof(WorkerEntry)));
	return add_size(size, mul_size(MaxBackends, sizeof(Oid)));
}

static void
registry_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(shared_size());
	RequestNamedLWLockTranche("parca_workers", 1);
}

static void
registry_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	workers_shared = ShmemInitStruct("parca_workers", shared_size(), &found);
	if (!found)
	{
		memset(workers_shared, 0, shared_size());
		workers_shared->lock = &(GetNamedLWLockTranche("parca_workers"))->lock;
		workers_shared->nentries = entries_count();
		workers_shared->paused = (Oid *) &workers_shared->entries[workers_shared->nentries];
	}
	LWLockRelease(AddinShmemInitLock);
}

void
registry_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = registry_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = registry_shmem_startup;
}

int
registry_entry_alloc(Oid dboid, const char *dbname, WorkerKind kind)
{
	for (int i = 0; i < workers_shared->nentries; i++)
	{
		WorkerEntry *e = &workers_shared->entries[i];
		uint32		generation = e->generation + 1;

		if (OidIsValid(e->dboid) || e->pid != 0)
			continue;
		memset(e, 0, sizeof(*e));
		e->dboid = dboid;
		e->kind = kind;
		e->generation = generation;
		namestrcpy(&e->dbname, dbname);
		e->state = ENTRY_STARTING;
		e->since = GetCurrentTimestamp();
		return i;
	}
	return -1;
}

/* Whether a session waits to drop (rename, ...) the database.  Locked. */
bool
registry_paused(Oid dboid)
{
	for (int i = 0; i < MaxBackends; i++)
		if (workers_shared->paused[i] == dboid)
			return true;
	return false;
}

/* Locked by the caller. */
static void
request_locked(Oid dboid, bool restart, bool scrape)
{
	WorkersShared *ws = workers_shared;
	int			i;

	for (i = 0; i < ws->nrequests; i++)
		if (ws->requests[i].dboid == dboid)
			break;
	if (i == ws->nrequests)
	{
		if (ws->nrequests == WORKER_REQUESTS)
			ws->requests_lost = true;
		else
		{
			ws->requests[ws->nrequests].dboid = dboid;
			ws->requests[ws->nrequests].restart = restart;
			ws->requests[ws->nrequests].scrape = scrape;
			ws->nrequests++;
		}
	}
	else
	{
		ws->requests[i].restart |= restart;
		ws->requests[i].scrape |= scrape;
	}
	if (ws->launcher_latch)
		SetLatch(ws->launcher_latch);
}

/* The launcher looks at the database again (and restarts its workers). */
void
registry_request(Oid dboid, bool restart)
{
	if (workers_shared == NULL)
		return;
	LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
	request_locked(dboid, restart, false);
	LWLockRelease(workers_shared->lock);
}

/* Every worker of the database looks at its database again. */
void
registry_wake_database(Oid dboid)
{
	if (workers_shared == NULL)
		return;
	LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < workers_shared->nentries; i++)
	{
		WorkerEntry *e = &workers_shared->entries[i];

		if (e->dboid != dboid)
			continue;
		e->wakeups++;
		if (e->latch)
			SetLatch(e->latch);
	}
	LWLockRelease(workers_shared->lock);
}

void
workers_wake(WorkerKind kind)
{
	bool		found = false;

	if (workers_shared == NULL)
		return;
	LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < workers_shared->nentries; i++)
	{
		WorkerEntry *e = &workers_shared->entries[i];

		if (e->dboid != MyDatabaseId || e->kind != kind)
			continue;
		/* an entry whose worker ended is looked at by the launcher */
		found = true;
		e->wakeups++;
		if (e->latch)
			SetLatch(e->latch);
		else if (workers_shared->launcher_latch)
			SetLatch(workers_shared->launcher_latch);
	}
	if (!found)
		request_locked(MyDatabaseId, false, kind == WORKER_SCRAPE);
	LWLockRelease(workers_shared->lock);
}

/* ------------------------------------------------------------------------
 * Pausing a database's workers while a session drops (renames, moves,
 * copies) it: PostgreSQL refuses while other sessions are connected.
 */

static bool pause_exit_registered = false;

static void
resume_at_exit(int code, Datum arg)
{
	registry_resume();
}

static bool
has_workers(Oid dboid)
{
	for (int i = 0; i < workers_shared->nentries; i++)
		if (workers_shared->entries[i].dboid == dboid && workers_shared->entries[i].pid != 0)
			return true;
	return false;
}

/*
 * Stop the database's workers, and keep the launcher from starting them,
 * until registry_resume(); waits (up to PAUSE_WAIT_MS) until they ended.
 */
void
registry_pause(Oid dboid)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), PAUSE_WAIT_MS);

	if (workers_shared == NULL || MyBackendId <= 0 || MyBackendId > MaxBackends)
		return;
	if (!pause_exit_registered)
	{
		before_shmem_exit(resume_at_exit, 0);
		pause_exit_registered = true;
	}
	LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
	workers_shared->paused[MyBackendId - 1] = dboid;
	for (int i = 0; i < workers_shared->nentries; i++)
	{
		WorkerEntry *e = &workers_shared->entries[i];

		/* a pid is set from the worker's start until its exit, under the lock */
		if (e->dboid == dboid && e->pid != 0)
		{
			e->stop_requested = true;
			kill(e->pid, SIGTERM);
		}
	}
	LWLockRelease(workers_shared->lock);

	for (;;)
	{
		bool		running;

		LWLockAcquire(workers_shared->lock, LW_SHARED);
		running = has_workers(dboid);
		LWLockRelease(workers_shared->lock);
		if (!running || GetCurrentTimestamp() >= deadline)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* The launcher may start the paused database's workers again (if it still exists). */
void
registry_resume(void)
{
	Oid			dboid;

	if (workers_shared == NULL || MyBackendId <= 0 || MyBackendId > MaxBackends)
		return;
	LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
	dboid = workers_shared->paused[MyBackendId - 1];
	workers_shared->paused[MyBackendId - 1] = InvalidOid;
	if (OidIsValid(dboid))
		request_locked(dboid, false, false);
	LWLockRelease(workers_shared->lock);
}

/* ------------------------------------------------------------------------
 * The worker's side.
 */

static void
detach(int code, Datum arg)
{
	LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
	my_entry->pid = 0;
	my_entry->latch = NULL;
	if (workers_shared->launcher_latch)
		SetLatch(workers_shared->launcher_latch);
	LWLockRelease(workers_shared->lock);
}

/*
 * Attach to the entry the launcher made for this worker; false if it is
 * not this worker's any more (a launcher that ended before it started).
 */
static bool
attach(int index, const WorkerStart *start)
{
	WorkerEntry *e;
	bool		mine;

	if (workers_shared == NULL || index < 0 || index >= workers_shared->nentries)
		return false;
	LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
	e = &workers_shared->entries[index];
	mine = e->dboid == start->dboid && e->kind == start->kind &&
		e->generation == start->generation && e->pid == 0 && !e->stop_requested;
	if (mine)
	{
		e->pid = MyProcPid;
		e->latch = MyLatch;
		e->serving = false;
		e->exit = WORKER_EXIT_NONE;
		my_entry = e;
	}
	LWLockRelease(workers_shared->lock);
	if (mine)
		before_shmem_exit(detach, 0);
	return mine;
}

void
workers_set_wanted(WorkerKind kind, bool (*wanted) (void))
{
	Assert(kind >= 0 && kind < WORKER_KINDS);
	kind_wanted[kind] = wanted;
}

/*
 * Whether the database has the extension; the maintenance worker also
 * tells whether it needs a scrape worker, so that the launcher starts
 * none where no scrape job is enabled.
 */
static bool
extension_installed(WorkerKind kind, bool *wants_scrape)
{
	bool		installed;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	installed = OidIsValid(get_extension_oid("parca", true));
	*wants_scrape = false;
	if (installed && kind == WORKER_MAINTENANCE)
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		*wants_scrape = kind_wanted[WORKER_SCRAPE] != NULL && kind_wanted[WORKER_SCRAPE] ();
		SPI_finish();
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	return installed;
}

void
workers_begin(Datum main_arg)
{
	WorkerStart start;
	bool		paused;
	bool		wants_scrape;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	memcpy(&start, MyBgworkerEntry->bgw_extra, sizeof(start));
	if (!attach(DatumGetInt32(main_arg), &start))
		proc_exit(0);
	BackgroundWorkerInitializeConnectionByOid(start.dboid, InvalidOid, 0);
	pgstat_report_appname(MyBgworkerEntry->bgw_type);

	/*
	 * The session took the database's and its role's settings, and the
	 * database's owner may set search_path: the workers, superusers, look
	 * names up in pg_catalog only (their SQL names everything else with
	 * its schema), so no object of the owner's can stand in for a built-in.
	 */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);

	/* parca.workers as the database's settings say (ALTER DATABASE ... SET) */
	if (!workers_enabled)
		workers_exit(WORKER_EXIT_DISABLED);
	if (!extension_installed(start.kind, &wants_scrape))
		workers_exit(WORKER_EXIT_NO_EXTENSION);

	LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
	paused = registry_paused(start.dboid);
	if (!paused)
	{
		my_entry->serving = true;
		my_entry->wants_scrape = wants_scrape;
		my_entry->since = GetCurrentTimestamp();
		if (workers_shared->launcher_latch)
			SetLatch(workers_shared->launcher_latch);
	}
	LWLockRelease(workers_shared->lock);
	/* a session waits to drop the database: the launcher starts it again if it stays */
	if (paused)
		proc_exit(0);
}

void
workers_exit(WorkerExit why)
{
	LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
	my_entry->exit = why;
	LWLockRelease(workers_shared->lock);
	proc_exit(0);
}

uint64
workers_wakeups(void)
{
	uint64		wakeups;

	LWLockAcquire(workers_shared->lock, LW_SHARED);
	wakeups = my_entry->wakeups;
	LWLockRelease(workers_shared->lock);
	return wakeups;
}

void
workers_exit_idle(uint64 loaded_wakeups)
{
	bool		woken;

	LWLockAcquire(workers_shared->lock, LW_EXCLUSIVE);
	woken = my_entry->wakeups != loaded_wakeups;
	if (!woken)
	{
		my_entry->exit = WORKER_EXIT_IDLE;
		my_entry->wakeups_seen = loaded_wakeups;
	}
	LWLockRelease(workers_shared->lock);
	if (!woken)
		proc_exit(0);
}

/* ------------------------------------------------------------------------
 * parca.workers
 */

static const char *
state_name(const WorkerEntry *e)
{
	if (e->pid != 0)
		return e->serving ? "running" : "starting";
	switch (e->state)
	{
		case ENTRY_WAITING:
			return "waiting";
		case ENTRY_RESTARTING:
			return "restarting";
		case ENTRY_STOPPING:
			return "stopping";
		default:
			return "starting";
	}
}

/*
 * parca.worker_states(): one row per worker the launcher wants, in every
 * database (as pg_stat_activity shows every database's sessions).
 */
PG_FUNCTION_INFO_V1(parca_worker_states);
Datum
parca_worker_states(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	WorkerEntry *copy;
	int			n = 0;

	if (workers_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the parca workers need parca in shared_preload_libraries")));
	InitMaterializedSRF(fcinfo, 0);

	copy = palloc(sizeof(WorkerEntry) * workers_shared->nentries);
	LWLockAcquire(workers_shared->lock, LW_SHARED);
	for (int i = 0; i < workers_shared->nentries; i++)
		if (OidIsValid(workers_shared->entries[i].dboid))
			copy[n++] = workers_shared->entries[i];
	LWLockRelease(workers_shared->lock);

	for (int i = 0; i < n; i++)
	{
		WorkerEntry *e = &copy[i];
		Datum		values[6];
		bool		nulls[6] = {0};

		values[0] = CStringGetTextDatum(NameStr(e->dbname));
		values[1] = CStringGetTextDatum(worker_kinds[e->kind].name);
		values[2] = Int32GetDatum(e->pid);
		nulls[2] = e->pid == 0;
		values[3] = CStringGetTextDatum(state_name(e));
		values[4] = TimestampTzGetDatum(e->since);
		e->note[ENTRY_NOTE_LEN - 1] = '\0';
		values[5] = CStringGetTextDatum(e->note);
		nulls[5] = e->note[0] == '\0';
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
