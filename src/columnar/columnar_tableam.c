/*
 * columnar_tableam.c
 *		The table access method callbacks of parca_columnar.
 *
 * Supported: scans, INSERT, COPY, index fetches (btree), TRUNCATE, DROP,
 * VACUUM (compaction and statistics), VACUUM FULL/CLUSTER (rewrite),
 * ANALYZE, ALTER TABLE rewrites and SET TABLESPACE.  Not supported, with
 * an error: UPDATE, DELETE, row locks (SELECT FOR UPDATE), ON CONFLICT,
 * TABLESAMPLE, CREATE INDEX CONCURRENTLY, unlogged tables.  Parallel
 * scans are accepted but read by the leader alone (see docs/columnar.md).
 */
#include "postgres.h"

#include "access/multixact.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_inherits.h"
#include "catalog/storage.h"
#include "catalog/storage_xlog.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/autovacuum.h"
#include "storage/bufmgr.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "storage/proc.h"
#include "storage/smgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "columnar/columnar_internal.h"

PG_FUNCTION_INFO_V1(parca_columnar_handler);

static const TableAmRoutine columnar_methods;

/* Rows an ANALYZE sample takes over the whole table, spread over blocks. */
#define ANALYZE_SAMPLE_ROWS 30000

typedef struct ColumnarScanDescData
{
	TableScanDescData base;
	ColumnarReadState *rs;
	MemoryContext cxt;
	bool		own_snapshot;
	/* ANALYZE: ordinals of the current block, every step-th */
	int64		ana_next;
	int64		ana_end;
	int64		ana_step;
} ColumnarScanDescData;

typedef ColumnarScanDescData *ColumnarScanDesc;

typedef struct ColumnarParallelScan
{
	ParallelTableScanDescData base;
	int			leader_pid;
} ColumnarParallelScan;

bool
columnar_is_columnar(Relation rel)
{
	return rel->rd_tableam == &columnar_methods;
}

static Bitmapset *
all_attrs(Relation rel)
{
	Bitmapset  *attrs = NULL;

	for (int i = 1; i <= RelationGetDescr(rel)->natts; i++)
		attrs = bms_add_member(attrs, i);
	return attrs;
}

static const TupleTableSlotOps *
columnar_slot_callbacks(Relation rel)
{
	return &TTSOpsVirtual;
}

/*
 * What is committed now, for ANALYZE, index builds and catalog-style
 * callers.  A parallel index build's leader reads every row, its workers
 * none (columnar_parallelscan_initialize), and runs in parallel mode,
 * where GetLatestSnapshot() refuses because workers must share one
 * snapshot; this one is the leader's alone, so it is taken directly.
 */
static Snapshot
latest_snapshot(void)
{
	static SnapshotData latest = {SNAPSHOT_MVCC};

	if (!IsInParallelMode())
		return RegisterSnapshot(GetLatestSnapshot());
	return RegisterSnapshot(GetSnapshotData(&latest));
}

static TableScanDesc
columnar_scan_begin(Relation rel, Snapshot snapshot, int nkeys, struct ScanKeyData *key,
					ParallelTableScanDesc pscan, uint32 flags)
{
	ColumnarScanDesc scan = palloc0(sizeof(ColumnarScanDescData));
	bool		reads = true;

	if (flags & SO_TYPE_SAMPLESCAN)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("TABLESAMPLE is not supported on parca_columnar tables")));
	scan->base.rs_rd = rel;
	scan->base.rs_nkeys = nkeys;
	scan->base.rs_key = key;
	scan->base.rs_flags = flags;
	scan->base.rs_parallel = pscan;
	scan->cxt = CurrentMemoryContext;
	if (pscan)
		reads = ((ColumnarParallelScan *) pscan)->leader_pid == MyProcPid;
	if (reads && (snapshot == NULL || !IsMVCCSnapshot(snapshot)))
	{
		snapshot = latest_snapshot();
		scan->own_snapshot = true;
	}
	scan->base.rs_snapshot = snapshot;
	if (reads)
		scan->rs = columnar_read_begin(rel, snapshot, all_attrs(rel), NIL);
	return &scan->base;
}

