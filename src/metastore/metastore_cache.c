/*
 * metastore_cache.c
 *		What each backend knows to be stored in the metastore: the ids of
 *		mappings, functions and locations, the series, and the stacktrace
 *		type's OIDs (metastore_internal.h).
 *
 * To keep a warm ingest cheap each backend caches the ids it knows to be
 * stored; ids this transaction wrote wait in a pending list and join the
 * cache only when the transaction commits (a subtransaction abort drops
 * its own), so the cache never names a row that was rolled back.  A
 * relcache invalidation of any metastore table (TRUNCATE, DROP) empties
 * the cache: the callback only notes the relation (it may run in the
 * middle of an ingest, where nothing may be freed), and the caches are
 * checked at the next entry point (metastore_cache_begin).  The
 * metastore's garbage collection (sql/45_metastore_gc.sql) sends such an
 * invalidation too.
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "installation/extension_version.h"
#include "metastore/metastore_internal.h"
#include "types/keyed_table.h"

/* Beyond this many cached ids the cache starts over. */
#define ID_CACHE_MAX_ENTRIES	(1024 * 1024)
#define SERIES_CACHE_MAX_ENTRIES (64 * 1024)

typedef struct IdCacheEntry
{
	uint64		id;				/* hash key */
	bool		symbolized;		/* a location known to have lines */
} IdCacheEntry;

typedef struct SeriesCacheEntry
{
	uint64		key_hash;		/* hash key */
	char	   *key;			/* profile type, NUL, labels as text */
	Size		key_len;
	int64		series_id;
} SeriesCacheEntry;

typedef struct PendingId
{
	uint64		id;				/* hash key */
	bool		symbolized;
	int			nest_level;
} PendingId;

/* A series this transaction found or created, not yet committed. */
typedef struct PendingSeries
{
	SeriesCacheEntry series;	/* key_hash first: the hash key */
	int			nest_level;
} PendingSeries;

static MemoryContext cache_cxt = NULL;
static HTAB *id_cache = NULL;
static HTAB *series_cache = NULL;
static HTAB *pending_series = NULL;
static HTAB *pending_ids = NULL;
static Oid	stacktrace_oid = InvalidOid;
static Oid	stacktrace_array_oid = InvalidOid;

/* Relations invalidated since the caches were last checked. */
#define MAX_NOTED_INVALIDATIONS 16
static Oid	noted_relids[MAX_NOTED_INVALIDATIONS];
static int	n_noted_relids = 0;
static bool all_invalidated = false;

static void
reset_caches(void)
{
	if (cache_cxt)
		MemoryContextReset(cache_cxt);
	id_cache = NULL;
	series_cache = NULL;
	pending_series = NULL;
	pending_ids = NULL;
	stacktrace_oid = stacktrace_array_oid = InvalidOid;
}

static void
relcache_callback(Datum arg, Oid relid)
{
	if (id_cache == NULL && series_cache == NULL)
		return;
	if (relid == InvalidOid || n_noted_relids == MAX_NOTED_INVALIDATIONS)
		all_invalidated = true;
	else
		noted_relids[n_noted_relids++] = relid;
}

/* Did a metastore table (or one no longer there) change since last time? */
static bool
metastore_invalidated(void)
{
	bool		invalidated = all_invalidated;

	for (int i = 0; i < n_noted_relids && !invalidated; i++)
	{
		Oid			nsp = get_rel_namespace(noted_relids[i]);
		char	   *name = OidIsValid(nsp) ? get_namespace_name(nsp) : NULL;

		invalidated = name == NULL || strcmp(name, "parca") == 0;
	}
	n_noted_relids = 0;
	all_invalidated = false;
	return invalidated;
}

static void
forget_pending(int from_level)
{
	HASH_SEQ_STATUS seq;
	PendingId  *pi;
	PendingSeries *ps;

	if (pending_ids == NULL)
		return;
	hash_seq_init(&seq, pending_ids);
	while ((pi = hash_seq_search(&seq)) != NULL)
		if (pi->nest_level >= from_level)
			hash_search(pending_ids, &pi->id, HASH_REMOVE, NULL);
	hash_seq_init(&seq, pending_series);
	while ((ps = hash_seq_search(&seq)) != NULL)
		if (ps->nest_level >= from_level)
		{
			pfree(ps->series.key);
			hash_search(pending_series, &ps->series.key_hash, HASH_REMOVE, NULL);
		}
}

static void
apply_pending(void)
{
	HASH_SEQ_STATUS seq;
	PendingId  *pi;
	PendingSeries *ps;

	if (pending_ids == NULL)
		return;
	hash_seq_init(&seq, pending_ids);
	while ((pi = hash_seq_search(&seq)) != NULL)
	{
		if (hash_get_num_entries(id_cache) < ID_CACHE_MAX_ENTRIES)
		{
			bool		found;
			IdCacheEntry *e = hash_search(id_cache, &pi->id, HASH_ENTER, &found);

			e->symbolized = pi->symbolized || (found && e->symbolized);
		}
		hash_search(pending_ids, &pi->id, HASH_REMOVE, NULL);
	}
	hash_seq_init(&seq, pending_series);
	while ((ps = hash_seq_search(&seq)) != NULL)
	{
		SeriesCacheEntry *e = NULL;
		bool		found = false;

		if (hash_get_num_entries(series_cache) < SERIES_CACHE_MAX_ENTRIES)
			e = hash_search(series_cache, &ps->series.key_hash, HASH_ENTER, &found);
		if (found)
			pfree(e->key);
		if (e != NULL)
			*e = ps->series;
		else
			pfree(ps->series.key);
		hash_search(pending_series, &ps->series.key_hash, HASH_REMOVE, NULL);
	}
}

