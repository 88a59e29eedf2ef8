/*
 * scrape_worker.c
 *		The scrape worker's main loop.
 *
 * One background worker in each database where a scrape job is enabled,
 * started by the launcher (src/workers/), keeps the database's list of
 * targets (config.c), starts each target's scrape when it is due
 * (http.c), and stores every complete response through
 * parca_ingest_pprof(), whole or not at all.  Scrapes are spread over the
 * interval by a hash of the URL.  A
 * scrape still running when the next one is due (a CPU profile lasts the
 * whole interval) is followed at once by the next, as a Go ticker does.
 *
 * Profiles are stored in batches: those that completed within
 * STORE_BATCH_MS go into one transaction, which saves a commit (and a small
 * columnar stripe to compact later) per profile; with 1,000 endpoints every
 * 10 s that was a third of the worker's CPU (bench/scrape.sh with
 * BENCH_SCRAPE_TARGETS=1000).  If any profile of a batch
 * fails to store, the batch is rolled back and its profiles are stored in a
 * transaction each, so that one bad profile never takes others with it; a
 * target whose profile failed is stored alone until one succeeds again.
 *
 * The configuration is reloaded when a transaction that changed it
 * commits (state.c), when a file_sd file changes, and on SIGHUP.  The
 * worker ends when no job is enabled any more (the next change that
 * enables one has the launcher start it again) or the extension is gone.
 */
#include "postgres.h"

#include <malloc.h>

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/pmsignal.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "installation/citus.h"
#include "installation/extension_version.h"
#include "ingest/ingest.h"
#include "scrape/scrape.h"
#include "scrape/scrape_internal.h"
#include "workers/workers.h"

PGDLLEXPORT void parca_scrape_worker_main(Datum arg);

/* How often the worker looks whether the extension is still there, and for file_sd changes. */
#define EXTENSION_CHECK_MS	10000
#define FILE_SD_CHECK_MS	1000

static ScrapeTarget *targets = NULL;
static int	ntargets = 0;
static MemoryContext targets_cxt = NULL;
static uint64 loaded_generation = 0;
static bool force_reload = true;
static char *ext_schema = NULL; /* NULL: extension not installed */
static SPIPlanPtr ingest_plan = NULL;	/* parca_ingest_pprof call, kept */
static TimestampTz next_extension_check = 0;
static TimestampTz next_file_sd_check = 0;

/* Scraped profiles waiting to be stored, in the order they completed. */
#define STORE_BATCH_MS		1000
#define STORE_BATCH_MAX		256

typedef struct PendingProfile
{
	ScrapeTarget *target;
	ScrapeResult result;
	TimestampTz done_at;
} PendingProfile;

static PendingProfile pending[STORE_BATCH_MAX];
static int	npending = 0;
static size_t pending_bytes = 0;

/* when start_due() must look at the targets again */
static TimestampTz next_pass = 0;
static bool pass_needed = true;
static bool slot_wanted = false;	/* a due target waits for a free slot */

static int
target_cmp(const void *a, const void *b)
{
	const ScrapeTarget *x = a;
	const ScrapeTarget *y = b;
	int			c;

	if ((c = strcmp(x->job, y->job)) != 0)
		return c;
	if ((c = strcmp(x->url, y->url)) != 0)
		return c;
	return strcmp(x->labels, y->labels);
}

/*
 * Adopt a new target list: targets that stay keep their schedule, transfer
 * and health; those that went away lose their transfer.
 */
static void
adopt_targets(ScrapeTarget *newt, int newn, MemoryContext newcxt)
{
	TimestampTz now = GetCurrentTimestamp();
	int			i = 0,
				j = 0;

	if (newn > 1)
		qsort(newt, newn, sizeof(ScrapeTarget), target_cmp);
	while (i < ntargets || j < newn)
	{
		int			c;

		if (i >= ntargets)
			c = 1;
		else if (j >= newn)
			c = -1;
		else
			c = target_cmp(&targets[i], &newt[j]);

		if (c < 0)
			scrape_http_cancel(&targets[i++]);
		else if (c > 0)
		{
			ScrapeTarget *t = &newt[j++];
			uint32		h = hash_bytes((const unsigned char *) t->url, strlen(t->url));

			/* first scrape somewhere within the first interval */
			t->next_due = now + (int64) (h % (uint32) t->interval_ms) * 1000;
		}
		else
		{
			ScrapeTarget *o = &targets[i++];
			ScrapeTarget *t = &newt[j++];

			t->next_due = o->next_due;
			t->due = o->due;
			t->health = o->health;
			t->last_scrape = o->last_scrape;
			t->last_duration_us = o->last_duration_us;
			memcpy(t->last_error, o->last_error, sizeof(t->last_error));
			t->transfer = o->transfer;
			if (t->transfer)
				scrape_http_retarget(t->transfer, t);
		}
	}
	if (targets_cxt)
		MemoryContextDelete(targets_cxt);
	targets_cxt = newcxt;
	targets = newt;
	ntargets = newn;
	pass_needed = true;
	scrape_state_publish_all(targets, ntargets);
}