static void
columnar_scan_end(TableScanDesc sscan)
{
	ColumnarScanDesc scan = (ColumnarScanDesc) sscan;

	if (scan->rs)
		columnar_read_end(scan->rs);
	if (scan->own_snapshot)
		UnregisterSnapshot(sscan->rs_snapshot);
	pfree(scan);
}

static void
columnar_scan_rescan(TableScanDesc sscan, struct ScanKeyData *key, bool set_params,
					 bool allow_strat, bool allow_sync, bool allow_pagemode)
{
	ColumnarScanDesc scan = (ColumnarScanDesc) sscan;

	if (scan->rs)
		columnar_read_rescan(scan->rs);
}

static bool
columnar_scan_getnextslot(TableScanDesc sscan, ScanDirection direction, TupleTableSlot *slot)
{
	ColumnarScanDesc scan = (ColumnarScanDesc) sscan;
	int64		row;

	ExecClearTuple(slot);
	if (scan->rs)
		columnar_read_set_desc(scan->rs, slot->tts_tupleDescriptor);
	if (scan->rs == NULL ||
		!columnar_read_next(scan->rs, slot->tts_values, slot->tts_isnull, &row))
		return false;
	ExecStoreVirtualTuple(slot);
	columnar_row_to_tid(row, &slot->tts_tid);
	slot->tts_tableOid = RelationGetRelid(sscan->rs_rd);
	pgstat_count_heap_getnext(sscan->rs_rd);
	return true;
}

/*
 * Parallel scans: the leader reads every row, workers none.  The planner
 * hook keeps parallel plans off columnar tables; this makes parallel
 * index builds correct (and the leader sees its own buffered rows).
 */
static Size
columnar_parallelscan_estimate(Relation rel)
{
	return sizeof(ColumnarParallelScan);
}

static Size
columnar_parallelscan_initialize(Relation rel, ParallelTableScanDesc pscan)
{
	ColumnarParallelScan *p = (ColumnarParallelScan *) pscan;

	p->base.phs_relid = RelationGetRelid(rel);
	p->base.phs_syncscan = false;
	p->leader_pid = MyProcPid;
	return sizeof(ColumnarParallelScan);
}

static void
columnar_parallelscan_reinitialize(Relation rel, ParallelTableScanDesc pscan)
{
}

/* ---- index fetches ---- */

typedef struct ColumnarIndexFetch
{
	IndexFetchTableData base;
	MemoryContext cxt;
	ColumnarReadState *rs;
	Snapshot	snapshot;
	CommandId	curcid;
	uint64		generation;
} ColumnarIndexFetch;

static struct IndexFetchTableData *
columnar_index_fetch_begin(Relation rel)
{
	ColumnarIndexFetch *f = palloc0(sizeof(ColumnarIndexFetch));

	f->base.rel = rel;
	f->cxt = CurrentMemoryContext;
	return &f->base;
}

static void
columnar_index_fetch_reset(struct IndexFetchTableData *data)
{
}

static void
columnar_index_fetch_end(struct IndexFetchTableData *data)
{
	ColumnarIndexFetch *f = (ColumnarIndexFetch *) data;

	if (f->rs)
		columnar_read_end(f->rs);
	pfree(f);
}

static void
fetch_open(ColumnarIndexFetch *f, Snapshot snapshot)
{
	MemoryContext old = MemoryContextSwitchTo(f->cxt);

	if (f->rs)
		columnar_read_end(f->rs);
	f->rs = columnar_read_begin(f->base.rel, snapshot, all_attrs(f->base.rel), NIL);
	f->snapshot = snapshot;
	f->curcid = snapshot->curcid;
	f->generation = columnar_pending_generation;
	MemoryContextSwitchTo(old);
}

