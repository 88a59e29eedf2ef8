/*
 * series_index.c
 *		Keeping the series index: parca.label_values, parca.series_hours
 *		and parca.label_hours (sql/31_series_index.sql), and the keys of the
 *		GIN index on parca.series.
 *
 * Writers note what they add, and the notes are written once, just before
 * the transaction commits (XACT_EVENT_PRE_COMMIT), in one or two
 * statements whatever the number of rows:
 *
 * - the trigger on parca.series notes the label values of each series
 *   inserted;
 * - the columnar table access method hands over every row inserted into
 *   a partition of parca.samples (columnar_insert_hook): the hour and
 *   series of each are noted.  Every writer goes through it (ingest, the
 *   agent's COPY, INSERT ... SELECT, a restore, the partition upkeep
 *   moving rows), and it costs a hash probe per row.
 *
 * Series deleted or changed (the metastore's garbage collection; by hand)
 * are handled at once, by statement triggers over their transition
 * tables: their hours go, and their label values that no series has any
 * more.  TRUNCATE of parca.series empties the index.
 *
 * Each backend remembers which hours and label values it saw committed,
 * so that a warm writer notes nothing; entries of an aborted
 * (sub)transaction are forgotten with it.  The tables have no unique
 * constraint: the statements insert what is missing, and two writers
 * adding the same entry at once both do (readers take distinct values).
 * They are written as the tables' owner, with search_path pg_catalog:
 * writers need no rights on them, and the statements are the module's.
 * Whether an entry is there is asked row by row, (SELECT ... LIMIT 1) IS
 * NULL, an index probe each: as NOT EXISTS the planner, which takes
 * unnest() and jsonb_each_text() for 100 rows, would read a whole table.
 *
 * This file notes, and says when to write; series_index_write.c holds the
 * statements, series_index_keys.c the keys of a label and of an hour.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "installation/citus.h"
#include "columnar/columnar.h"
#include "ids/ids.h"
#include "metastore/series_index.h"
#include "metastore/series_index_internal.h"
#include "types/keyed_table.h"

PG_FUNCTION_INFO_V1(parca_series_index_trigger);
PG_FUNCTION_INFO_V1(parca_series_index_rebuild);

/* Beyond this many remembered entries a backend starts over. */
#define COMMITTED_MAX_ENTRIES	(256 * 1024)

/* --- the tables, and what this backend knows of them -------------------- */

/* A relation the columnar callback met: is it a partition of parca.samples? */
typedef struct SamplesRel
{
	Oid			relid;			/* hash key */
	bool		is_samples;
	AttrNumber	time_att;
	AttrNumber	series_att;
} SamplesRel;

static MemoryContext cache_cxt = NULL;
static IndexTables tables;
static HTAB *samples_rels = NULL;
static HTAB *committed_pairs = NULL;	/* HourSeries: in parca.series_hours */
static HTAB *committed_values = NULL;	/* int64 keys: in parca.label_values */

/*
 * Set by the relcache callback when a table of the index, parca.series or
 * parca.samples changed (a collection, a TRUNCATE, a DROP): what this
 * backend remembers is emptied at its next use.
 */
static bool caches_stale = false;

/* The relation the columnar callback met last (InvalidOid: none, or changed since). */
static SamplesRel last_rel;

static void
forget_committed(void)
{
	if (committed_pairs)
		hash_destroy(committed_pairs);
	if (committed_values)
		hash_destroy(committed_values);
	committed_pairs = keyed_table_create("parca series hours seen", 256, sizeof(HourSeries),
										 sizeof(HourSeries), cache_cxt);
	committed_values = keyed_table_create("parca label values seen", 256, sizeof(int64),
										  sizeof(int64), cache_cxt);
}

/*
 * No catalog access here (the callback may run anywhere): the relation is
 * compared with the OIDs known, and a relation the columnar callback met
 * is forgotten, to be classified again when next met (its hash entry goes
 * to the table's free list; nothing is freed).
 */
static void
relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == tables.series || relid == tables.samples ||
		relid == tables.label_values || relid == tables.series_hours ||
		relid == tables.label_hours)
		caches_stale = true;
	else if (samples_rels)
		(void) hash_search(samples_rels, &relid, HASH_REMOVE, NULL);
	last_rel.relid = InvalidOid;
}

static void
ensure_caches(void)
{
	if (!caches_stale)
		return;
	caches_stale = false;
	tables.looked_up = false;
	hash_destroy(samples_rels);
	samples_rels = keyed_table_create("parca samples partitions", 256, sizeof(Oid), sizeof(SamplesRel),
									  cache_cxt);
	forget_committed();
}