/*
 * The worker's transactions: each runs in PG_TRY, begins with begin_work(),
 * ends with end_work(), or on error with abort_work(), which returns the
 * error for the caller to report and free.
 */
static void
begin_work(const char *activity)
{
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

/*
 * The session is the bootstrap superuser's (a background worker in
 * PostgreSQL 15 can only connect as a role that may log in); what the
 * worker does with the extension's tables and functions runs as the
 * NOLOGIN role parca_scrape_worker (sql/80_scrape.sql), which holds just
 * the rights to read the scrape configuration and store profiles, in a
 * security-restricted operation, as PostgreSQL runs maintenance commands
 * as a table's owner.  The rest of the transaction runs as that role;
 * end_work() switches back, and an abort does by itself.
 */
static Oid	session_userid = InvalidOid;
static int	session_sec_context = 0;
static bool in_worker_role = false;

static void
become_worker_role(void)
{
	Oid			role = get_role_oid(SCRAPE_WORKER_ROLE, true);

	if (!OidIsValid(role))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role \"%s\" does not exist", SCRAPE_WORKER_ROLE),
				 errhint("CREATE EXTENSION parca creates it; the scrape worker stores nothing without it.")));
	if (citus_refuses_role(get_relname_relid("samples", get_namespace_oid("parca", true)), role))
		return;
	GetUserIdAndSecContext(&session_userid, &session_sec_context);
	SetUserIdAndSecContext(role, session_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	in_worker_role = true;
}

static void
end_work(void)
{
	SPI_finish();
	PopActiveSnapshot();
	if (in_worker_role)
		SetUserIdAndSecContext(session_userid, session_sec_context);
	in_worker_role = false;
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
}

static ErrorData *
abort_work(MemoryContext oldcxt)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(oldcxt);
	edata = CopyErrorData();
	FlushErrorState();
	/* restores the session's user too */
	AbortCurrentTransaction();
	in_worker_role = false;
	pgstat_report_activity(STATE_IDLE, NULL);
	return edata;
}