static bool
columnar_index_fetch_tuple(struct IndexFetchTableData *data, ItemPointer tid,
						   Snapshot snapshot, TupleTableSlot *slot,
						   bool *call_again, bool *all_dead)
{
	ColumnarIndexFetch *f = (ColumnarIndexFetch *) data;
	int64		row = columnar_tid_to_row(tid);
	bool		found;

	*call_again = false;
	if (all_dead)
		*all_dead = false;
	if (f->rs == NULL || f->snapshot != snapshot || f->curcid != snapshot->curcid)
		fetch_open(f, snapshot);
	ExecClearTuple(slot);
	found = columnar_read_row(f->rs, row, slot->tts_values, slot->tts_isnull);
	if (!found && f->generation != columnar_pending_generation)
	{
		/* rows buffered since: look again */
		fetch_open(f, snapshot);
		found = columnar_read_row(f->rs, row, slot->tts_values, slot->tts_isnull);
	}
	if (!found)
		return false;
	ExecStoreVirtualTuple(slot);
	slot->tts_tid = *tid;
	slot->tts_tableOid = RelationGetRelid(f->base.rel);
	return true;
}

static bool
columnar_fetch_row_version(Relation rel, ItemPointer tid, Snapshot snapshot,
						   TupleTableSlot *slot)
{
	IndexFetchTableData *f = columnar_index_fetch_begin(rel);
	bool		call_again;
	bool		found = columnar_index_fetch_tuple(f, tid, snapshot, slot, &call_again, NULL);

	if (found)
		ExecMaterializeSlot(slot);
	columnar_index_fetch_end(f);
	return found;
}

static bool
columnar_tuple_tid_valid(TableScanDesc scan, ItemPointer tid)
{
	return ItemPointerIsValid(tid);
}

static void
columnar_tuple_get_latest_tid(TableScanDesc scan, ItemPointer tid)
{
	/* rows are never updated: a TID is always the latest */
}

static bool
columnar_tuple_satisfies_snapshot(Relation rel, TupleTableSlot *slot, Snapshot snapshot)
{
	TupleTableSlot *tmp = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
	bool		found = columnar_fetch_row_version(rel, &slot->tts_tid, snapshot, tmp);

	ExecDropSingleTupleTableSlot(tmp);
	return found;
}

static TransactionId
columnar_index_delete_tuples(Relation rel, TM_IndexDeleteOp *delstate)
{
	/* rows are never deleted one by one: nothing to give back */
	for (int i = 0; i < delstate->ndeltids; i++)
		delstate->status[i].knowndeletable = false;
	return InvalidTransactionId;
}

/* ---- writes ---- */

columnar_insert_hook_type columnar_insert_hook = NULL;

static void
columnar_tuple_insert(Relation rel, TupleTableSlot *slot, CommandId cid,
					  int options, struct BulkInsertStateData *bistate)
{
	if (columnar_insert_hook)
		columnar_insert_hook(rel, &slot, 1);
	columnar_write_row(rel, slot, cid);
	pgstat_count_heap_insert(rel, 1);
}

static void
columnar_multi_insert(Relation rel, TupleTableSlot **slots, int nslots, CommandId cid,
					  int options, struct BulkInsertStateData *bistate)
{
	if (columnar_insert_hook)
		columnar_insert_hook(rel, slots, nslots);
	for (int i = 0; i < nslots; i++)
		columnar_write_row(rel, slots[i], cid);
	pgstat_count_heap_insert(rel, nslots);
}

static void
not_supported(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s is not supported on parca_columnar tables", what)));
}

/* UPDATE, DELETE: say how rows are removed instead. */
static void
not_supported_change(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s is not supported on parca_columnar tables", what),
			 errhint("Rows are removed by whole time ranges: partition the table by time and drop or truncate old partitions.")));
}

