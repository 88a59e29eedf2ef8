/*
 * columnar_catalog.c
 *		The extension's tables about columnar tables: the stripe catalog
 *		(parca.columnar_stripes), the segments of stack dictionaries
 *		(parca.columnar_dictionary), the per-table options
 *		(parca.columnar_options), and the compaction lock.
 *
 * A stripe row names its storage by the storage id of the table's
 * metapage (columnar_storage.c), holds the stripe's directory
 * (columnar_chunk.c) and, for an inline stripe, its data.  A segment row
 * is laid out alike, with entry numbers for row numbers.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "catalog/partition.h"
#include "commands/sequence.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "columnar/columnar_internal.h"

/* parca.columnar_stripes columns, and parca.columnar_dictionary's */
#define Anum_stripe_storage_id	1
#define Anum_stripe_first_row	2
#define Anum_stripe_row_count	3
#define Anum_stripe_first_block 4
#define Anum_stripe_data_size	5
#define Anum_stripe_directory	6
#define Anum_stripe_inline_data 7
#define Natts_stripe			7

/* parca.columnar_options columns */
#define Anum_options_relid		1
#define Anum_options_stripe_rows 2
#define Anum_options_chunk_group_rows 3
#define Anum_options_compression_level 4
#define Anum_options_sort_by	5
#define Anum_options_log_by		6

/* parca.columnar_write_log columns */
#define Anum_log_relid			1
#define Anum_log_lo				2
#define Anum_log_hi				3
#define Natts_log				3

Oid
columnar_namespace(void)
{
	return get_namespace_oid("parca", true);
}

static Oid
columnar_relid(const char *name, bool missing_ok)
{
	Oid			nsp = columnar_namespace();
	Oid			relid = OidIsValid(nsp) ? get_relname_relid(name, nsp) : InvalidOid;

	if (!OidIsValid(relid) && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation parca.%s does not exist", name),
				 errhint("The parca extension must be installed to use parca_columnar tables.")));
	return relid;
}

Relation
columnar_open_stripes(LOCKMODE mode)
{
	return table_open(columnar_relid("columnar_stripes", false), mode);
}

int64
columnar_new_storage_id(void)
{
	return nextval_internal(columnar_relid("columnar_storage_seq", false), false);
}

/*
 * The sort columns named by a sort_by array, as columns of the table
 * relid: names that are no column of it, or not of a pass-by-value type,
 * are left out (set_options checks them, but columns change).
 */
static void
resolve_sort_by(Oid relid, ArrayType *names, ColumnarOptions *o)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(names, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	o->nsort = 0;
	for (int i = 0; i < n && o->nsort < COLUMNAR_MAX_SORT_COLUMNS; i++)
	{
		char	   *name;
		AttrNumber	attno;

		if (nulls[i])
			continue;
		name = TextDatumGetCString(elems[i]);
		attno = get_attnum(relid, name);
		if (attno > 0 && get_typbyval(get_atttype(relid, attno)))
			o->sort_by[o->nsort++] = attno;
		pfree(name);
	}
}

/*
 * The log_by column named name, as a column of the table relid: a name
 * that is no timestamptz column of it is left out (set_options checks it,
 * but columns change).
 */
static AttrNumber
resolve_log_by(Oid relid, const char *name)
{
	AttrNumber	attno = get_attnum(relid, name);

	if (attno > 0 && get_atttype(relid, attno) == TIMESTAMPTZOID)
		return attno;
	return InvalidAttrNumber;
}

/*
 * The options row of relid: each option it sets put in *o; its sort_by
 * array (copied) in *sort_by and its log_by column name in *log_by, each
 * NULL if it has none.
 */
