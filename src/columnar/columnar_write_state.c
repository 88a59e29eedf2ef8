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
#include "utils/memutils.h"

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
	struct WriteState *next;
} WriteState;

static WriteState *write_states;	/* in TopTransactionContext */

/* A table this transaction wrote stripes to: its commit may compact it. */
typedef struct WrittenTable
{
	Oid			relid;
	ColumnarOptions opts;
} WrittenTable;

static List *written_tables;	/* in TopTransactionContext */

/* Bumped whenever buffered rows change, so readers know to look again. */
uint64		columnar_pending_generation;

static WriteState *
create_state(Relation rel)
{
	WriteState *st = MemoryContextAllocZero(TopTransactionContext, sizeof(WriteState));

	st->relid = RelationGetRelid(rel);
	st->relfilenode = rel->rd_node.relNode;
	st->subxid = GetCurrentSubTransactionId();
	st->buf = columnar_buffer_create(rel, TopTransactionContext);
	st->reserve_size = 128;
	st->next = write_states;
	write_states = st;
	columnar_pending_generation++;
	return st;
}

static void
free_state(WriteState *st)
{
	WriteState **p;

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
		free_state(st);
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
		free_state(st);
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
			free_state(st);
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
			free_state(st);
			if (rel)
				relation_close(rel, NoLock);
		}
		st = next;
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
			compact_written_tables();
			break;
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
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
			break;
		case SUBXACT_EVENT_ABORT_SUB:
			st = write_states;
			while (st)
			{
				WriteState *next = st->next;

				if (st->subxid == mySubid)
					free_state(st);
				st = next;
			}
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