static void
columnar_tuple_insert_speculative(Relation rel, TupleTableSlot *slot, CommandId cid,
								  int options, struct BulkInsertStateData *bistate,
								  uint32 specToken)
{
	not_supported("INSERT ... ON CONFLICT");
}

static void
columnar_tuple_complete_speculative(Relation rel, TupleTableSlot *slot,
									uint32 specToken, bool succeeded)
{
	not_supported("INSERT ... ON CONFLICT");
}

static TM_Result
columnar_tuple_delete(Relation rel, ItemPointer tid, CommandId cid, Snapshot snapshot,
					  Snapshot crosscheck, bool wait, TM_FailureData *tmfd, bool changingPart)
{
	not_supported_change("DELETE");
	return TM_Invisible;
}

static TM_Result
columnar_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot, CommandId cid,
					  Snapshot snapshot, Snapshot crosscheck, bool wait,
					  TM_FailureData *tmfd, LockTupleMode *lockmode, bool *update_indexes)
{
	not_supported_change("UPDATE");
	return TM_Invisible;
}

static TM_Result
columnar_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot, TupleTableSlot *slot,
					CommandId cid, LockTupleMode mode, LockWaitPolicy wait_policy,
					uint8 flags, TM_FailureData *tmfd)
{
	not_supported("locking rows");
	return TM_Invisible;
}

static void
columnar_finish_bulk_insert(Relation rel, int options)
{
	/*
	 * A table created in this transaction may be a rewrite's transient
	 * table, dropped before commit: write its rows out now.
	 */
	if (rel->rd_createSubid != InvalidSubTransactionId)
		columnar_flush_relation(RelationGetRelid(rel));
}

/* ---- storage ---- */

static void
columnar_set_new_filenode(Relation rel, const RelFileNode *newrnode, char persistence,
						  TransactionId *freezeXid, MultiXactId *minmulti)
{
	SMgrRelation srel;

	if (persistence == RELPERSISTENCE_UNLOGGED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("unlogged parca_columnar tables are not supported")));

	/* TRUNCATE: forget the old storage's stripes and buffered rows */
	if (newrnode->relNode != rel->rd_node.relNode &&
		smgrexists(RelationGetSmgr(rel), MAIN_FORKNUM) &&
		RelationGetNumberOfBlocks(rel) > 0)
	{
		columnar_discard_relation(RelationGetRelid(rel));
		columnar_delete_storage(RelationGetRelid(rel), columnar_read_storage_id(rel));
	}

	*freezeXid = InvalidTransactionId;
	*minmulti = InvalidMultiXactId;
	srel = RelationCreateStorage(*newrnode, persistence, true);
	columnar_init_metapage(rel, srel, persistence == RELPERSISTENCE_PERMANENT,
						   columnar_new_storage_id());
	smgrclose(srel);
}

static void
columnar_nontransactional_truncate(Relation rel)
{
	int64		storage_id = columnar_read_storage_id(rel);

	columnar_discard_relation(RelationGetRelid(rel));
	columnar_delete_storage(RelationGetRelid(rel), storage_id);
	RelationTruncate(rel, 0);
	columnar_init_metapage(rel, RelationGetSmgr(rel), RelationNeedsWAL(rel), storage_id);
}

static void
columnar_copy_data(Relation rel, const RelFileNode *newrnode)
{
	SMgrRelation dst;

	columnar_flush_relation(RelationGetRelid(rel));
	FlushRelationBuffers(rel);
	dst = RelationCreateStorage(*newrnode, rel->rd_rel->relpersistence, true);
	RelationCopyStorage(RelationGetSmgr(rel), dst, MAIN_FORKNUM,
						rel->rd_rel->relpersistence);
	RelationDropStorage(rel);
	smgrclose(dst);
}

