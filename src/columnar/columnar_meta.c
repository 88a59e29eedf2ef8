/*
 * columnar_meta.c
 *		The metapage, the stripe catalog (parca.columnar_stripes) and the
 *		per-table options (parca.columnar_options).
 *
 * The metapage (block 0) holds the storage id, which names the relation's
 * current storage in parca.columnar_stripes (a new one on TRUNCATE), and
 * the row number counter.  It is changed with generic WAL.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/storage.h"
#include "commands/sequence.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "columnar/columnar.h"

/* parca.columnar_stripes columns */
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

/*
 * Write the metapage of new storage srel (the relcache entry still points
 * at the old storage, so this goes through smgr).
 */
void
columnar_init_metapage(Relation rel, SMgrRelation srel, bool wal, int64 storage_id)
{
	PGAlignedBlock buf;
	Page		page = (Page) buf.data;
	ColumnarMetaPage *meta;

	PageInit(page, BLCKSZ, 0);
	meta = (ColumnarMetaPage *) PageGetContents(page);
	meta->magic = COLUMNAR_META_MAGIC;
	meta->version = 1;
	meta->storage_id = storage_id;
	meta->next_row = 0;
	((PageHeader) page)->pd_lower = (char *) (meta + 1) - (char *) page;

	if (wal)
		log_newpage(&srel->smgr_rnode.node, MAIN_FORKNUM, 0, page, true);
	PageSetChecksumInplace(page, 0);
	smgrextend(srel, MAIN_FORKNUM, 0, buf.data, true);
	smgrimmedsync(srel, MAIN_FORKNUM);
}

static ColumnarMetaPage *
metapage_contents(Relation rel, Page page)
{
	ColumnarMetaPage *meta = (ColumnarMetaPage *) PageGetContents(page);

	if (meta->magic != COLUMNAR_META_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("columnar table \"%s\" has a bad metapage",
						RelationGetRelationName(rel))));
	return meta;
}

ColumnarMetaPage
columnar_read_metapage(Relation rel)
{
	Buffer		buf;
	ColumnarMetaPage meta;

	if (RelationGetNumberOfBlocks(rel) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("columnar table \"%s\" has no metapage",
						RelationGetRelationName(rel))));
	buf = ReadBuffer(rel, 0);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	meta = *metapage_contents(rel, BufferGetPage(buf));
	UnlockReleaseBuffer(buf);
	return meta;
}

/* Reserve count row numbers; returns the first. */
int64
columnar_reserve_rows(Relation rel, int64 count)
{
	Buffer		buf = ReadBuffer(rel, 0);
	GenericXLogState *state;
	ColumnarMetaPage *meta;
	int64		first;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(rel);
	meta = metapage_contents(rel, GenericXLogRegisterBuffer(state, buf, 0));
	first = meta->next_row;
	if (first + count > COLUMNAR_MAX_ROW_NUMBER)
	{
		GenericXLogAbort(state);
		UnlockReleaseBuffer(buf);
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("columnar table \"%s\" has run out of row numbers",
						RelationGetRelationName(rel)),
				 errhint("Rewrite it with VACUUM FULL.")));
	}
	meta->next_row = first + count;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
	return first;
}

int64
columnar_new_storage_id(void)
{
	return nextval_internal(columnar_relid("columnar_storage_seq", false), false);
}

ColumnarOptions
columnar_get_options(Oid relid)
{
	ColumnarOptions o;
	Oid			optrel = columnar_relid("columnar_options", true);

	o.stripe_rows = columnar_stripe_rows;
	o.chunk_group_rows = columnar_chunk_group_rows;
	o.compression_level = columnar_compression_level;
	if (OidIsValid(optrel))
	{
		Relation	rel = table_open(optrel, AccessShareLock);
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tup;

		ScanKeyInit(&key, Anum_options_relid, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(relid));
		scan = systable_beginscan(rel, columnar_relid("columnar_options_pkey", false),
								  true, GetLatestSnapshot(), 1, &key);
		if ((tup = systable_getnext(scan)) != NULL)
		{
			bool		isnull;
			Datum		d;

			d = heap_getattr(tup, Anum_options_stripe_rows, RelationGetDescr(rel), &isnull);
			if (!isnull)
				o.stripe_rows = DatumGetInt32(d);
			d = heap_getattr(tup, Anum_options_chunk_group_rows, RelationGetDescr(rel), &isnull);
			if (!isnull)
				o.chunk_group_rows = DatumGetInt32(d);
			d = heap_getattr(tup, Anum_options_compression_level, RelationGetDescr(rel), &isnull);
			if (!isnull)
				o.compression_level = DatumGetInt32(d);
		}
		systable_endscan(scan);
		table_close(rel, AccessShareLock);
	}
	if (o.chunk_group_rows > o.stripe_rows)
		o.chunk_group_rows = o.stripe_rows;
	return o;
}

/*
 * Record a stripe.  cid is the command that wrote its first row, so that
 * later commands of the writing transaction see it.
 */
