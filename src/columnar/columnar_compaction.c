/*
 * columnar_compaction.c
 *		Merging stripes into larger ones: small inline stripes at commit,
 *		once enough have gathered; in VACUUM and parca_columnar_compact(),
 *		all inline stripes, then partial stripes of every kind (on pages
 *		too) by size ratio.  And the list of free data pages that VACUUM
 *		keeps in the metapage, for new stripes to reuse.
 *
 * Every stripe smaller than parca.columnar_inline_stripe_bytes is kept
 * inline in its parca.columnar_stripes row; bigger ones are on pages.
 * Merged stripes are read back (columnar_read.c) and written again as one
 * stripe (columnar_write.c) under the same row numbers, so indexes stay
 * valid.  VACUUM of a table without indexes writes the rows of a merged
 * stripe in the order of the table's sort columns (parca.columnar_options
 * sort_by; parca.samples: series, then time), so that a query for some
 * series skips the chunk groups of the others; its row numbers then name
 * other rows, which nothing can refer to: no index, and VACUUM's lock
 * keeps one from being built meanwhile (CREATE INDEX, even CONCURRENTLY,
 * waits for it).  The concurrency rules are below and in docs/columnar.md
 * ("Concurrency").
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/storage.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/relcache.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "columnar/columnar_internal.h"

/*
 * Compaction merges inline stripes by size class: class k holds stripes of
 * 16^k to 16^(k+1) - 1 rows.  The stripes of one class merge into stripes
 * of a higher class, so however small the commits, a row is rewritten at
 * most log16(stripe_rows) times (5 for the default) before it rests in a
 * full or paged stripe; merging every inline stripe each time instead
 * would rewrite a growing stripe again and again.
 *
 * Concurrency.  A compaction deletes the stripe rows it merges and inserts
 * the merged stripes in its own transaction, so that every snapshot sees
 * either the old stripes or the new ones, each row once:
 *	- one compactor per table at a time: it holds the table's compaction
 *	  lock (columnar_lock_compaction) to the end of its transaction;
 *	- it reads the stripes to merge under that lock, with a snapshot taken
 *	  after it, so it sees what the compactor before it committed; it sees
 *	  committed stripes only, never one another transaction still writes;
 *	- its deletes are ordinary MVCC deletes: older snapshots still see the
 *	  old stripes (and vacuum keeps their rows and TOAST) until they end;
 *	- the pages of the stripes it merges stay as they are until their
 *	  rows have been removed from the catalog, which waits for every
 *	  snapshot that could see them (columnar_refresh_free_space); a
 *	  compaction that fails or crashes leaves pages that no stripe row
 *	  refers to, which the next VACUUM lists as free.
 * The transaction must be one whose xid other snapshots see: lazy VACUUM
 * makes sure of that first (columnar_tableam.c).
 */
#define COMPACT_FANIN 16
#define COMPACT_CLASSES 8		/* 16^7 > the largest stripe_rows */
#define COMPACT_ALL_CLASSES (-1)

static int
compaction_class(int64 rows)
{
	int			k = 0;

	while (rows >= COMPACT_FANIN && k < COMPACT_CLASSES - 1)
	{
		rows /= COMPACT_FANIN;
		k++;
	}
	return k;
}

/*
 * Rows per merged stripe: stripe_rows, or fewer when the buffer of that
 * many rows would not fit in half of parca.columnar_write_memory (the
 * rest is for dictionaries).
 */
static int64
merge_target_rows(Relation rel, ColumnarOptions opts)
{
	int64		row_bytes = (int64) columnar_buffer_row_bytes(RelationGetDescr(rel));
	int64		memory_rows = Max((int64) columnar_write_memory_kb * 1024 / 2 / row_bytes, 1);

	return Min((int64) opts.stripe_rows, memory_rows);
}

/*
 * Merge stripes (loaded under the compaction lock, in row number order)
 * into stripes of up to merge_target_rows rows, keeping row numbers, and
 * the order of the rows unless reorder (see the top of this file); their
 * rows are deleted.  The chunk groups of one
 * stripe at a time are decoded and the rows go into one write buffer, so
 * the memory is that of one merged stripe, and its dictionaries hold each
 * stack once.  on_pages: a merged stripe of more than one chunk group goes
 * on pages however small it is, since every scan of the table reads an
 * inline stripe whole, and a stripe on pages only in the chunks it needs
 * (VACUUM's and parca_columnar_compact()'s; merges at commit keep small
 * writes inline).
 */