static void
columnar_copy_for_cluster(Relation OldTable, Relation NewTable, Relation OldIndex,
						  bool use_sort, TransactionId OldestXmin,
						  TransactionId *xid_cutoff, MultiXactId *multi_cutoff,
						  double *num_tuples, double *tups_vacuumed,
						  double *tups_recently_dead)
{
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ColumnarReadState *rs = columnar_read_begin(OldTable, snapshot, all_attrs(OldTable), NIL);
	TupleTableSlot *slot = MakeSingleTupleTableSlot(RelationGetDescr(NewTable), &TTSOpsVirtual);
	CommandId	cid = GetCurrentCommandId(true);
	int64		row;

	*num_tuples = 0;
	while (columnar_read_next(rs, slot->tts_values, slot->tts_isnull, &row))
	{
		ExecStoreVirtualTuple(slot);
		columnar_write_row(NewTable, slot, cid);
		ExecClearTuple(slot);
		*num_tuples += 1;
	}
	columnar_flush_relation(RelationGetRelid(NewTable));
	ExecDropSingleTupleTableSlot(slot);
	columnar_read_end(rs);
	UnregisterSnapshot(snapshot);
	*tups_vacuumed = 0;
	*tups_recently_dead = 0;
	*xid_cutoff = InvalidTransactionId;
	*multi_cutoff = InvalidMultiXactId;
}

/* Rows a snapshot taken now sees. */
static int64
count_rows(Relation rel)
{
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ColumnarReadState *rs = columnar_read_begin(rel, snapshot, NULL, NIL);
	int64		n = columnar_read_total_rows(rs);

	columnar_read_end(rs);
	UnregisterSnapshot(snapshot);
	return n;
}

/*
 * Lazy VACUUM runs with PROC_IN_VACUUM, which tells other backends to
 * leave its xid out of their snapshots and its xmin out of their
 * horizons: right for a vacuum that writes nothing transactional, wrong
 * for compaction, which deletes and inserts stripe rows.  A snapshot taken
 * while it runs would take its xid for an aborted one: hint bits would
 * bring the deleted stripe rows back to life (HEAP_XMAX_INVALID) after
 * their TOAST is gone, and hide the merged ones (HEAP_XMIN_INVALID).  So
 * a VACUUM that compacts first becomes an ordinary transaction, before it
 * has an xid and before it takes the snapshots it reads stripes with.
 *
 * Its xmin, which others ignored until now, counts again: rows removed
 * meanwhile are rows no snapshot taken from now on needs, and the
 * compaction reads with such snapshots only.
 */
static void
stop_being_ignored_as_vacuum(void)
{
	Assert(!TransactionIdIsValid(GetTopTransactionIdIfAny()));
	LWLockAcquire(ProcArrayLock, LW_EXCLUSIVE);
	MyProc->statusFlags &= ~PROC_IN_VACUUM;
	ProcGlobal->statusFlags[MyProc->pgxactoff] = MyProc->statusFlags;
	LWLockRelease(ProcArrayLock);
}

/*
 * VACUUM: list the data pages free for reuse, merge stripes, then update
 * the statistics.  Autovacuum does not wait for the compaction lock;
 * VACUUM does.
 */
static void
columnar_vacuum(Relation rel, struct VacuumParams *params, BufferAccessStrategy bstrategy)
{
	int64		merged = 0;
	int64		rows;

	/* nothing transactional: fine under PROC_IN_VACUUM */
	columnar_refresh_free_space(rel);
	if (columnar_compaction_pending(rel))
	{
		Snapshot	snapshot;

		if (MyProc->statusFlags & PROC_IN_VACUUM)
			stop_being_ignored_as_vacuum();
		snapshot = RegisterSnapshot(GetLatestSnapshot());
		PushActiveSnapshot(snapshot);
		merged = columnar_compact(rel, !IsAutoVacuumWorkerProcess(), true);
		PopActiveSnapshot();
		UnregisterSnapshot(snapshot);
	}
	rows = count_rows(rel);
	vac_update_relstats(rel, RelationGetNumberOfBlocks(rel), (double) rows, 0,
						RelationGetForm(rel)->relhasindex, InvalidTransactionId,
						InvalidMultiXactId, NULL, NULL, false);
	ereport((params->options & VACOPT_VERBOSE) ? INFO : DEBUG2,
			(errmsg("\"%s\": merged " INT64_FORMAT " stripes; " INT64_FORMAT " rows in %u pages",
					RelationGetRelationName(rel), merged, rows,
					RelationGetNumberOfBlocks(rel))));
}