static void
look_up_tables(void)
{
	Oid			nsp;
	HeapTuple	tup;

	ensure_caches();
	if (tables.looked_up)
		return;
	memset(&tables, 0, sizeof(tables));
	nsp = get_namespace_oid("parca", true);
	if (OidIsValid(nsp))
	{
		tables.series = get_relname_relid("series", nsp);
		tables.samples = get_relname_relid("samples", nsp);
		tables.label_values = get_relname_relid("label_values", nsp);
		tables.series_hours = get_relname_relid("series_hours", nsp);
		tables.label_hours = get_relname_relid("label_hours", nsp);
	}
	tables.present = OidIsValid(tables.series) && OidIsValid(tables.samples) &&
		OidIsValid(tables.label_values) && OidIsValid(tables.series_hours) &&
		OidIsValid(tables.label_hours);
	if (tables.present)
	{
		tup = SearchSysCache1(RELOID, ObjectIdGetDatum(tables.label_values));
		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for relation %u", tables.label_values);
		tables.owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
		ReleaseSysCache(tup);
	}
	tables.looked_up = true;
}

const IndexTables *
series_index_tables(void)
{
	look_up_tables();
	return &tables;
}

/* --- what this transaction adds (series_index_internal.h: Pending) ------- */

static Pending *pending = NULL;

/* Empty tables of the label values and series this transaction adds. */
static void
create_pending_series_tables(Pending *p)
{
	p->values = keyed_table_create("parca pending values", 256, sizeof(int64),
								   sizeof(PendingValue), p->cxt);
	p->series = keyed_table_create("parca pending series", 256, sizeof(int64),
								   sizeof(PendingSeries), p->cxt);
}

static Pending *
get_pending(void)
{
	if (pending == NULL)
	{
		MemoryContext cxt = AllocSetContextCreate(TopTransactionContext,
												  "parca series index pending",
												  ALLOCSET_DEFAULT_SIZES);

		pending = MemoryContextAllocZero(cxt, sizeof(Pending));
		pending->cxt = cxt;
		pending->pairs = keyed_table_create("parca pending hours", 256, sizeof(HourSeries),
											sizeof(PendingPair), cxt);
		create_pending_series_tables(pending);
	}
	return pending;
}

/*
 * Each pending entry ends with the nesting level of the (sub)transaction
 * that noted it: an abort of that level drops it, a commit hands it to
 * the level above.
 */
/* Enters key at the current nesting level (or keeps an outer level's entry). */
static void *
note(HTAB *table, const void *key, Size level_offset, bool *found)
{
	int			level = GetCurrentTransactionNestLevel();
	char	   *entry = hash_search(table, key, HASH_ENTER, found);
	int		   *entry_level = (int *) (entry + level_offset);

	if (!*found || *entry_level > level)
		*entry_level = level;
	return entry;
}

static void
end_level(HTAB *table, Size level_offset, int level, bool abort)
{
	HASH_SEQ_STATUS seq;
	char	   *entry;

	hash_seq_init(&seq, table);
	while ((entry = hash_seq_search(&seq)) != NULL)
	{
		int		   *entry_level = (int *) (entry + level_offset);

		if (*entry_level < level)
			continue;
		if (abort)
			hash_search(table, entry, HASH_REMOVE, NULL);
		else
			*entry_level = level - 1;
	}
}

typedef struct NoteValues
{
	Pending    *pending;
	const char *profile_type;
} NoteValues;

static void
note_value(void *arg, const char *name, const char *value)
{
	NoteValues *nv = arg;
	int64		key = series_index_key(nv->profile_type, name, value);
	bool		found;
	PendingValue *pv;

	if (hash_search(committed_values, &key, HASH_FIND, NULL) != NULL)
		return;
	pv = note(nv->pending->values, &key, offsetof(PendingValue, nest_level), &found);
	if (!found)
	{
		pv->profile_type = MemoryContextStrdup(nv->pending->cxt, nv->profile_type);
		pv->name = MemoryContextStrdup(nv->pending->cxt, name);
		pv->value = MemoryContextStrdup(nv->pending->cxt, value);
	}
}

/* --- the columnar callback: rows inserted into parca.samples' partitions */

static AttrNumber
column_of(TupleDesc desc, const char *name, Oid type)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		if (!a->attisdropped && a->atttypid == type && strcmp(NameStr(a->attname), name) == 0)
			return a->attnum;
	}
	return InvalidAttrNumber;
}