/* Entries of this subtransaction now belong to its parent. */
static void
promote_pending(int level)
{
	HASH_SEQ_STATUS seq;
	PendingId  *pi;
	PendingSeries *ps;

	if (pending_ids == NULL)
		return;
	hash_seq_init(&seq, pending_ids);
	while ((pi = hash_seq_search(&seq)) != NULL)
		if (pi->nest_level >= level)
			pi->nest_level = level - 1;
	hash_seq_init(&seq, pending_series);
	while ((ps = hash_seq_search(&seq)) != NULL)
		if (ps->nest_level >= level)
			ps->nest_level = level - 1;
}

static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			/* No catalog look-ups here: after any invalidation, keep nothing. */
			if (n_noted_relids > 0 || all_invalidated)
				forget_pending(0);
			else
				apply_pending();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			forget_pending(0);
			break;
		default:
			break;
	}
}

static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();

	if (event == SUBXACT_EVENT_ABORT_SUB)
		forget_pending(level);
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
		promote_pending(level);
}

void
metastore_cache_begin(void)
{
	extension_version_check();
	if ((n_noted_relids > 0 || all_invalidated) && metastore_invalidated())
		reset_caches();

	if (cache_cxt == NULL)
	{
		cache_cxt = AllocSetContextCreate(TopMemoryContext, "parca metastore cache",
										  ALLOCSET_DEFAULT_SIZES);
		CacheRegisterRelcacheCallback(relcache_callback, (Datum) 0);
		RegisterXactCallback(xact_callback, NULL);
		RegisterSubXactCallback(subxact_callback, NULL);
	}
	if (id_cache == NULL || hash_get_num_entries(id_cache) >= ID_CACHE_MAX_ENTRIES)
		id_cache = keyed_table_create("parca id cache", 4096, sizeof(uint64),
									  sizeof(IdCacheEntry), cache_cxt);
	if (series_cache == NULL)
		series_cache = keyed_table_create("parca series cache", 256, sizeof(uint64),
										  sizeof(SeriesCacheEntry), cache_cxt);
	if (pending_ids == NULL)
		pending_ids = keyed_table_create("parca pending ids", 4096, sizeof(uint64),
										 sizeof(PendingId), cache_cxt);
	if (pending_series == NULL)
		pending_series = keyed_table_create("parca pending series", 64, sizeof(uint64),
											sizeof(PendingSeries), cache_cxt);
}

void
metastore_cache_remember_id(uint64 id, bool symbolized)
{
	bool		found;
	PendingId  *p = hash_search(pending_ids, &id, HASH_ENTER, &found);

	/*
	 * A location symbolized here, in a deeper subtransaction than stored,
	 * moves to this level: should this level abort, forgetting the id
	 * altogether only costs a look-up later.
	 */
	if (!found || (symbolized && !p->symbolized))
		p->nest_level = GetCurrentTransactionNestLevel();
	p->symbolized = symbolized || (found && p->symbolized);
}

/*
 * Stored already, committed or by this transaction, and (for locations
 * that now have lines) no symbolization due.
 */
bool
metastore_cache_known(uint64 id, bool have_lines)
{
	IdCacheEntry *e = hash_search(id_cache, &id, HASH_FIND, NULL);
	PendingId  *p;

	if (e != NULL && (e->symbolized || !have_lines))
		return true;
	p = hash_search(pending_ids, &id, HASH_FIND, NULL);
	return p != NULL && (p->symbolized || !have_lines);
}


bool
metastore_cache_series(uint64 key_hash, const char *key, Size key_len, int64 *series_id)
{
	SeriesCacheEntry *e = hash_search(series_cache, &key_hash, HASH_FIND, NULL);

	if (e == NULL)
		e = hash_search(pending_series, &key_hash, HASH_FIND, NULL);
	if (e == NULL || e->key_len != key_len || memcmp(e->key, key, key_len) != 0)
		return false;
	*series_id = e->series_id;
	return true;
}

void
metastore_cache_remember_series(uint64 key_hash, const char *key, Size key_len, int64 series_id)
{
	/* On a 64-bit collision the newer key simply takes the slot. */
	PendingSeries *p = hash_search(pending_series, &key_hash, HASH_ENTER, NULL);

	p->series.key = MemoryContextAlloc(cache_cxt, key_len);
	memcpy(p->series.key, key, key_len);
	p->series.key_len = key_len;
	p->series.series_id = series_id;
	p->nest_level = GetCurrentTransactionNestLevel();
}

Oid
metastore_cache_stacktrace_type(bool array)
{
	return array ? stacktrace_array_oid : stacktrace_oid;
}

void
metastore_cache_set_stacktrace_type(Oid type, Oid array_type)
{
	stacktrace_oid = type;
	stacktrace_array_oid = array_type;
}