/* ---- ANALYZE ---- */

static bool
columnar_analyze_next_block(TableScanDesc sscan, BlockNumber blockno,
							BufferAccessStrategy bstrategy)
{
	ColumnarScanDesc scan = (ColumnarScanDesc) sscan;
	int64		total = columnar_read_total_rows(scan->rs);
	BlockNumber nblocks = Max(RelationGetNumberOfBlocks(sscan->rs_rd), 1);
	int64		per_block = Max(1, (ANALYZE_SAMPLE_ROWS + nblocks - 1) / nblocks);

	scan->ana_next = (int64) ((double) total * blockno / nblocks);
	scan->ana_end = (int64) ((double) total * (blockno + 1) / nblocks);
	scan->ana_step = Max(1, (scan->ana_end - scan->ana_next) / per_block);
	return true;
}

static bool
columnar_analyze_next_tuple(TableScanDesc sscan, TransactionId OldestXmin,
							double *liverows, double *deadrows, TupleTableSlot *slot)
{
	ColumnarScanDesc scan = (ColumnarScanDesc) sscan;
	int64		row;

	ExecClearTuple(slot);
	if (scan->ana_next >= scan->ana_end ||
		!columnar_read_seek_ordinal(scan->rs, scan->ana_next, slot->tts_values,
									slot->tts_isnull, &row))
		return false;
	scan->ana_next += scan->ana_step;
	ExecStoreVirtualTuple(slot);
	columnar_row_to_tid(row, &slot->tts_tid);
	/* each sampled row stands for the rows stepped over */
	*liverows += (double) scan->ana_step;
	return true;
}

/* ---- index builds ---- */

static double
columnar_index_build_range_scan(Relation table_rel, Relation index_rel,
								struct IndexInfo *index_info, bool allow_sync,
								bool anyvisible, bool progress,
								BlockNumber start_blockno, BlockNumber numblocks,
								IndexBuildCallback callback, void *callback_state,
								TableScanDesc sscan)
{
	Snapshot	snapshot = NULL;
	ColumnarReadState *rs = NULL;
	EState	   *estate = CreateExecutorState();
	ExprContext *econtext = GetPerTupleExprContext(estate);
	TupleTableSlot *slot = MakeSingleTupleTableSlot(RelationGetDescr(table_rel), &TTSOpsVirtual);
	ExprState  *predicate = ExecPrepareQual(index_info->ii_Predicate, estate);
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	double		reltuples = 0;
	int64		row;
	bool		reads = true;

	if (sscan && sscan->rs_parallel)
		reads = ((ColumnarParallelScan *) sscan->rs_parallel)->leader_pid == MyProcPid;
	if (reads)
	{
		snapshot = latest_snapshot();
		rs = columnar_read_begin(table_rel, snapshot, all_attrs(table_rel), NIL);
	}
	econtext->ecxt_scantuple = slot;
	while (rs && columnar_read_next(rs, slot->tts_values, slot->tts_isnull, &row))
	{
		ExecStoreVirtualTuple(slot);
		columnar_row_to_tid(row, &slot->tts_tid);
		MemoryContextReset(econtext->ecxt_per_tuple_memory);
		if (predicate == NULL || ExecQual(predicate, econtext))
		{
			FormIndexDatum(index_info, slot, estate, values, isnull);
			callback(index_rel, &slot->tts_tid, values, isnull, true, callback_state);
		}
		reltuples += 1;
		ExecClearTuple(slot);
	}
	if (rs)
		columnar_read_end(rs);
	if (sscan)
		table_endscan(sscan);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	if (snapshot)
		UnregisterSnapshot(snapshot);
	return reltuples;
}