static void
merge_stripes(Relation rel, List *stripes, ColumnarOptions opts, bool reorder, bool on_pages)
{
	ColumnarWriteBuffer *buf;
	ListCell   *lc;
	Bitmapset  *attrs = NULL;
	int			natts = RelationGetDescr(rel)->natts;
	Datum	   *values;
	bool	   *isnull;
	int64		buffered = 0;	/* rows in buf */
	int64		total_rows = 0;
	int64		target = merge_target_rows(rel, opts);
	int64		stripe_rows;	/* rows per merged stripe */
	/* a later snapshot than the stripes' sees their segments too */
	ColumnarDictionaryView *table_dict = columnar_dictionary_view(rel, GetLatestSnapshot());

	foreach(lc, stripes)
		total_rows += ((ColumnarStripe *) lfirst(lc))->row_count;
	/* buffers sized once rather than doubled (old and new at once) */
	stripe_rows = Min(total_rows, target);

	/* a compaction that fails in a subtransaction gives its buffers back */
	buf = columnar_buffer_create(rel, CurTransactionContext);
	if (reorder)
		columnar_buffer_order_rows(buf);
	values = palloc(sizeof(Datum) * natts);
	isnull = palloc(sizeof(bool) * natts);
	for (int i = 0; i < natts; i++)
		attrs = bms_add_member(attrs, i + 1);
	foreach(lc, stripes)
	{
		ColumnarStripe *s = lfirst(lc);
		ColumnarReadState *rs = columnar_read_stripes(rel, list_make1(s), attrs, table_dict);
		int64		row;

		/* gone before its rows are written again under the same numbers */
		columnar_delete_stripe(&s->meta_tid);
		while (columnar_read_next(rs, values, isnull, &row))
		{
			bool		full;

			if (buffered == 0)
				columnar_buffer_reserve(buf, (int) stripe_rows);
			full = columnar_buffer_append(buf, values, isnull, row, GetCurrentCommandId(true));
			if (++buffered == stripe_rows || full)
			{
				/*
				 * A stripe cut short by its dictionaries' memory is final, or
				 * it would be merged again; one that the memory limits to
				 * merge_target_rows is full, and goes on pages, so that
				 * merges of inline stripes leave it alone.
				 */
				bool		cut = buffered < stripe_rows;

				columnar_buffer_flush(rel, buf,
									  cut || target < opts.stripe_rows ||
									  (on_pages && buffered > opts.chunk_group_rows),
									  cut ? COLUMNAR_STRIPE_FINAL : 0);
				buffered = 0;
			}
			CHECK_FOR_INTERRUPTS();
		}
		columnar_read_end(rs);
	}
	columnar_buffer_flush(rel, buf, on_pages && buffered > opts.chunk_group_rows, 0);
	columnar_buffer_free(buf);
	columnar_dictionary_view_end(table_dict);
	pfree(values);
	pfree(isnull);
	bms_free(attrs);
}

/*
 * The stripes of rel visible to a snapshot taken now: after the
 * compaction lock was granted, and after this transaction's own changes.
 */
static List *
load_stripes_under_lock(Relation rel, bool inline_only, Snapshot *snapshot)
{
	CommandCounterIncrement();
	*snapshot = RegisterSnapshot(GetLatestSnapshot());
	return columnar_load_stripes(columnar_read_metapage(rel).storage_id, *snapshot, inline_only);
}

/*
 * Merge the inline stripes of rel of fewer than stripe_rows rows in the
 * given size class (or all of them) into as few stripes as the stripe size
 * allows (on_pages: see merge_stripes).  The caller holds the compaction
 * lock.  Returns how many stripes were merged.
 */