static SamplesRel
classify(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	SamplesRel	info = {relid, false, InvalidAttrNumber, InvalidAttrNumber};
	SamplesRel *sr;

	if (rel->rd_rel->relispartition)
	{
		look_up_tables();
		if (tables.present && list_member_oid(get_partition_ancestors(relid), tables.samples))
		{
			info.time_att = column_of(RelationGetDescr(rel), "time", TIMESTAMPTZOID);
			info.series_att = column_of(RelationGetDescr(rel), "series_id", INT8OID);
			info.is_samples = info.time_att != InvalidAttrNumber &&
				info.series_att != InvalidAttrNumber;
		}
	}
	/* the look-ups may have run invalidations: enter only now */
	ensure_caches();
	sr = hash_search(samples_rels, &relid, HASH_ENTER, NULL);
	*sr = info;
	return info;
}

static void
note_sample_rows(Relation rel, TupleTableSlot **slots, int nslots)
{
	Oid			relid = RelationGetRelid(rel);
	SamplesRel *found;
	SamplesRel	sr;
	Pending    *p;
	AttrNumber	natts;

	/* an INSERT hands its rows over one by one: the same relation again */
	if (relid == last_rel.relid && !caches_stale)
		sr = last_rel;
	else
	{
		ensure_caches();
		found = hash_search(samples_rels, &relid, HASH_FIND, NULL);
		sr = found ? *found : classify(rel);
		last_rel = sr;
	}
	if (!sr.is_samples)
		return;
	natts = Max(sr.time_att, sr.series_att);
	p = get_pending();
	for (int i = 0; i < nslots; i++)
	{
		TupleTableSlot *slot = slots[i];
		HourSeries	pair;
		bool		found;

		slot_getsomeattrs(slot, natts);
		if (slot->tts_isnull[sr.time_att - 1] || slot->tts_isnull[sr.series_att - 1])
			continue;
		memset(&pair, 0, sizeof(pair));
		pair.hour = series_index_hour(DatumGetTimestampTz(slot->tts_values[sr.time_att - 1]));
		pair.series_id = DatumGetInt64(slot->tts_values[sr.series_att - 1]);
		/* the rows of a profile come together */
		if (p->have_last && p->last.hour == pair.hour && p->last.series_id == pair.series_id)
			continue;
		p->last = pair;
		p->have_last = true;
		if (hash_search(committed_pairs, &pair, HASH_FIND, NULL) == NULL)
			note(p->pairs, &pair, offsetof(PendingPair, nest_level), &found);
	}
}

/* --- the trigger on parca.series ----------------------------------------- */

static AttrNumber
series_column(TupleDesc desc, const char *name, Oid type)
{
	AttrNumber	att = column_of(desc, name, type);

	if (att == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("parca.series has no column \"%s\" of the type it was made with", name)));
	return att;
}

/* A series added: its values may be new, and hours may have been recorded before it. */
static void
note_series(Pending *p, HeapTuple tuple, TupleDesc desc)
{
	bool		isnull;
	int64		id = DatumGetInt64(heap_getattr(tuple, series_column(desc, "id", INT8OID),
												desc, &isnull));
	NoteValues	nv = {p, TextDatumGetCString(heap_getattr(tuple,
														  series_column(desc, "profile_type", TEXTOID),
														  desc, &isnull))};
	Jsonb	   *labels = DatumGetJsonbP(heap_getattr(tuple, series_column(desc, "labels", JSONBOID),
													 desc, &isnull));
	bool		found;

	series_index_labels_each(labels, note_value, &nv);
	note(p->series, &id, offsetof(PendingSeries, nest_level), &found);
}

/* The values of the series in transition table "came", where missing. */
static const char add_changed_values_sql[] =
"INSERT INTO parca.label_values (profile_type, name, value) "
"SELECT DISTINCT c.profile_type, e.key, e.value FROM came c "
"CROSS JOIN LATERAL pg_catalog.jsonb_each_text("
"  CASE WHEN pg_catalog.jsonb_typeof(c.labels) OPERATOR(pg_catalog.=) 'object' THEN c.labels END) e "
"WHERE e.value IS NOT NULL AND (SELECT true FROM parca.label_values d "
"  WHERE d.profile_type OPERATOR(pg_catalog.=) c.profile_type AND d.name OPERATOR(pg_catalog.=) e.key "
"    AND d.value OPERATOR(pg_catalog.=) e.value LIMIT 1) IS NULL";

/*
 * The series in transition table "gone": $1 their ids, $2, $3, $4 the
 * profile types, names and values of their labels, each once.  The
 * statements below read these arrays, not the transition table: on Citus
 * parca.series is a reference table, a statement reading it is planned by
 * Citus, which cannot deparse a transition table.
 */
