/*
 * state.c
 *		Settings and shared memory of the scrape workers.
 *
 * A worker keeps its targets in its own memory; what parca.targets shows
 * is a copy it publishes into a fixed array in shared memory (one slot per
 * target, parca.scrape_max_targets slots for the workers of every
 * database, each slot marked with its database).  A configuration change
 * wakes the database's worker, or has the launcher start it, when the
 * changing transaction commits (workers_wake).
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "scrape/scrape.h"
#include "scrape/scrape_internal.h"
#include "types/valid_text.h"
#include "workers/workers.h"

bool		scrape_enabled = true;
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
	Oid			dboid;			/* the worker's database; InvalidOid: free */
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
	LWLock	   *lock;			/* protects slots */
	TargetSlot	slots[FLEXIBLE_ARRAY_MEMBER];	/* [scrape_max_targets] */
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
		for (int i = 0; i < scrape_max_targets; i++)
			shared->slots[i].dboid = InvalidOid;
	}
	LWLockRelease(AddinShmemInitLock);
}

static void
require_shared(void)
{
	if (shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the parca scrape workers need parca in shared_preload_libraries")));
}

void
scrape_init(void)
{
	DefineCustomBoolVariable("parca.scrape_enabled",
							 "Whether the scrape workers scrape their targets.",
							 NULL,
							 &scrape_enabled, true,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.scrape_concurrency",
							"Most scrapes a scrape worker runs at once.",
							"A delta (CPU) profile holds its slot for a whole interval.",
							&scrape_concurrency, 512, 1, 10000,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("parca.scrape_redirects",
							 "Which HTTP redirects the scrape workers follow.",
							 "none; same_origin: to the target's own scheme, host and port; any: to any http or https URL.",
							 &scrape_redirects, SCRAPE_REDIRECTS_SAME_ORIGIN,
							 scrape_redirects_options,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	workers_set_wanted(WORKER_SCRAPE, scrape_jobs_enabled);
	/* The workers and their shared memory exist only when preloaded. */
	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomIntVariable("parca.scrape_max_targets",
							"Most scrape targets shown in parca.targets, in all databases together.",
							"Each takes about 2 kB of shared memory.",
							&scrape_max_targets, 2048, 16, 1000000,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = scrape_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = scrape_shmem_startup;
}

/* Free the slots of this worker's database.  Locked by the caller. */
static void
free_own_slots(void)
{
	for (int i = 0; i < scrape_max_targets; i++)
		if (shared->slots[i].dboid == MyDatabaseId)
			shared->slots[i].dboid = InvalidOid;
}

static void
detach_worker(int code, Datum arg)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	free_own_slots();
	LWLockRelease(shared->lock);
}

void
scrape_state_attach_worker(void)
{
	require_shared();
	before_shmem_exit(detach_worker, 0);
}

static void
fill_slot(TargetSlot *slot, const ScrapeTarget *t)
{
	strlcpy(slot->error, t->last_error, sizeof(slot->error));
	slot->health = t->health;
	slot->last_scrape = t->last_scrape;
	slot->last_duration_us = t->last_duration_us;
}

/*
 * Replace the slots of this worker's database by its new target list, in
 * the slots free or its own.
 */
void
scrape_state_publish_all(ScrapeTarget *targets, int ntargets)
{
	int			next = 0;
	int			shown = 0;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	free_own_slots();
	for (int i = 0; i < ntargets; i++)
	{
		ScrapeTarget *t = &targets[i];
		TargetSlot *slot;

		while (next < scrape_max_targets && OidIsValid(shared->slots[next].dboid))
			next++;
		if (next == scrape_max_targets)
		{
			t->slot = -1;
			continue;
		}
		t->slot = next;
		shown++;
		slot = &shared->slots[next];
		slot->dboid = MyDatabaseId;
		strlcpy(slot->job, t->job, sizeof(slot->job));
		strlcpy(slot->url, t->url, sizeof(slot->url));
		if (strlen(t->labels) < sizeof(slot->labels))
			strcpy(slot->labels, t->labels);
		else
			slot->labels[0] = '\0';
		fill_slot(slot, t);
	}
	LWLockRelease(shared->lock);
	if (shown < ntargets)
		ereport(WARNING,
				(errmsg("parca scrape worker has %d targets, parca.targets shows %d of them",
						ntargets, shown),
				 errhint("Raise parca.scrape_max_targets (shared by the scrape workers of every database).")));
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
 * parca.scrape_target_states(): the rows of the parca.targets view, those
 * of the current database's worker.
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

	n = 0;
	LWLockAcquire(shared->lock, LW_SHARED);
	for (int i = 0; i < scrape_max_targets; i++)
		n += shared->slots[i].dboid == MyDatabaseId;
	copy = palloc(sizeof(TargetSlot) * Max(n, 1));
	n = 0;
	for (int i = 0; i < scrape_max_targets; i++)
		if (shared->slots[i].dboid == MyDatabaseId)
			copy[n++] = shared->slots[i];
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
			workers_wake(WORKER_SCRAPE);
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
 * commits, the database's worker reloads (or starts).
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