static void
read_options(Relation optrel, Oid relid, ColumnarOptions *o, ArrayType **sort_by, char **log_by)
{
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	*sort_by = NULL;
	*log_by = NULL;
	ScanKeyInit(&key, Anum_options_relid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(optrel, columnar_relid("columnar_options_pkey", false),
							  true, GetLatestSnapshot(), 1, &key);
	if ((tup = systable_getnext(scan)) != NULL)
	{
		TupleDesc	desc = RelationGetDescr(optrel);
		bool		isnull;
		Datum		d;

		d = heap_getattr(tup, Anum_options_stripe_rows, desc, &isnull);
		if (!isnull)
			o->stripe_rows = DatumGetInt32(d);
		d = heap_getattr(tup, Anum_options_chunk_group_rows, desc, &isnull);
		if (!isnull)
			o->chunk_group_rows = DatumGetInt32(d);
		d = heap_getattr(tup, Anum_options_compression_level, desc, &isnull);
		if (!isnull)
			o->compression_level = DatumGetInt32(d);
		/* (a catalog of 0.1 has neither yet, until ALTER EXTENSION UPDATE) */
		if (desc->natts >= Anum_options_sort_by)
		{
			d = heap_getattr(tup, Anum_options_sort_by, desc, &isnull);
			if (!isnull)
				*sort_by = DatumGetArrayTypePCopy(d);
		}
		if (desc->natts >= Anum_options_log_by)
		{
			d = heap_getattr(tup, Anum_options_log_by, desc, &isnull);
			if (!isnull)
				*log_by = TextDatumGetCString(d);
		}
	}
	systable_endscan(scan);
}

ColumnarOptions
columnar_get_options(Oid relid)
{
	ColumnarOptions o;
	Oid			optrel = columnar_relid("columnar_options", true);

	o.stripe_rows = columnar_stripe_rows;
	o.chunk_group_rows = columnar_chunk_group_rows;
	o.compression_level = columnar_compression_level;
	o.nsort = 0;
	o.log_by = InvalidAttrNumber;
	if (OidIsValid(optrel))
	{
		Relation	rel = table_open(optrel, AccessShareLock);
		ArrayType  *sort_by;
		char	   *log_by;

		read_options(rel, relid, &o, &sort_by, &log_by);

		/*
		 * A partition without a sort order (log_by) of its own has its
		 * partitioned table's (its column names), so that one setting on
		 * parca.samples reaches the partitions the worker makes.
		 */
		if ((sort_by == NULL || log_by == NULL) && get_rel_relispartition(relid))
		{
			ColumnarOptions parent = o;
			ArrayType  *parent_sort_by;
			char	   *parent_log_by;

			read_options(rel, get_partition_parent(relid, true), &parent, &parent_sort_by,
						 &parent_log_by);
			if (sort_by == NULL)
				sort_by = parent_sort_by;
			if (log_by == NULL)
				log_by = parent_log_by;
		}
		if (sort_by != NULL)
			resolve_sort_by(relid, sort_by, &o);
		/* ('': none, and not the parent's) */
		if (log_by != NULL && log_by[0] != '\0')
			o.log_by = resolve_log_by(relid, log_by);
		table_close(rel, AccessShareLock);
	}
	if (o.chunk_group_rows > o.stripe_rows)
		o.chunk_group_rows = o.stripe_rows;
	return o;
}

/*
 * Record a stripe or segment in parca.<table> and its index <pkey> (and
 * <inline_index> when given and its data is inline).  cid is the command
 * that wrote it, so that later commands of the writing transaction see it.
 */
static void
insert_row(const char *table, const char *pkey, const char *inline_index, int64 storage_id,
		   const ColumnarStripe *s, bytea *directory, bytea *inline_data, CommandId cid)
{
	Relation	rel = table_open(columnar_relid(table, false), RowExclusiveLock);
	Relation	idx = index_open(columnar_relid(pkey, false), RowExclusiveLock);
	Datum		values[Natts_stripe];
	bool		nulls[Natts_stripe] = {0};
	HeapTuple	tup;

	values[Anum_stripe_storage_id - 1] = Int64GetDatum(storage_id);
	values[Anum_stripe_first_row - 1] = Int64GetDatum(s->first_row);
	values[Anum_stripe_row_count - 1] = Int64GetDatum(s->row_count);
	values[Anum_stripe_first_block - 1] = Int64GetDatum(s->first_block);
	values[Anum_stripe_data_size - 1] = Int64GetDatum(s->data_size);
	values[Anum_stripe_directory - 1] = PointerGetDatum(directory);
	if (inline_data)
		values[Anum_stripe_inline_data - 1] = PointerGetDatum(inline_data);
	else
		nulls[Anum_stripe_inline_data - 1] = true;

	tup = heap_form_tuple(RelationGetDescr(rel), values, nulls);
	heap_insert(rel, tup, cid, 0, NULL);
	/* the indexes lead with (storage_id, first_row), the first two columns */
	index_insert(idx, values, nulls, &tup->t_self, rel, UNIQUE_CHECK_YES,
				 false, BuildIndexInfo(idx));
	index_close(idx, RowExclusiveLock);
	if (inline_index && s->first_block < 0)
	{
		idx = index_open(columnar_relid(inline_index, false), RowExclusiveLock);
		index_insert(idx, values, nulls, &tup->t_self, rel, UNIQUE_CHECK_NO,
					 false, BuildIndexInfo(idx));
		index_close(idx, RowExclusiveLock);
	}
	heap_freetuple(tup);
	table_close(rel, RowExclusiveLock);
}

void
columnar_insert_stripe(int64 storage_id, const ColumnarStripe *s,
					   bytea *directory, bytea *inline_data, CommandId cid)
{
	insert_row("columnar_stripes", "columnar_stripes_pkey", "columnar_stripes_inline",
			   storage_id, s, directory, inline_data, cid);
}

/* Record a segment of a stack dictionary (s->first_row: its first entry). */
void
columnar_insert_segment(int64 storage_id, const ColumnarStripe *s,
						bytea *directory, bytea *inline_data, CommandId cid)
{
	insert_row("columnar_dictionary", "columnar_dictionary_pkey", NULL,
			   storage_id, s, directory, inline_data, cid);
}

/*
 * The rows of parca.<table> of a storage visible to snapshot, through
 * <index>, by first row (entry) number, from the first at least from.
 */
static List *
load_rows(const char *table, const char *index, int64 storage_id, int64 from,
		  Snapshot snapshot)
{
	Relation	rel = table_open(columnar_relid(table, false), AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *result = NIL;

	ScanKeyInit(&keys[0], Anum_stripe_storage_id, BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(storage_id));
	ScanKeyInit(&keys[1], Anum_stripe_first_row, BTGreaterEqualStrategyNumber, F_INT8GE,
				Int64GetDatum(from));
	scan = systable_beginscan(rel, columnar_relid(index, false), true, snapshot, 2, keys);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		Datum		values[Natts_stripe];
		bool		nulls[Natts_stripe];
		bytea	   *dir;
		bytea	   *data = NULL;
		ColumnarStripe *s;

		heap_deform_tuple(tup, desc, values, nulls);
		dir = DatumGetByteaPP(values[Anum_stripe_directory - 1]);
		if (!nulls[Anum_stripe_inline_data - 1])
			data = DatumGetByteaPP(values[Anum_stripe_inline_data - 1]);
		s = columnar_directory_parse(DatumGetInt64(values[Anum_stripe_first_row - 1]),
								  DatumGetInt64(values[Anum_stripe_row_count - 1]),
								  DatumGetInt64(values[Anum_stripe_first_block - 1]),
								  DatumGetInt64(values[Anum_stripe_data_size - 1]),
								  dir, data);
		s->meta_tid = tup->t_self;
		result = lappend(result, s);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/*
 * The stripes of a storage visible to snapshot, by first row number; with
 * inline_only, only its inline stripes (through a partial index, so that
 * the cost does not grow with the table).
 */
List *
columnar_load_stripes(int64 storage_id, Snapshot snapshot, bool inline_only)
{
	return load_rows("columnar_stripes", inline_only ? "columnar_stripes_inline" :
					 "columnar_stripes_pkey", storage_id, 0, snapshot);
}

/* Whether parca.columnar_dictionary exists (from 0.2 on). */
bool
columnar_dictionary_installed(void)
{
	return OidIsValid(columnar_relid("columnar_dictionary", true));
}

/*
 * The segments of a storage's stack dictionary visible to snapshot, by
 * first entry number, from the first that starts at from_entry or later.
 */
List *
columnar_load_segments(int64 storage_id, int64 from_entry, Snapshot snapshot)
{
	/*
	 * Directories are TOASTed when long, which needs an active snapshot;
	 * segments are read lazily, in a scan or at a commit, with none.
	 */
	bool		push = !ActiveSnapshotSet();
	List	   *segments;

	if (push)
		PushActiveSnapshot(snapshot);
	segments = load_rows("columnar_dictionary", "columnar_dictionary_pkey", storage_id,
						 from_entry, snapshot);
	if (push)
		PopActiveSnapshot();
	return segments;
}

void
columnar_delete_stripe(ItemPointer meta_tid)
{
	Relation	rel = columnar_open_stripes(RowExclusiveLock);

	simple_heap_delete(rel, meta_tid);
	table_close(rel, RowExclusiveLock);
}

/* Delete a segment's row (merged into another). */
void
columnar_delete_segment(ItemPointer meta_tid)
{
	Relation	rel = table_open(columnar_relid("columnar_dictionary", false), RowExclusiveLock);

	simple_heap_delete(rel, meta_tid);
	table_close(rel, RowExclusiveLock);
}

/*
 * Delete the rows of parca.<table> whose column attno equals value (by
 * eqproc), through index <index>, as this transaction sees them.
 * Transactional; quietly does nothing while the extension itself is being
 * dropped.
 */
static void
delete_matching(const char *table, const char *index, AttrNumber attno,
				RegProcedure eqproc, Datum value)
{
	Oid			relid = columnar_relid(table, true);
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	if (!OidIsValid(relid))
		return;
	rel = table_open(relid, RowExclusiveLock);
	ScanKeyInit(&key, attno, BTEqualStrategyNumber, eqproc, value);
	scan = systable_beginscan(rel, columnar_relid(index, false), true, SnapshotSelf, 1, &key);
	while ((tup = systable_getnext(scan)) != NULL)
		simple_heap_delete(rel, &tup->t_self);
	systable_endscan(scan);
	table_close(rel, RowExclusiveLock);
}

/*
 * The compaction lock of table relid: ExclusiveLock on the object
 * (parca.columnar_stripes, relid), held to the end of the transaction.
 * Every transaction that deletes stripe rows of the table holds it:
 * compaction (at commit, in VACUUM, parca_columnar_compact) and the
 * deletion of a whole storage (TRUNCATE, DROP).  It is released only once
 * the holder's commit is visible, so a compactor that reads the stripes
 * with a snapshot taken after it got the lock sees what every compactor
 * before it did.  Writers that add stripes and readers do not take it.
 * Without wait, returns false at once when another transaction holds it.
 */
bool
columnar_lock_compaction(Oid relid, bool wait)
{
	Oid			stripes = columnar_relid("columnar_stripes", false);

	if (!wait)
		return ConditionalLockDatabaseObject(stripes, relid, 0, ExclusiveLock);
	LockDatabaseObject(stripes, relid, 0, ExclusiveLock);
	return true;
}

/*
 * The page-write lock of table relid: the object (parca.columnar_stripes,
 * relid, 1).  A writer holds it in RowExclusiveLock (writers do not wait
 * for each other) from taking data pages to recording the stripe row that
 * refers to them; VACUUM holds it in ExclusiveLock while it lists the
 * pages no stripe row refers to, so that it never takes a write's pages
 * for free ones.  Both release it at once.
 */
void
columnar_lock_page_writes(Oid relid, LOCKMODE mode)
{
	LockDatabaseObject(columnar_relid("columnar_stripes", false), relid, 1, mode);
}

void
columnar_unlock_page_writes(Oid relid, LOCKMODE mode)
{
	UnlockDatabaseObject(columnar_relid("columnar_stripes", false), relid, 1, mode);
}

/*
 * The data pages of every stripe row of a storage still in the catalog,
 * whoever can see it (SnapshotAny: rows deleted but not yet removed, rows
 * of transactions in progress or rolled back), in *runs (palloc'd);
 * returns how many.  A sequential scan, since the index may have marked
 * entries of rows removable that are still in the heap: their pages stay
 * taken until VACUUM removes them, whose WAL record is what cancels
 * standby queries that could still read those stripes.
 */
int
columnar_stripe_block_runs(int64 storage_id, ColumnarBlockRun **runs)
{
	static const char *const tables[] = {"columnar_stripes", "columnar_dictionary"};
	int			n = 0;
	int			cap = 64;

	*runs = palloc(sizeof(ColumnarBlockRun) * cap);
	for (int t = 0; t < lengthof(tables); t++)
	{
		/* parca.columnar_dictionary is missing until the update to 0.2 */
		Oid			relid = columnar_relid(tables[t], t > 0);
		Relation	rel;
		TupleDesc	desc;
		ScanKeyData key;
		TableScanDesc scan;
		HeapTuple	tup;

		if (!OidIsValid(relid))
			continue;
		rel = table_open(relid, AccessShareLock);
		desc = RelationGetDescr(rel);
		ScanKeyInit(&key, Anum_stripe_storage_id, BTEqualStrategyNumber, F_INT8EQ,
					Int64GetDatum(storage_id));
		scan = table_beginscan(rel, SnapshotAny, 1, &key);
		while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
		{
			bool		isnull;
			int64		first = DatumGetInt64(heap_getattr(tup, Anum_stripe_first_block, desc,
														   &isnull));
			int64		size = DatumGetInt64(heap_getattr(tup, Anum_stripe_data_size, desc,
														  &isnull));

			if (first < 0)
				continue;
			if (n == cap)
			{
				cap *= 2;
				*runs = repalloc(*runs, sizeof(ColumnarBlockRun) * cap);
			}
			(*runs)[n].first = first;
			(*runs)[n].count = (size + COLUMNAR_PAGE_PAYLOAD - 1) / COLUMNAR_PAGE_PAYLOAD;
			n++;
		}
		table_endscan(scan);
		table_close(rel, AccessShareLock);
	}
	return n;
}

/* Forget every stripe of relid's storage (TRUNCATE, DROP). */
void
columnar_delete_storage(Oid relid, int64 storage_id)
{
	/* nothing to do while the extension itself is being dropped */
	if (!OidIsValid(columnar_relid("columnar_stripes", true)))
		return;
	columnar_lock_compaction(relid, true);
	delete_matching("columnar_stripes", "columnar_stripes_pkey", Anum_stripe_storage_id,
					F_INT8EQ, Int64GetDatum(storage_id));
	delete_matching("columnar_dictionary", "columnar_dictionary_pkey", Anum_stripe_storage_id,
					F_INT8EQ, Int64GetDatum(storage_id));
}

/* Forget a dropped table's options. */
void
columnar_delete_options(Oid relid)
{
	delete_matching("columnar_options", "columnar_options_pkey", Anum_options_relid,
					F_OIDEQ, ObjectIdGetDatum(relid));
}

/*
 * The row counts of a storage's stripes (with inline_only, of its inline
 * stripes, through their partial index) as the latest snapshot sees them,
 * in *counts (palloc'd); returns how many there are.
 */
int
columnar_stripe_row_counts(int64 storage_id, bool inline_only, int64 **counts)
{
	Relation	rel = columnar_open_stripes(AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	int			n = 0;
	int			cap = 16;

	*counts = palloc(sizeof(int64) * cap);
	ScanKeyInit(&key, Anum_stripe_storage_id, BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(storage_id));
	scan = systable_beginscan(rel, columnar_relid(inline_only ? "columnar_stripes_inline" :
												 "columnar_stripes_pkey", false),
							  true, GetLatestSnapshot(), 1, &key);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		bool		isnull;

		if (n == cap)
		{
			cap *= 2;
			*counts = repalloc(*counts, sizeof(int64) * cap);
		}
		(*counts)[n++] = DatumGetInt64(heap_getattr(tup, Anum_stripe_row_count,
													RelationGetDescr(rel), &isnull));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return n;
}

/*
 * Log that this transaction wrote rows into table relid (the table at the
 * top of the partition tree written) whose log_by column lies in
 * [lo, hi]: one row of parca.columnar_write_log, which commits or aborts
 * with the rows.  Nothing while the extension itself is being dropped.
 */
void
columnar_log_insert(Oid relid, TimestampTz lo, TimestampTz hi)
{
	Oid			logrel = columnar_relid("columnar_write_log", true);
	Relation	rel;
	Relation	idx;
	Datum		values[Natts_log];
	bool		nulls[Natts_log] = {0};
	HeapTuple	tup;

	if (!OidIsValid(logrel))
		return;
	rel = table_open(logrel, RowExclusiveLock);
	idx = index_open(columnar_relid("columnar_write_log_relid_lo", false), RowExclusiveLock);
	values[Anum_log_relid - 1] = ObjectIdGetDatum(relid);
	values[Anum_log_lo - 1] = TimestampTzGetDatum(lo);
	values[Anum_log_hi - 1] = TimestampTzGetDatum(hi);
	tup = heap_form_tuple(RelationGetDescr(rel), values, nulls);
	heap_insert(rel, tup, GetCurrentCommandId(true), 0, NULL);
	/* the index is on (relid, lo), the first two columns */
	index_insert(idx, values, nulls, &tup->t_self, rel, UNIQUE_CHECK_NO, false,
				 BuildIndexInfo(idx));
	heap_freetuple(tup);
	index_close(idx, RowExclusiveLock);
	table_close(rel, RowExclusiveLock);
}

/*
 * Whether parca.columnar_write_log holds, as snapshot sees it, a write
 * into table relid that meets [lo, hi].
 */
bool
columnar_log_meets(Oid relid, TimestampTz lo, TimestampTz hi, Snapshot snapshot)
{
	Oid			logrel = columnar_relid("columnar_write_log", true);
	Relation	rel;
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tup;
	bool		meets = false;

	if (!OidIsValid(logrel))
		return false;
	rel = table_open(logrel, AccessShareLock);
	ScanKeyInit(&keys[0], Anum_log_relid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&keys[1], Anum_log_lo, BTLessEqualStrategyNumber, F_TIMESTAMPTZ_LE,
				TimestampTzGetDatum(hi));
	scan = systable_beginscan(rel, columnar_relid("columnar_write_log_relid_lo", false),
							  true, snapshot, 2, keys);
	while (!meets && (tup = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_log_hi, RelationGetDescr(rel), &isnull);

		meets = !isnull && DatumGetTimestampTz(d) >= lo;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return meets;
}