static int64
merge_inline_class(Relation rel, int class, ColumnarOptions opts, bool reorder, bool on_pages)
{
	Snapshot	snapshot;
	List	   *stripes = load_stripes_under_lock(rel, true, &snapshot);
	List	   *small = NIL;
	ListCell   *lc;

	foreach(lc, stripes)
	{
		ColumnarStripe *s = lfirst(lc);

		if (s->row_count < opts.stripe_rows &&
			(class == COMPACT_ALL_CLASSES || compaction_class(s->row_count) == class))
			small = lappend(small, s);
	}
	if (list_length(small) >= 2)
		merge_stripes(rel, small, opts, reorder, on_pages);
	UnregisterSnapshot(snapshot);
	return list_length(small) >= 2 ? list_length(small) : 0;
}

/*
 * Merge the inline stripes of one size class (see merge_inline_class);
 * nothing if another transaction holds the compaction lock and wait is
 * false.  Returns how many stripes were merged.
 */
static int64
compact_class(Relation rel, int class, bool wait)
{
	if (!columnar_lock_compaction(RelationGetRelid(rel), wait))
		return 0;
	return merge_inline_class(rel, class, columnar_get_options(RelationGetRelid(rel)), false,
							  false);
}

/*
 * Stripes of every kind (inline and on pages) are merged by size ratio,
 * as in the universal compaction of LSM trees: from the newest partial
 * stripe back, a run takes the next older one while it has no more rows
 * than the run so far (MERGE_SIZE_RATIO times), and every run of two or
 * more is merged.  A row is therefore rewritten only into a stripe at
 * least twice the size of the one it was in, at most log2(stripe_rows /
 * rows per write) times, and what is left unmerged is a handful of
 * partial stripes of decreasing size, the newest rows.  Stripes of
 * merge_target_rows rows (full) and final ones are never merged.
 */
#define MERGE_SIZE_RATIO 1

/* The runs (lists of stripes in row number order) that should be merged. */
static List *
plan_runs(List *stripes, int64 target)
{
	List	   *runs = NIL;
	List	   *run = NIL;
	int64		run_rows = 0;

	for (int i = list_length(stripes) - 1; i >= 0; i--)
	{
		ColumnarStripe *s = list_nth(stripes, i);

		if (s->row_count >= target || (s->flags & COLUMNAR_STRIPE_FINAL))
			continue;
		if (run != NIL && s->row_count > run_rows * MERGE_SIZE_RATIO)
		{
			if (list_length(run) >= 2)
				runs = lappend(runs, run);
			run = NIL;
			run_rows = 0;
		}
		run = lcons(s, run);
		run_rows += s->row_count;
	}
	if (list_length(run) >= 2)
		runs = lappend(runs, run);
	return runs;
}

/*
 * Merge the partial stripes of rel by size ratio, until no run is left
 * (a merged stripe may make a run with older ones); the caller holds the
 * lock.  Then, newest first, each partial stripe has more rows than all
 * newer ones together: there are at most log2(merge_target_rows) + 1.
 */
static int64
merge_partial_stripes(Relation rel, ColumnarOptions opts, bool reorder)
{
	int64		target = merge_target_rows(rel, opts);
	int64		merged = 0;

	for (;;)
	{
		Snapshot	snapshot;
		List	   *stripes = load_stripes_under_lock(rel, false, &snapshot);
		List	   *runs = plan_runs(stripes, target);
		ListCell   *lc;

		foreach(lc, runs)
		{
			merge_stripes(rel, lfirst(lc), opts, reorder, true);
			merged += list_length(lfirst(lc));
			list_free(lfirst(lc));
		}
		UnregisterSnapshot(snapshot);
		list_free_deep(stripes);
		if (runs == NIL)
			break;
		list_free(runs);
	}
	return merged;
}

/*
 * The stripe on pages to move down, or NULL: the last one (by first
 * block), when a free run before it can hold it and the table has at least
 * as many free data pages as used ones.  A time partition that is written
 * no more keeps the pages of the stripes its last merge merged, which lie
 * before the merged stripe; columnar_refresh_free_space gives back only a
 * free tail.  Moved down (written again, as a merge of one stripe: the
 * writer takes the first free run that holds it), its old pages become the
 * tail that a later VACUUM gives back.  The rule of half the pages keeps a
 * table that is written to from rewriting its last stripe at every VACUUM.
 */