static const char gone_read_sql[] =
"SELECT ARRAY(SELECT g.id FROM gone g), "
"  pg_catalog.array_agg(v.profile_type), pg_catalog.array_agg(v.key), pg_catalog.array_agg(v.value) "
"FROM (SELECT DISTINCT g.profile_type, e.key, e.value FROM gone g "
"      CROSS JOIN LATERAL pg_catalog.jsonb_each_text("
"        CASE WHEN pg_catalog.jsonb_typeof(g.labels) OPERATOR(pg_catalog.=) 'object' THEN g.labels END) e "
"      WHERE e.value IS NOT NULL) v";

/* The values of the series gone that no series has any more (each looked up in the GIN index by its key). */
static const char remove_values_sql[] =
"DELETE FROM parca.label_values d "
"USING ROWS FROM (pg_catalog.unnest($2::pg_catalog.text[]), pg_catalog.unnest($3::pg_catalog.text[]), "
"  pg_catalog.unnest($4::pg_catalog.text[])) AS v(profile_type, key, value) "
"WHERE d.profile_type OPERATOR(pg_catalog.=) v.profile_type AND d.name OPERATOR(pg_catalog.=) v.key "
"  AND d.value OPERATOR(pg_catalog.=) v.value "
"  AND (SELECT true FROM parca.series s "
"    WHERE parca.series_label_keys(s.profile_type, s.labels) OPERATOR(pg_catalog.@>) "
"          parca.series_label_keys(v.profile_type, pg_catalog.jsonb_build_object(v.key, v.value)) "
"      AND s.profile_type OPERATOR(pg_catalog.=) v.profile_type "
"      AND s.labels OPERATOR(pg_catalog.->>) v.key OPERATOR(pg_catalog.=) v.value LIMIT 1) IS NULL";

static const char remove_hours_sql[] =
"DELETE FROM parca.series_hours a USING pg_catalog.unnest($1::pg_catalog.int8[]) g(id) "
"WHERE a.series_id OPERATOR(pg_catalog.=) g.id";

/* Drops what this transaction noted of series: they are gone. */
static void
forget_pending_series(void)
{
	if (pending == NULL)
		return;
	hash_destroy(pending->values);
	hash_destroy(pending->series);
	create_pending_series_tables(pending);
}

Datum
parca_series_index_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("parca.series_index_trigger() is called by the triggers on parca.series only")));
	if (!TRIGGER_FIRED_AFTER(td->tg_event))
		elog(ERROR, "parca.series_index_trigger() must run after the change");
	look_up_tables();
	if (!tables.present)
		return PointerGetDatum(NULL);

	/*
	 * On Citus parca.series is a reference table, whose triggers fire on
	 * each node's copy: the coordinator's keeps its index, the one its
	 * selectors read; a worker's would start a distributed query from
	 * within the coordinator's (docs/scale-out.md).
	 */
	if (RelationGetRelid(td->tg_relation) != tables.series && citus_worker_node())
		return PointerGetDatum(NULL);
	if (TRIGGER_FIRED_BY_INSERT(td->tg_event) && TRIGGER_FIRED_FOR_ROW(td->tg_event))
		note_series(get_pending(), td->tg_trigtuple, RelationGetDescr(td->tg_relation));
	else if (TRIGGER_FIRED_BY_TRUNCATE(td->tg_event))
	{
		static const char *const truncate[] = {
			"TRUNCATE parca.label_values, parca.series_hours, parca.label_hours"
		};

		series_index_run_as_owner(truncate, 1, NULL, NULL);
		/* the rows of parca.samples noted stay */
		forget_pending_series();
		forget_committed();
	}
	else if (TRIGGER_FIRED_BY_DELETE(td->tg_event) && td->tg_oldtable)
	{
		static const char *const delete[] = {remove_hours_sql, remove_values_sql};

		series_index_run_as_owner(delete, 2, td, gone_read_sql);
		forget_committed();
		/* other backends forget the values they remember */
		CacheInvalidateRelcacheByRelid(tables.label_values);
	}
	else if (TRIGGER_FIRED_BY_UPDATE(td->tg_event) && td->tg_oldtable && td->tg_newtable)
	{
		static const char *const add[] = {add_changed_values_sql};
		static const char *const remove[] = {remove_values_sql};

		series_index_run_as_owner(add, 1, td, NULL);
		series_index_run_as_owner(remove, 1, td, gone_read_sql);
		forget_committed();
		CacheInvalidateRelcacheByRelid(tables.label_values);
	}
	else
		elog(ERROR, "parca.series_index_trigger() fired for an event it does not handle");
	return PointerGetDatum(NULL);
}

