/*
 * state.c
 *		Settings, shared memory and registration of the scrape worker.
 *
 * The worker keeps its targets in its own memory; what parca.targets shows
 * is a copy it publishes into a fixed array in shared memory (one slot per
 * target, parca.scrape_max_targets slots).  A configuration change wakes
 * the worker through a generation counter bumped when the changing
 * transaction commits, and the worker's latch.
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "scrape/scrape.h"
#include "scrape/scrape_internal.h"
#include "valid_text.h"

bool		scrape_enabled = true;
char	   *scrape_database = NULL;
int			scrape_concurrency = 512;
int			scrape_max_targets = 2048;
int			scrape_redirects = SCRAPE_REDIRECTS_SAME_ORIGIN;

static const struct config_enum_entry scrape_redirects_options[] = {
	{"none", SCRAPE_REDIRECTS_NONE, false},
	{"same_origin", SCRAPE_REDIRECTS_SAME_ORIGIN, false},
	{"any", SCRAPE_REDIRECTS_ANY, false},
	{NULL, 0, false}
};

#define SLOT_JOB_LEN	64
#define SLOT_URL_LEN	512
#define SLOT_LABELS_LEN 1024

typedef struct TargetSlot
{
	char		job[SLOT_JOB_LEN];
	char		url[SLOT_URL_LEN];
	char		labels[SLOT_LABELS_LEN];	/* "" when it did not fit */
	char		error[256];
	ScrapeHealth health;
	TimestampTz last_scrape;
	int64		last_duration_us;
} TargetSlot;

typedef struct ScrapeShared
{
	LWLock	   *lock;			/* protects nslots and slots */
	pg_atomic_uint64 generation;	/* bumped by configuration changes */
	Latch	   *worker_latch;	/* set to wake the worker, or NULL */
	int			nslots;
	TargetSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} ScrapeShared;

static ScrapeShared *shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Whether the current transaction changed the scrape configuration. */
static bool config_changed_in_xact = false;
static bool xact_callback_registered = false;

static Size
shared_size(void)
{
	return add_size(offsetof(ScrapeShared, slots),
					mul_size(scrape_max_targets, sizeof(TargetSlot)));
}

static void
scrape_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(shared_size());
	RequestNamedLWLockTranche("parca_scrape", 1);
}

static void
scrape_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("parca_scrape", shared_size(), &found);
	if (!found)
	{
		shared->lock = &(GetNamedLWLockTranche("parca_scrape"))->lock;
		pg_atomic_init_u64(&shared->generation, 0);
		shared->worker_latch = NULL;
		shared->nslots = 0;
	}
	LWLockRelease(AddinShmemInitLock);
}