/* Run parca_ingest_pprof() on one scraped profile, in the current transaction. */
static void
ingest(PendingProfile *p)
{
	Datum		args[3];

	if (ingest_plan == NULL)
	{
		Oid			argtypes[3] = {BYTEAOID, TEXTOID, TEXTOID};
		char	   *sql = psprintf("SELECT %s.parca_ingest_pprof($1, $2, $3::pg_catalog.jsonb)",
								   quote_identifier(ext_schema));
		SPIPlanPtr	plan = SPI_prepare(sql, 3, argtypes);

		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "could not prepare \"%s\"", sql);
		ingest_plan = plan;
	}
	args[0] = PointerGetDatum(p->result.body);
	args[1] = CStringGetTextDatum(p->target->profile_name);
	args[2] = CStringGetTextDatum(p->target->labels);
	if (SPI_execute_plan(ingest_plan, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_plan failed");
}

/*
 * Store the given pending profiles in one transaction; returns false if
 * that failed, and then the error says why when there was only one.
 */
static bool
store(PendingProfile **batch, int n)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	volatile bool stored = false;

	PG_TRY();
	{
		begin_work(n == 1 ? "parca: storing a scraped profile" :
				   "parca: storing scraped profiles");
		become_worker_role();
		for (int i = 0; i < n; i++)
			ingest(batch[i]);
		end_work();
		stored = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata = abort_work(oldcxt);

		if (n == 1)
			snprintf(batch[0]->result.error, sizeof(batch[0]->result.error),
					 "ingest: %s", edata->message);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	return stored;
}

/* Record a scrape's outcome; log when a target goes down or comes back. */
static void
record(ScrapeTarget *t, ScrapeResult *res, TimestampTz done_at)
{
	ScrapeHealth health = res->error[0] ? SCRAPE_HEALTH_DOWN : SCRAPE_HEALTH_UP;

	if (health == SCRAPE_HEALTH_DOWN && t->health != SCRAPE_HEALTH_DOWN)
		ereport(LOG,
				(errmsg("parca scrape of \"%s\" (job \"%s\") failed: %s",
						t->url, t->job, res->error)));
	else if (health == SCRAPE_HEALTH_UP && t->health == SCRAPE_HEALTH_DOWN)
		ereport(LOG,
				(errmsg("parca scrape of \"%s\" (job \"%s\") succeeds again", t->url, t->job)));

	t->health = health;
	t->last_scrape = done_at - res->duration_us;
	t->last_duration_us = res->duration_us;
	memcpy(t->last_error, res->error, sizeof(t->last_error));
	scrape_state_publish(t);
}

/*
 * Store the pending profiles: together in one transaction, and one by one
 * those of targets that failed before and, if the batch fails, all of
 * them.  Then record their outcomes and free them.  Called before the
 * target list changes, since pending profiles point into it.
 */
static void
store_pending(void)
{
	PendingProfile *batch[STORE_BATCH_MAX];
	int			nbatch = 0;
	bool		batch_stored;
	bool		any_failed = false;

	if (npending == 0)
		return;
	for (int i = 0; i < npending; i++)
		if (!pending[i].target->store_alone)
			batch[nbatch++] = &pending[i];
	batch_stored = nbatch > 1 && store(batch, nbatch);
	for (int i = 0; i < npending; i++)
	{
		PendingProfile *p = &pending[i];

		if (!batch_stored || p->target->store_alone)
		{
			PendingProfile *one[1] = {p};

			p->target->store_alone = !store(one, 1);
			any_failed |= p->target->store_alone;
		}
		scrape_http_result_free(&p->result);
		record(p->target, &p->result, p->done_at);
	}
	npending = 0;
	pending_bytes = 0;

	/*
	 * A profile that failed may have been one made to take all the memory
	 * ingestion allows (parca.max_profile_size).  Ingestion keeps freed
	 * heap for the next profile, and blocks freed below ones still in use
	 * stay with the process anyway: give all of it back to the kernel.
	 */
	if (any_failed)
		malloc_trim(0);
}

/*
 * Look for the extension; reload the configuration when needed.  The
 * worker ends when the extension is gone, or no job is enabled.
 */
static void
load_config(bool full_reload)
{
	uint64		generation = workers_wakeups();
	MemoryContext oldcxt = CurrentMemoryContext;
	volatile MemoryContext newcxt = NULL;
	ScrapeTarget *volatile newt = NULL;
	volatile int newn = 0;
	volatile bool full = full_reload;
	volatile bool any_job = true;
	bool		had_extension = ext_schema != NULL;
	char	   *schema;

	/* pending profiles point into the target list and use ingest_plan */
	store_pending();

	PG_TRY();
	{
		begin_work("parca: loading the scrape configuration");

		schema = parca_extension_schema();
		if (schema == NULL || ext_schema == NULL || strcmp(schema, ext_schema) != 0)
		{
			/* installed, dropped or recreated elsewhere: prepare again */
			if (ingest_plan)
				SPI_freeplan(ingest_plan);
			ingest_plan = NULL;
			if (ext_schema)
				pfree(ext_schema);
			ext_schema = schema ? MemoryContextStrdup(TopMemoryContext, schema) : NULL;
		}
		if (ext_schema != NULL && !had_extension)
			full = true;
		if (ext_schema != NULL && full)
		{
			become_worker_role();
			any_job = scrape_jobs_enabled();
		}
		if (ext_schema != NULL && full && scrape_enabled)
		{
			int			n;

			newcxt = AllocSetContextCreate(TopMemoryContext, "parca scrape targets",
										   ALLOCSET_DEFAULT_SIZES);
			newt = scrape_config_load(&n, newcxt);
			newn = n;
		}

		end_work();
	}
	PG_CATCH();
	{
		ErrorData  *edata = abort_work(oldcxt);

		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("parca scrape worker could not load its configuration: %s",
						edata->message)));
		FreeErrorData(edata);
		if (newcxt)
			MemoryContextDelete(newcxt);
		/* try again at the next change or check */
		loaded_generation = generation;
		return;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);

	if (ext_schema == NULL)
		workers_exit(WORKER_EXIT_NO_EXTENSION);
	if (full)
	{
		if (newcxt == NULL)
			newcxt = AllocSetContextCreate(TopMemoryContext, "parca scrape targets",
										   ALLOCSET_SMALL_SIZES);
		adopt_targets(newt, newn, newcxt);
		loaded_generation = generation;
	}
	/* unless woken since: then the loop loads again */
	if (!any_job)
		workers_exit_idle(generation);
}