static ColumnarStripe *
stripe_to_move_down(Relation rel, List *stripes)
{
	ColumnarStripe *last = NULL;
	ColumnarBlockRun *free;
	int			nfree = columnar_free_runs(rel, &free);
	int64		used = 0;
	int64		free_pages = 0;
	int64		pages;
	bool		fits = false;
	ListCell   *lc;

	foreach(lc, stripes)
	{
		ColumnarStripe *s = lfirst(lc);

		if (s->first_block < 0)
			continue;
		used += (s->data_size + COLUMNAR_PAGE_PAYLOAD - 1) / COLUMNAR_PAGE_PAYLOAD;
		if (last == NULL || s->first_block > last->first_block)
			last = s;
	}
	if (last != NULL)
	{
		pages = (last->data_size + COLUMNAR_PAGE_PAYLOAD - 1) / COLUMNAR_PAGE_PAYLOAD;
		for (int i = 0; i < nfree; i++)
		{
			free_pages += free[i].count;
			if (free[i].count >= pages && free[i].first + pages <= last->first_block)
				fits = true;
		}
	}
	pfree(free);
	return fits && free_pages >= used ? last : NULL;
}

/*
 * Move rel's last stripe down (stripe_to_move_down), if it should be;
 * the caller holds the compaction lock.  Returns the stripes merged: 1 or 0.
 */
static int64
move_last_stripe_down(Relation rel, ColumnarOptions opts, bool reorder)
{
	Snapshot	snapshot;
	List	   *stripes = load_stripes_under_lock(rel, false, &snapshot);
	ColumnarStripe *s = stripe_to_move_down(rel, stripes);

	if (s != NULL)
		merge_stripes(rel, list_make1(s), opts, reorder, true);
	UnregisterSnapshot(snapshot);
	list_free_deep(stripes);
	return s != NULL ? 1 : 0;
}

/*
 * Whether s is an inline stripe of more than one chunk group, which
 * VACUUM writes on pages as merge_stripes' on_pages does: a full stripe
 * that merges at commit made, or one a COPY wrote, which no merge takes
 * again, would otherwise be read whole by every scan.
 */
static bool
inline_stripe_for_pages(const ColumnarStripe *s)
{
	return s->first_block < 0 && s->ngroups > 1;
}

/*
 * Write each inline stripe of rel that belongs on pages
 * (inline_stripe_for_pages) there, as a merge of that one stripe.  The
 * caller holds the compaction lock.  Returns how many stripes were
 * written.
 */
static int64
move_inline_stripes_to_pages(Relation rel, ColumnarOptions opts, bool reorder)
{
	Snapshot	snapshot;
	List	   *stripes = load_stripes_under_lock(rel, true, &snapshot);
	int64		moved = 0;
	ListCell   *lc;

	foreach(lc, stripes)
	{
		ColumnarStripe *s = lfirst(lc);

		if (inline_stripe_for_pages(s))
		{
			merge_stripes(rel, list_make1(s), opts, reorder, true);
			moved++;
		}
	}
	UnregisterSnapshot(snapshot);
	list_free_deep(stripes);
	return moved;
}

/*
 * Compact rel now (VACUUM, parca_columnar_compact): merge all small inline
 * stripes, then partial stripes of every kind by size ratio, write the
 * inline stripes left of more than one chunk group on pages, then the
 * segments of its stack dictionary (columnar_dictionary_merge).  Without
 * wait, nothing happens while another transaction compacts rel.
 * in_vacuum: called by VACUUM, whose lock keeps indexes from being built,
 * so that merged stripes of a table without indexes may be written in the
 * order of its sort columns; and the last stripe is moved down if free
 * pages before it can hold it.  Returns how many stripes were merged.
 */