static void
columnar_index_validate_scan(Relation table_rel, Relation index_rel,
							 struct IndexInfo *index_info, Snapshot snapshot,
							 struct ValidateIndexState *state)
{
	not_supported("CREATE INDEX CONCURRENTLY");
}

static bool
columnar_needs_toast_table(Relation rel)
{
	return false;
}

static void
columnar_estimate_size(Relation rel, int32 *attr_widths, BlockNumber *pages,
					   double *tuples, double *allvisfrac)
{
	*pages = RelationGetNumberOfBlocks(rel);
	*tuples = *pages > 0 ? (double) columnar_read_metapage(rel).next_row : 0;
	*allvisfrac = 0;
}

static bool
columnar_sample_next_block(TableScanDesc scan, struct SampleScanState *scanstate)
{
	not_supported("TABLESAMPLE");
	return false;
}

static bool
columnar_sample_next_tuple(TableScanDesc scan, struct SampleScanState *scanstate,
						   TupleTableSlot *slot)
{
	not_supported("TABLESAMPLE");
	return false;
}

static const TableAmRoutine columnar_methods = {
	.type = T_TableAmRoutine,
	.slot_callbacks = columnar_slot_callbacks,
	.scan_begin = columnar_scan_begin,
	.scan_end = columnar_scan_end,
	.scan_rescan = columnar_scan_rescan,
	.scan_getnextslot = columnar_scan_getnextslot,
	.parallelscan_estimate = columnar_parallelscan_estimate,
	.parallelscan_initialize = columnar_parallelscan_initialize,
	.parallelscan_reinitialize = columnar_parallelscan_reinitialize,
	.index_fetch_begin = columnar_index_fetch_begin,
	.index_fetch_reset = columnar_index_fetch_reset,
	.index_fetch_end = columnar_index_fetch_end,
	.index_fetch_tuple = columnar_index_fetch_tuple,
	.tuple_fetch_row_version = columnar_fetch_row_version,
	.tuple_tid_valid = columnar_tuple_tid_valid,
	.tuple_get_latest_tid = columnar_tuple_get_latest_tid,
	.tuple_satisfies_snapshot = columnar_tuple_satisfies_snapshot,
	.index_delete_tuples = columnar_index_delete_tuples,
	.tuple_insert = columnar_tuple_insert,
	.tuple_insert_speculative = columnar_tuple_insert_speculative,
	.tuple_complete_speculative = columnar_tuple_complete_speculative,
	.multi_insert = columnar_multi_insert,
	.tuple_delete = columnar_tuple_delete,
	.tuple_update = columnar_tuple_update,
	.tuple_lock = columnar_tuple_lock,
	.finish_bulk_insert = columnar_finish_bulk_insert,
	.relation_set_new_filenode = columnar_set_new_filenode,
	.relation_nontransactional_truncate = columnar_nontransactional_truncate,
	.relation_copy_data = columnar_copy_data,
	.relation_copy_for_cluster = columnar_copy_for_cluster,
	.relation_vacuum = columnar_vacuum,
	.scan_analyze_next_block = columnar_analyze_next_block,
	.scan_analyze_next_tuple = columnar_analyze_next_tuple,
	.index_build_range_scan = columnar_index_build_range_scan,
	.index_validate_scan = columnar_index_validate_scan,
	.relation_size = table_block_relation_size,
	.relation_needs_toast_table = columnar_needs_toast_table,
	.relation_estimate_size = columnar_estimate_size,
	.scan_sample_next_block = columnar_sample_next_block,
	.scan_sample_next_tuple = columnar_sample_next_tuple,
};

Datum
parca_columnar_handler(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(&columnar_methods);
}