static void
require_shared(void)
{
	if (shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the parca scrape worker needs parca in shared_preload_libraries")));
}

void
scrape_init(void)
{
	BackgroundWorker worker;

	DefineCustomBoolVariable("parca.scrape_enabled",
							 "Whether the scrape worker scrapes its targets.",
							 NULL,
							 &scrape_enabled, true,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("parca.scrape_database",
							   "Database whose parca.scrape_* tables the scrape worker reads and where it stores profiles.",
							   "Changing it restarts the worker.",
							   &scrape_database, "postgres",
							   PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.scrape_concurrency",
							"Most scrapes the worker runs at once.",
							"A delta (CPU) profile holds its slot for a whole interval.",
							&scrape_concurrency, 512, 1, 10000,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("parca.scrape_redirects",
							 "Which HTTP redirects the scrape worker follows.",
							 "none; same_origin: to the target's own scheme, host and port; any: to any http or https URL.",
							 &scrape_redirects, SCRAPE_REDIRECTS_SAME_ORIGIN,
							 scrape_redirects_options,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	/* The worker and its shared memory exist only when preloaded. */
	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomIntVariable("parca.scrape_max_targets",
							"Most scrape targets shown in parca.targets.",
							"Each takes about 2 kB of shared memory.",
							&scrape_max_targets, 2048, 16, 1000000,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = scrape_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = scrape_shmem_startup;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "parca");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "parca_scrape_worker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "parca scrape worker");
	snprintf(worker.bgw_type, BGW_MAXLEN, "parca scrape worker");
	RegisterBackgroundWorker(&worker);
}

uint64
scrape_config_generation(void)
{
	return pg_atomic_read_u64(&shared->generation);
}

static void
detach_worker(int code, Datum arg)
{
	shared->worker_latch = NULL;
}

void
scrape_state_attach_worker(void)
{
	require_shared();
	shared->worker_latch = MyLatch;
	on_shmem_exit(detach_worker, 0);
}

static void
fill_slot(TargetSlot *slot, const ScrapeTarget *t)
{
	strlcpy(slot->error, t->last_error, sizeof(slot->error));
	slot->health = t->health;
	slot->last_scrape = t->last_scrape;
	slot->last_duration_us = t->last_duration_us;
}

/* Replace every slot by the worker's new target list. */
void
scrape_state_publish_all(ScrapeTarget *targets, int ntargets)
{
	int			n = Min(ntargets, scrape_max_targets);

	if (ntargets > scrape_max_targets)
		ereport(WARNING,
				(errmsg("parca scrape worker has %d targets, parca.targets shows the first %d",
						ntargets, scrape_max_targets),
				 errhint("Raise parca.scrape_max_targets.")));

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < ntargets; i++)
	{
		ScrapeTarget *t = &targets[i];
		TargetSlot *slot;

		if (i >= n)
		{
			t->slot = -1;
			continue;
		}
		t->slot = i;
		slot = &shared->slots[i];
		strlcpy(slot->job, t->job, sizeof(slot->job));
		strlcpy(slot->url, t->url, sizeof(slot->url));
		if (strlen(t->labels) < sizeof(slot->labels))
			strcpy(slot->labels, t->labels);
		else
			slot->labels[0] = '\0';
		fill_slot(slot, t);
	}
	shared->nslots = n;
	LWLockRelease(shared->lock);
}

/* Update the slot of one target after a scrape. */
void
scrape_state_publish(const ScrapeTarget *target)
{
	if (target->slot < 0)
		return;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	fill_slot(&shared->slots[target->slot], target);
	LWLockRelease(shared->lock);
}

/*
 * A string of a slot as text.  Copying into a slot may have cut a
 * character in two, an error may quote what a target sent (a redirect's
 * Location), and the view may be read in a database of another encoding
 * than the worker's.
 */
static Datum
slot_text(const char *s)
{
	bool		repaired;

	return PointerGetDatum(cstring_to_text(valid_text(s, strlen(s), &repaired)));
}

/*
 * parca.scrape_target_states(): the rows of the parca.targets view.
 */
PG_FUNCTION_INFO_V1(parca_scrape_target_states);
Datum
parca_scrape_target_states(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TargetSlot *copy;
	int			n;

	require_shared();
	InitMaterializedSRF(fcinfo, 0);

	LWLockAcquire(shared->lock, LW_SHARED);
	n = shared->nslots;
	copy = palloc(sizeof(TargetSlot) * Max(n, 1));
	memcpy(copy, shared->slots, sizeof(TargetSlot) * n);
	LWLockRelease(shared->lock);

	for (int i = 0; i < n; i++)
	{
		TargetSlot *s = &copy[i];
		Datum		values[7];
		bool		nulls[7] = {0};
		static const char *const health_names[] = {"unknown", "up", "down"};

		values[0] = slot_text(s->job);
		values[1] = slot_text(s->url);
		if (s->labels[0] != '\0')
			values[2] = DirectFunctionCall1(jsonb_in,
											CStringGetDatum(TextDatumGetCString(slot_text(s->labels))));
		else
			nulls[2] = true;
		values[3] = CStringGetTextDatum(health_names[s->health]);
		if (s->health == SCRAPE_HEALTH_UNKNOWN)
		{
			nulls[4] = nulls[5] = true;
		}
		else
		{
			Interval   *iv = palloc0(sizeof(Interval));

			iv->time = s->last_duration_us;
			values[4] = TimestampTzGetDatum(s->last_scrape);
			values[5] = IntervalPGetDatum(iv);
		}
		if (s->error[0] != '\0')
			values[6] = slot_text(s->error);
		else
			nulls[6] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

static void
config_xact_callback(XactEvent event, void *arg)
{
	if (!config_changed_in_xact)
		return;
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			config_changed_in_xact = false;
			if (shared != NULL)
			{
				Latch	   *latch = shared->worker_latch;

				pg_atomic_fetch_add_u64(&shared->generation, 1);
				if (latch != NULL)
					SetLatch(latch);
			}
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			config_changed_in_xact = false;
			break;
		default:
			break;
	}
}

/*
 * Statement trigger on the configuration tables: when the transaction
 * commits, the worker reloads.
 */
PG_FUNCTION_INFO_V1(parca_scrape_config_changed);
Datum
parca_scrape_config_changed(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("parca.scrape_config_changed() must be called as a trigger")));
	if (!xact_callback_registered)
	{
		RegisterXactCallback(config_xact_callback, NULL);
		xact_callback_registered = true;
	}
	config_changed_in_xact = true;
	return PointerGetDatum(NULL);
}