int64
columnar_compact(Relation rel, bool wait, bool in_vacuum)
{
	ColumnarOptions opts = columnar_get_options(RelationGetRelid(rel));
	bool		reorder;
	int64		merged;

	if (!columnar_lock_compaction(RelationGetRelid(rel), wait))
		return 0;
	reorder = in_vacuum && opts.nsort > 0 && RelationGetIndexList(rel) == NIL;
	merged = merge_inline_class(rel, COMPACT_ALL_CLASSES, opts, reorder, true);
	merged += merge_partial_stripes(rel, opts, reorder);
	merged += move_inline_stripes_to_pages(rel, opts, reorder);
	if (in_vacuum)
		merged += move_last_stripe_down(rel, opts, reorder);
	/* and the segments of its stack dictionary, alike */
	columnar_dictionary_merge(rel, opts.compression_level);
	return merged;
}

/*
 * Delete every row of rel, as an MVCC delete of its stripe rows (a
 * columnar table has no DELETE of single rows): snapshots taken before
 * this transaction commits still read every row, later ones none, as
 * after a heap DELETE and unlike after TRUNCATE.  The pages stay until no
 * snapshot can see them (columnar_refresh_free_space, in VACUUM).  The
 * caller holds a lock on rel that keeps writers out (ExclusiveLock);
 * compactors are kept out by the compaction lock, taken here, so that the
 * stripes deleted hold the rows that the caller's snapshot saw, if
 * perhaps merged otherwise.  Returns how many rows were deleted.
 */
int64
columnar_delete_all_rows(Relation rel)
{
	Snapshot	snapshot;
	List	   *stripes;
	ListCell   *lc;
	int64		rows = 0;

	/* this transaction's own buffered rows are rows of rel too */
	columnar_flush_relation(RelationGetRelid(rel));
	columnar_lock_compaction(RelationGetRelid(rel), true);
	stripes = load_stripes_under_lock(rel, false, &snapshot);
	foreach(lc, stripes)
	{
		ColumnarStripe *s = lfirst(lc);

		rows += s->row_count;
		columnar_delete_stripe(&s->meta_tid);
	}
	UnregisterSnapshot(snapshot);
	list_free_deep(stripes);
	/* other rows now: a new content version (columnar_content_version) */
	if (rows > 0)
		(void) columnar_reserve_rows(rel, 1);
	CommandCounterIncrement();
	return rows;
}

/*
 * Record in rel's metapage the data pages that no row of the stripe
 * catalog refers to (pages of merged-away stripes once VACUUM of the
 * catalog has removed their rows, pages of rolled-back or crashed
 * writes), for writers to reuse.  A page becomes free only when no
 * snapshot, on the primary or on a standby, can see a stripe on it: the
 * rows of a deleted stripe are removed only when every snapshot that saw
 * them has gone, and their removal's WAL is what cancels standby queries
 * still reading them, before any reuse of the pages is replayed.  Writers
 * wait (the page-write lock) while the list is made, so that the pages
 * of a write not yet recorded in the catalog are not taken for free.
 */
void
columnar_refresh_free_space(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	ColumnarBlockRun *used;
	ColumnarBlockRun *free;
	int			nused;
	int			nfree = 0;
	int64		next = 1;		/* block 0 is the metapage */
	BlockNumber nblocks;

	columnar_lock_page_writes(relid, ExclusiveLock);
	nblocks = RelationGetNumberOfBlocks(rel);
	nused = columnar_stripe_block_runs(columnar_read_metapage(rel).storage_id, &used);
	qsort(used, nused, sizeof(ColumnarBlockRun), columnar_range_cmp);
	free = palloc(sizeof(ColumnarBlockRun) * (nused + 1));
	for (int i = 0; i <= nused; i++)
	{
		int64		end = i < nused ? Min(used[i].first, (int64) nblocks) : (int64) nblocks;

		if (end > next)
		{
			free[nfree].first = next;
			free[nfree].count = end - next;
			nfree++;
		}
		if (i < nused)
			next = Max(next, used[i].first + used[i].count);
	}

	/*
	 * A free tail is given back, when no one else has the table open (as
	 * heap VACUUM truncates): old time partitions, written no more, do not
	 * keep the pages their last merges freed.  The lock is released at
	 * once; the truncation is WAL-logged and not transactional.
	 */
	if (nfree > 0 && free[nfree - 1].first + free[nfree - 1].count == (int64) nblocks &&
		ConditionalLockRelation(rel, AccessExclusiveLock))
	{
		RelationTruncate(rel, (BlockNumber) free[nfree - 1].first);
		UnlockRelation(rel, AccessExclusiveLock);
		nfree--;
	}
	columnar_set_free_runs(rel, free, nfree);
	columnar_unlock_page_writes(relid, ExclusiveLock);
	pfree(used);
	pfree(free);
}