void
columnar_insert_stripe(int64 storage_id, const ColumnarStripe *s,
					   bytea *directory, bytea *inline_data, CommandId cid)
{
	Relation	rel = columnar_open_stripes(RowExclusiveLock);
	Relation	idx = index_open(columnar_relid("columnar_stripes_pkey", false),
								 RowExclusiveLock);
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
	/* both indexes lead with (storage_id, first_row), the first two columns */
	index_insert(idx, values, nulls, &tup->t_self, rel, UNIQUE_CHECK_YES,
				 false, BuildIndexInfo(idx));
	index_close(idx, RowExclusiveLock);
	if (s->first_block < 0)
	{
		idx = index_open(columnar_relid("columnar_stripes_inline", false), RowExclusiveLock);
		index_insert(idx, values, nulls, &tup->t_self, rel, UNIQUE_CHECK_NO,
					 false, BuildIndexInfo(idx));
		index_close(idx, RowExclusiveLock);
	}
	heap_freetuple(tup);
	table_close(rel, RowExclusiveLock);
}

/* Parse a directory (and data) into one palloc'd ColumnarStripe. */
ColumnarStripe *
columnar_parse_stripe(int64 first_row, int64 row_count, int64 first_block,
					  int64 data_size, bytea *directory, bytea *inline_data)
{
	ColumnarDirectoryHeader hdr;
	const char *p = VARDATA_ANY(directory);
	Size		len = VARSIZE_ANY_EXHDR(directory);
	Size		need;
	ColumnarStripe *s;
	char	   *body;

	if (len < sizeof(hdr))
		goto bad;
	memcpy(&hdr, p, sizeof(hdr));
	if (hdr.magic != COLUMNAR_DIRECTORY_MAGIC || hdr.natts < 0 || hdr.ngroups < 0 ||
		hdr.nranges < 0 || hdr.nrows != row_count)
		goto bad;
	need = sizeof(hdr) + hdr.nranges * sizeof(ColumnarRowRange) +
		hdr.natts * sizeof(ColumnarColumn) +
		(Size) hdr.natts * hdr.ngroups * sizeof(ColumnarChunk);
	if (len != need)
		goto bad;
	if (inline_data && VARSIZE_ANY_EXHDR(inline_data) != data_size)
		goto bad;

	s = palloc(MAXALIGN(sizeof(ColumnarStripe)) + MAXALIGN(len) +
			   (inline_data ? data_size : 0));
	body = (char *) s + MAXALIGN(sizeof(ColumnarStripe));
	memcpy(body, p, len);
	s->first_row = first_row;
	s->row_count = row_count;
	s->first_block = first_block;
	s->data_size = data_size;
	s->natts = hdr.natts;
	s->ngroups = hdr.ngroups;
	s->group_rows = hdr.group_rows;
	s->nranges = hdr.nranges;
	s->ranges = (ColumnarRowRange *) (body + sizeof(hdr));
	s->columns = (ColumnarColumn *) (s->ranges + hdr.nranges);
	s->chunks = (ColumnarChunk *) (s->columns + hdr.natts);
	s->inline_data = NULL;
	ItemPointerSetInvalid(&s->meta_tid);
	if (inline_data)
	{
		s->inline_data = body + MAXALIGN(len);
		memcpy(s->inline_data, VARDATA_ANY(inline_data), data_size);
	}
	return s;

bad:
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("columnar stripe at row " INT64_FORMAT " has a bad directory", first_row)));
	return NULL;
}

/*
 * The stripes of a storage visible to snapshot, by first row number; with
 * inline_only, only its inline stripes (through a partial index, so that
 * the cost does not grow with the table).
 */
List *
columnar_load_stripes(int64 storage_id, Snapshot snapshot, bool inline_only)
{
	Relation	rel = columnar_open_stripes(AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *result = NIL;

	ScanKeyInit(&key, Anum_stripe_storage_id, BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(storage_id));
	scan = systable_beginscan(rel, columnar_relid(inline_only ? "columnar_stripes_inline" :
												 "columnar_stripes_pkey", false),
							  true, snapshot, 1, &key);
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
		s = columnar_parse_stripe(DatumGetInt64(values[Anum_stripe_first_row - 1]),
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

void
columnar_delete_stripe(ItemPointer meta_tid)
{
	Relation	rel = columnar_open_stripes(RowExclusiveLock);

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
}

/* Forget a dropped table's options. */
void
columnar_delete_options(Oid relid)
{
	delete_matching("columnar_options", "columnar_options_pkey", Anum_options_relid,
					F_OIDEQ, ObjectIdGetDatum(relid));
}

/*
 * The row counts of a storage's inline stripes (latest snapshot), in
 * *counts (palloc'd); returns how many there are.
 */
int
columnar_inline_row_counts(int64 storage_id, int64 **counts)
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
	scan = systable_beginscan(rel, columnar_relid("columnar_stripes_inline", false),
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
