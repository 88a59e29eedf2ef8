/*
 * columnar_write_state.c
 *		The rows a transaction has written and not yet stored: one write
 *		buffer (columnar_write.c) per table and subtransaction.
 *
 * A buffer becomes a stripe when it is full (the table's stripe_rows, or
 * parca.columnar_write_memory), at (sub)transaction commit, or when a bulk
 * load into a table created in this transaction ends; it is dropped when
 * its subtransaction aborts.  Rows still buffered are visible to the
 * writing transaction's own scans as in-memory stripes
 * (columnar_pending_stripes).  Row numbers are reserved from the metapage
 * counter as rows are buffered, in blocks that grow from 128 to
 * stripe_rows, so that a row's TID exists before it is stored and indexes
 * can point at it.  At commit, the tables the transaction wrote stripes to
 * go to compaction (columnar_compaction.c).
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "columnar/columnar_internal.h"

typedef struct WriteState
{
	Oid			relid;
	Oid			relfilenode;	/* storage the rows belong to */
	SubTransactionId subxid;
	ColumnarWriteBuffer *buf;
	int64		next_row;		/* next reserved row number */
	int64		reserved_end;
	int64		reserve_size;
	AttrNumber	log_by;			/* the options' log_by, or InvalidAttrNumber */
	Oid			log_relid;		/* the table the log names */
	bool		written;		/* [lo, hi] holds a row's log_by value */
	TimestampTz lo;
	TimestampTz hi;
	struct WriteState *next;
} WriteState;

static WriteState *write_states;	/* in TopTransactionContext */

/*
 * The log_by range of the rows of a table (by the storage's relid) that
 * committed subtransactions wrote, to be logged at commit: the range of a
 * WriteState freed, kept under its subtransaction until that commits
 * (then its parent's) or aborts (then forgotten).
 */
typedef struct WrittenRange
{
	Oid			relid;			/* the table written */
	Oid			log_relid;		/* the table the log names */
	SubTransactionId subxid;
	TimestampTz lo;
	TimestampTz hi;
} WrittenRange;

static List *written_ranges;	/* in TopTransactionContext */

/* A table this transaction wrote stripes to: its commit may compact it. */
typedef struct WrittenTable
{
	Oid			relid;
	ColumnarOptions opts;
} WrittenTable;

static List *written_tables;	/* in TopTransactionContext */

/* Bumped whenever buffered rows change, so readers know to look again. */
uint64		columnar_pending_generation;

/* The table at the top of relid's partition tree (relid if none). */
static Oid
partition_root(Oid relid)
{
	List	   *ancestors;
	Oid			root = relid;

	if (!get_rel_relispartition(relid))
		return relid;
	ancestors = get_partition_ancestors(relid);
	if (ancestors != NIL)
		root = llast_oid(ancestors);
	list_free(ancestors);
	return root;
}

static WriteState *
create_state(Relation rel)
{
	WriteState *st = MemoryContextAllocZero(TopTransactionContext, sizeof(WriteState));

	st->relid = RelationGetRelid(rel);
	st->relfilenode = rel->rd_node.relNode;
	st->subxid = GetCurrentSubTransactionId();
	st->buf = columnar_buffer_create(rel, TopTransactionContext);
	st->reserve_size = 128;
	st->log_by = columnar_buffer_options(st->buf).log_by;
	if (st->log_by != InvalidAttrNumber)
		st->log_relid = partition_root(st->relid);
	st->next = write_states;
	write_states = st;
	columnar_pending_generation++;
	return st;
}