/*
 * The row counts of the stripes of rel (only the inline ones, with
 * inline_only) of fewer than rows rows, as the latest snapshot sees them:
 * a hint for deciding whether to compact, read without the compaction
 * lock.
 */
static int
partial_row_counts(Relation rel, bool inline_only, int64 rows, int64 **counts)
{
	int			n = columnar_stripe_row_counts(columnar_read_metapage(rel).storage_id,
											   inline_only, counts);
	int			kept = 0;

	for (int i = 0; i < n; i++)
		if ((*counts)[i] < rows)
			(*counts)[kept++] = (*counts)[i];
	return kept;
}

/*
 * Whether rel has stripes that columnar_compact might merge: two partial
 * ones (it merges them if their sizes make a run), a last stripe to move
 * down, or an inline stripe that belongs on pages; or segments of its
 * stack dictionary to merge.
 */
bool
columnar_compaction_pending(Relation rel)
{
	int64	   *counts;
	int			n = partial_row_counts(rel, false,
									   merge_target_rows(rel, columnar_get_options(RelationGetRelid(rel))),
									   &counts);
	bool		pending = n >= 2;

	pfree(counts);
	if (!pending)
	{
		List	   *stripes = columnar_load_stripes(columnar_read_metapage(rel).storage_id,
													GetLatestSnapshot(), false);
		ListCell   *lc;

		pending = stripe_to_move_down(rel, stripes) != NULL;
		foreach(lc, stripes)
			pending |= inline_stripe_for_pages(lfirst(lc));
		list_free_deep(stripes);
	}
	return pending || columnar_dictionary_merge_pending(rel);
}

/*
 * Compact one size class of rel at commit, in a subtransaction: a
 * compaction that fails (cancelled, out of memory, a damaged stripe) is
 * rolled back on its own, with a warning, and the commit goes on, so
 * that compaction can never cost the rows being committed.
 */
static void
compact_class_at_commit(Relation rel, int class)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	BeginInternalSubTransaction(NULL);
	PG_TRY();
	{
		compact_class(rel, class, false);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		ereport(WARNING,
				(errmsg("compaction of \"%s\" failed: %s", RelationGetRelationName(rel),
						edata->message),
				 errdetail("The commit went on; its small stripes stay as they were.")));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
}

/*
 * At commit of a transaction that wrote to relid: merge the lowest size
 * class that has gathered COMPACT_FANIN inline stripes, or a full
 * stripe's worth of rows.  Skipped while another transaction compacts.
 */
void
columnar_compact_at_commit(Oid relid, ColumnarOptions opts)
{
	Relation	rel;
	int64	   *counts;
	int			n;
	int			stripes[COMPACT_CLASSES] = {0};
	int64		rows[COMPACT_CLASSES] = {0};

	/*
	 * Usually still locked by the writes; not if they were in a savepoint
	 * rolled back since, and a commit does not wait.
	 */
	if (!ConditionalLockRelationOid(relid, RowExclusiveLock))
		return;
	rel = try_relation_open(relid, NoLock);
	if (rel == NULL || !columnar_is_columnar(rel))
	{
		/* dropped, or rewritten with another access method, by this transaction */
		if (rel)
			relation_close(rel, NoLock);
		return;
	}
	CommandCounterIncrement();
	n = partial_row_counts(rel, true, opts.stripe_rows, &counts);
	for (int i = 0; i < n; i++)
	{
		int			k = compaction_class(counts[i]);

		stripes[k]++;
		rows[k] += counts[i];
	}
	pfree(counts);
	for (int k = 0; k < COMPACT_CLASSES; k++)
	{
		if (stripes[k] >= COMPACT_FANIN || (stripes[k] >= 2 && rows[k] >= opts.stripe_rows))
		{
			compact_class_at_commit(rel, k);
			break;
		}
	}
	relation_close(rel, NoLock);
}