/* After the commit: what was written is now known to be stored. */
static void
remember_committed(Pending *p)
{
	HASH_SEQ_STATUS seq;
	PendingPair *pp;
	PendingValue *pv;

	if (hash_get_num_entries(committed_pairs) + hash_get_num_entries(p->pairs) > COMMITTED_MAX_ENTRIES ||
		hash_get_num_entries(committed_values) + hash_get_num_entries(p->values) > COMMITTED_MAX_ENTRIES)
		forget_committed();
	hash_seq_init(&seq, p->pairs);
	while ((pp = hash_seq_search(&seq)) != NULL)
		(void) hash_search(committed_pairs, &pp->pair, HASH_ENTER, NULL);
	hash_seq_init(&seq, p->values);
	while ((pv = hash_seq_search(&seq)) != NULL)
		(void) hash_search(committed_values, &pv->key, HASH_ENTER, NULL);
}

static bool
anything_pending(Pending *p)
{
	return p != NULL &&
		(hash_get_num_entries(p->pairs) > 0 || hash_get_num_entries(p->values) > 0 ||
		 hash_get_num_entries(p->series) > 0);
}

static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			if (anything_pending(pending))
			{
				look_up_tables();
				if (tables.present)
					series_index_write_pending(pending);
			}
			break;
		case XACT_EVENT_COMMIT:
			ensure_caches();
			if (anything_pending(pending) && tables.present)
				remember_committed(pending);
			pending = NULL;
			break;
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* the memory went, or goes, with TopTransactionContext */
			pending = NULL;
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
	bool		abort = event == SUBXACT_EVENT_ABORT_SUB;

	if (pending == NULL || (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB))
		return;
	end_level(pending->pairs, offsetof(PendingPair, nest_level), level, abort);
	end_level(pending->values, offsetof(PendingValue, nest_level), level, abort);
	end_level(pending->series, offsetof(PendingSeries, nest_level), level, abort);
	pending->have_last = false;
}

void
series_index_init(void)
{
	cache_cxt = AllocSetContextCreate(TopMemoryContext, "parca series index",
									  ALLOCSET_DEFAULT_SIZES);
	samples_rels = keyed_table_create("parca samples partitions", 256, sizeof(Oid), sizeof(SamplesRel),
									  cache_cxt);
	forget_committed();
	CacheRegisterRelcacheCallback(relcache_callback, (Datum) 0);
	RegisterXactCallback(xact_callback, NULL);
	RegisterSubXactCallback(subxact_callback, NULL);
	columnar_insert_hook = note_sample_rows;
}

/* --- reading ---------------------------------------------------------- */

static bool
may_read(Oid relid)
{
	return pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK &&
		check_enable_rls(relid, InvalidOid, true) != RLS_ENABLED;
}

bool
series_index_readable(bool with_samples)
{
	/* a parallel worker may not change its user */
	if (IsInParallelMode())
		return false;
	look_up_tables();

	/*
	 * On Citus the rows are written into the workers' shards, which the
	 * columnar callback does not take for partitions of parca.samples:
	 * the index has no hours, readers find them in the rows
	 * (docs/scale-out.md).
	 */
	return tables.present && may_read(tables.series) &&
		(!with_samples || (may_read(tables.samples) && !citus_table(tables.samples)));
}

/* --- building again ------------------------------------------------------ */

Datum
parca_series_index_rebuild(PG_FUNCTION_ARGS)
{
	const char *statements[4] = {
		"TRUNCATE parca.label_values, parca.series_hours, parca.label_hours",
		"INSERT INTO parca.label_values (profile_type, name, value) "
		"SELECT DISTINCT s.profile_type, e.key, e.value FROM parca.series s "
		"CROSS JOIN LATERAL pg_catalog.jsonb_each_text("
		"  CASE WHEN pg_catalog.jsonb_typeof(s.labels) OPERATOR(pg_catalog.=) 'object' THEN s.labels END) e "
		"WHERE e.value IS NOT NULL",
		"INSERT INTO parca.series_hours (series_id, hour) "
		"SELECT DISTINCT x.series_id, parca.series_hour(x.time) FROM parca.samples x",
		series_index_label_hours_sql("", "SELECT series_id, hour FROM parca.series_hours")
	};

	look_up_tables();
	if (!tables.present)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the series index tables are missing"),
				 errhint("Run ALTER EXTENSION parca UPDATE.")));
	if (!pg_class_ownercheck(tables.label_values, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, "label_values");
	/* everything this transaction noted so far is in what is read */
	if (pending)
		MemoryContextDelete(pending->cxt);
	pending = NULL;
	series_index_run_as_owner(statements, lengthof(statements), NULL, NULL);
	PG_RETURN_VOID();
}