/* Add [lo, hi] to the range of relid written in subtransaction subxid. */
static void
add_written(Oid relid, Oid log_relid, SubTransactionId subxid, TimestampTz lo, TimestampTz hi)
{
	ListCell   *lc;
	WrittenRange *w;
	MemoryContext old;

	foreach(lc, written_ranges)
	{
		w = lfirst(lc);
		if (w->relid == relid && w->subxid == subxid)
		{
			w->lo = Min(w->lo, lo);
			w->hi = Max(w->hi, hi);
			return;
		}
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	w = palloc(sizeof(WrittenRange));
	w->relid = relid;
	w->log_relid = log_relid;
	w->subxid = subxid;
	w->lo = lo;
	w->hi = hi;
	written_ranges = lappend(written_ranges, w);
	MemoryContextSwitchTo(old);
}

/*
 * Forget a state; with keep_range, its rows stay written (they were
 * flushed, or went with a TRUNCATE or rewrite: logging them anyway only
 * makes a reader look at their times once more), else its subtransaction
 * aborted.
 */
static void
free_state(WriteState *st, bool keep_range)
{
	WriteState **p;

	if (keep_range && st->written)
		add_written(st->relid, st->log_relid, st->subxid, st->lo, st->hi);

	for (p = &write_states; *p; p = &(*p)->next)
		if (*p == st)
		{
			*p = st->next;
			break;
		}
	columnar_buffer_free(st->buf);
	pfree(st);
	columnar_pending_generation++;
}

/* The state of relid for the current subtransaction, or NULL. */
static WriteState *
current_state(Oid relid)
{
	SubTransactionId sub = GetCurrentSubTransactionId();

	for (WriteState *st = write_states; st; st = st->next)
		if (st->relid == relid && st->subxid == sub)
			return st;
	return NULL;
}

static void
flush_state(Relation rel, WriteState *st)
{
	columnar_buffer_flush(rel, st->buf, false, 0);
	columnar_pending_generation++;
}

/*
 * Buffer one row of slot for rel, assigning its row number (slot->tts_tid).
 */
void
columnar_write_row(Relation rel, TupleTableSlot *slot, CommandId cid)
{
	WriteState *st = current_state(RelationGetRelid(rel));
	int64		row;

	if (st && st->relfilenode != rel->rd_node.relNode)
	{
		/* the relation was rewritten: its rows went with the rewrite */
		free_state(st, true);
		st = NULL;
	}
	if (st == NULL)
		st = create_state(rel);
	if (st->next_row == st->reserved_end)
	{
		st->next_row = columnar_reserve_rows(rel, st->reserve_size);
		st->reserved_end = st->next_row + st->reserve_size;
		st->reserve_size = Min(st->reserve_size * 2,
							   (int64) columnar_buffer_options(st->buf).stripe_rows);
	}
	row = st->next_row++;
	slot_getallattrs(slot);
	if (st->log_by != InvalidAttrNumber && !slot->tts_isnull[st->log_by - 1])
	{
		TimestampTz t = DatumGetTimestampTz(slot->tts_values[st->log_by - 1]);

		if (!st->written)
			st->lo = st->hi = t;
		st->written = true;
		st->lo = Min(st->lo, t);
		st->hi = Max(st->hi, t);
	}
	if (columnar_buffer_append(st->buf, slot->tts_values, slot->tts_isnull, row, cid))
		flush_state(rel, st);
	columnar_pending_generation++;
	columnar_row_to_tid(row, &slot->tts_tid);
	slot->tts_tableOid = RelationGetRelid(rel);
}

/*
 * In-memory stripes of the rows this backend has buffered for relid that
 * a snapshot with curcid sees (rows of earlier commands).
 */
List *
columnar_pending_stripes(Relation rel, CommandId curcid)
{
	List	   *result = NIL;

	for (WriteState *st = write_states; st; st = st->next)
	{
		int			nrows;

		if (st->relid != RelationGetRelid(rel) || st->relfilenode != rel->rd_node.relNode)
			continue;
		nrows = columnar_buffer_rows_before(st->buf, curcid);
		if (nrows > 0)
			result = lappend(result, columnar_buffer_stripe(st->buf, nrows));
	}
	return result;
}

/*
 * Whether this transaction has written rows into table relid (named as
 * the log names it) whose log_by values meet [lo, hi] and are not logged
 * yet: they are logged at commit, and its own reads are to know of them
 * before.
 */
bool
columnar_pending_written(Oid relid, TimestampTz lo, TimestampTz hi)
{
	ListCell   *lc;

	for (WriteState *st = write_states; st; st = st->next)
		if (st->written && st->log_relid == relid && st->lo <= hi && st->hi >= lo)
			return true;
	foreach(lc, written_ranges)
	{
		WrittenRange *w = lfirst(lc);

		if (w->log_relid == relid && w->lo <= hi && w->hi >= lo)
			return true;
	}
	return false;
}

/* Write out the buffered rows of relid (all subtransactions). */
void
columnar_flush_relation(Oid relid)
{
	WriteState *st;

	while ((st = write_states) != NULL)
	{
		for (; st; st = st->next)
			if (st->relid == relid)
				break;
		if (st == NULL)
			break;
		{
			Relation	rel = table_open(relid, NoLock);

			if (st->relfilenode == rel->rd_node.relNode)
				flush_state(rel, st);
			table_close(rel, NoLock);
		}
		free_state(st, true);
	}
}

/* Drop the buffered rows of relid (TRUNCATE, DROP). */
void
columnar_discard_relation(Oid relid)
{
	WriteState *st = write_states;

	while (st)
	{
		WriteState *next = st->next;

		if (st->relid == relid)
			free_state(st, true);
		st = next;
	}
}

static void
remember_written(WriteState *st)
{
	ListCell   *lc;
	WrittenTable *w;
	MemoryContext old;

	foreach(lc, written_tables)
		if (((WrittenTable *) lfirst(lc))->relid == st->relid)
			return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	w = palloc(sizeof(WrittenTable));
	w->relid = st->relid;
	w->opts = columnar_buffer_options(st->buf);
	written_tables = lappend(written_tables, w);
	MemoryContextSwitchTo(old);
}

/* Flush the states of the current subtransaction (or all of them). */
static void
flush_states(bool all)
{
	SubTransactionId sub = GetCurrentSubTransactionId();
	WriteState *st = write_states;

	while (st)
	{
		WriteState *next = st->next;

		if (all || st->subxid == sub)
		{
			Relation	rel = try_relation_open(st->relid, NoLock);

			if (rel && st->relfilenode == rel->rd_node.relNode)
			{
				if (columnar_buffer_rows(st->buf) > 0)
					remember_written(st);
				flush_state(rel, st);
			}
			free_state(st, true);
			if (rel)
				relation_close(rel, NoLock);
		}
		st = next;
	}
}

/* A subtransaction commits: what it wrote is its parent's now. */
static void
pass_written(SubTransactionId sub, SubTransactionId parent)
{
	List	   *mine = NIL;
	ListCell   *lc;

	foreach(lc, written_ranges)
		if (((WrittenRange *) lfirst(lc))->subxid == sub)
			mine = lappend(mine, lfirst(lc));
	foreach(lc, mine)
	{
		WrittenRange *w = lfirst(lc);

		written_ranges = list_delete_ptr(written_ranges, w);
		add_written(w->relid, w->log_relid, parent, w->lo, w->hi);
		pfree(w);
	}
	list_free(mine);
}

/* A subtransaction aborts: its rows are gone. */
static void
forget_written(SubTransactionId sub)
{
	ListCell   *lc;

	foreach(lc, written_ranges)
		if (((WrittenRange *) lfirst(lc))->subxid == sub)
		{
			pfree(lfirst(lc));
			written_ranges = foreach_delete_current(written_ranges, lc);
		}
}

/*
 * Before commit (or PREPARE), once the rows are flushed: one log row per
 * table written, in this transaction, so that it commits with them.
 */
static void
log_written(void)
{
	ListCell   *lc;

	foreach(lc, written_ranges)
	{
		WrittenRange *w = lfirst(lc);

		columnar_log_insert(w->log_relid, w->lo, w->hi);
	}
}

/*
 * At commit: let compaction look at the tables this transaction wrote to.
 * Not at PREPARE TRANSACTION: the compaction lock would stay held until
 * COMMIT PREPARED, however long that takes.
 */
static void
compact_written_tables(void)
{
	ListCell   *lc;

	foreach(lc, written_tables)
	{
		WrittenTable *w = lfirst(lc);

		columnar_compact_at_commit(w->relid, w->opts);
	}
}

static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (write_states)
				flush_states(true);
			log_written();
			compact_written_tables();
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (write_states)
				flush_states(true);
			log_written();
			break;
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			if (write_states)
				flush_states(true);
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* the memory went with TopTransactionContext */
			write_states = NULL;
			written_tables = NIL;
			written_ranges = NIL;
			columnar_pending_generation++;
			break;
	}
}

static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	WriteState *st;

	switch (event)
	{
		case SUBXACT_EVENT_PRE_COMMIT_SUB:
			if (write_states)
				flush_states(false);
			pass_written(mySubid, parentSubid);
			break;
		case SUBXACT_EVENT_ABORT_SUB:
			st = write_states;
			while (st)
			{
				WriteState *next = st->next;

				if (st->subxid == mySubid)
					free_state(st, false);
				st = next;
			}
			forget_written(mySubid);
			break;
		default:
			break;
	}
}

void
columnar_write_state_init(void)
{
	RegisterXactCallback(xact_callback, NULL);
	RegisterSubXactCallback(subxact_callback, NULL);
}