/*
 * Start what is due; returns how long the loop may sleep, in ms.  The
 * targets are looked at only when one may be due: at the earliest due time
 * seen, after a scrape that has a successor waiting ends, and after a
 * reload.
 */
static int
start_due(void)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz earliest = DT_NOEND;

	if (!pass_needed && now < next_pass)
		return (int) Min((next_pass - now + 999) / 1000, 1000);

	pass_needed = false;
	slot_wanted = false;
	for (int i = 0; i < ntargets; i++)
	{
		ScrapeTarget *t = &targets[i];
		int64		interval_us = t->interval_ms * 1000;

		if (now >= t->next_due)
		{
			t->due = true;
			t->next_due += interval_us * ((now - t->next_due) / interval_us + 1);
		}
		if (t->due && t->transfer == NULL)
		{
			if (scrape_http_running() < scrape_concurrency)
			{
				t->due = false;
				scrape_http_start(t, (size_t) parca_max_profile_size);
			}
			else
				slot_wanted = true;
		}
		earliest = Min(earliest, t->next_due);
	}
	next_pass = earliest;
	return (int) Max(Min((earliest - now) / 1000, 1000), 1);
}

/*
 * Take the finished scrapes: failures are recorded at once, profiles wait
 * in pending.  Returns how long, in ms, the oldest pending profile may
 * still wait.
 */
static int
finish_done(void)
{
	ScrapeResult res;
	ScrapeTarget *t;
	TimestampTz now = GetCurrentTimestamp();

	while ((t = scrape_http_next_done(&res)) != NULL)
	{
		if (t->due || slot_wanted)
			pass_needed = true;
		if (res.body == NULL)
		{
			record(t, &res, now);
			continue;
		}
		if (npending == STORE_BATCH_MAX)
			store_pending();
		pending[npending].target = t;
		pending[npending].result = res;
		pending[npending].done_at = now;
		npending++;
		pending_bytes += res.buffered;
	}
	if (npending == 0)
		return 1000;
	/* the buffers count against the scrapes' memory limit (http.c) */
	if (pending_bytes >= (size_t) parca_max_profile_size / 2)
		store_pending();
	else
	{
		int64		waited_ms = (now - pending[0].done_at) / 1000;

		if (waited_ms < STORE_BATCH_MS)
			return (int) (STORE_BATCH_MS - waited_ms);
		store_pending();
	}
	return 1000;
}

void
parca_scrape_worker_main(Datum arg)
{
	MemoryContext loop_cxt;
	int			store_in_ms = 1000;

	/* connected, search_path pinned (docs/security.md) */
	workers_begin(arg);
	/* a scrape lost in a crash is one interval of one target */
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);
	/* profiles are small: compiling a query would cost more than running it */
	SetConfigOption("jit", "off", PGC_SUSET, PGC_S_OVERRIDE);
	/*
	 * Compaction of the samples table's small stripes buffers the rows it
	 * merges: keep that to 16 MB here, unless the setting was made
	 * (file, database, role).
	 */
	SetConfigOption("parca.columnar_write_memory", "16MB", PGC_USERSET, PGC_S_DYNAMIC_DEFAULT);

	scrape_state_attach_worker();
	scrape_http_init();

	/* what one round of the loop allocates, outside transactions */
	loop_cxt = AllocSetContextCreate(TopMemoryContext, "parca scrape loop",
									 ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		TimestampTz now;
		int			wait_ms = store_in_ms;

		MemoryContextSwitchTo(loop_cxt);
		MemoryContextReset(loop_cxt);
		CHECK_FOR_INTERRUPTS();
		if (!PostmasterIsAlive())
			proc_exit(1);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			force_reload = true;
		}

		now = GetCurrentTimestamp();
		if (force_reload || workers_wakeups() != loaded_generation)
		{
			force_reload = false;
			load_config(true);
			next_extension_check = TimestampTzPlusMilliseconds(now, EXTENSION_CHECK_MS);
		}
		else if (now >= next_extension_check)
		{
			load_config(false);
			next_extension_check = TimestampTzPlusMilliseconds(now, EXTENSION_CHECK_MS);
		}
		else if (now >= next_file_sd_check)
		{
			if (ext_schema != NULL && file_sd_changed())
				load_config(true);
			next_file_sd_check = TimestampTzPlusMilliseconds(now, FILE_SD_CHECK_MS);
		}

		if (ntargets > 0)
			wait_ms = Min(wait_ms, start_due());

		if (scrape_http_running() > 0)
			scrape_http_wait(wait_ms);
		else
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 wait_ms, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
		store_in_ms = finish_done();
	}
}
