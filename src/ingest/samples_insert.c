/*
 * samples_insert.c
 *		Appending the sample rows of one profile to parca.samples.
 *
 * An INSERT ... SELECT FROM unnest(...) statement costs about as much in
 * executor work (a function scan materializing every row, projection,
 * per-row dispatch) as the table's access method spends storing the
 * rows.  So, like COPY FROM, rows are handed to the access method in
 * batches of slots, with the same privilege check, constraint checks and
 * index entries that an INSERT makes.  parca.samples is partitioned by
 * time, and all rows of a profile share its time: they go to the one
 * partition that holds it (the default partition if none does), found as
 * the executor's routing would.  What COPY does besides (triggers, rules,
 * row-level security) an extension-made parca.samples does not have; a
 * table someone has changed that way gets the INSERT statement, which
 * honours all of it.  (The executor's share was measured with
 * bench/ingest.sh, "warm".)
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "utils/array.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/timestamp.h"

#include "installation/citus.h"
#include "metastore/metastore.h"
#include "ingest/samples_insert.h"
#include "metastore/samples_table.h"

/*
 * Rows handed to the access method at once: enough for heap's
 * multi-insert to fill pages, few enough that making the slots is cheap.
 */
#define BATCH_ROWS 256

struct SamplesInsert
{
	TimestampTz time;
	int64		period;
	int64		duration;
	int64		nrows;
	bool		direct;

	/* straight to the access method */
	EState	   *estate;
	ResultRelInfo *rri;
	CommandId	cid;
	TupleTableSlot *slots[BATCH_ROWS];
	int			nslots;			/* filled in this batch */

	/* by statement: every row, inserted at the end */
	int			cap;
	Datum	   *series;
	Datum	   *stacks;
	Datum	   *values;
	Datum	   *num_labels;
	bool	   *num_nulls;
};

/*
 * Whether rel (the table, or the partitioned table) is still as the
 * extension made it.  The row-level security of the table an INSERT names
 * applies, that of a partition it routes to does not (the extension's
 * partitions have it, for readers who name them: sql/47_row_security.sql).
 * A Citus table's rows go to its shards, through Citus's executor
 * (docs/scale-out.md): on the coordinator it is an empty shell.
 */
static bool
is_plain(Relation rel, char relkind, bool named)
{
	return rel->rd_rel->relkind == relkind && rel->trigdesc == NULL &&
		rel->rd_rules == NULL &&
		(!named || check_enable_rls(RelationGetRelid(rel), InvalidOid, true) != RLS_ENABLED) &&
		(!named || !citus_table(RelationGetRelid(rel))) &&
		samples_table_has_layout(rel);
}

/*
 * The executor state an INSERT into parent would have, privileges
 * checked on parent, writing into rel (parent itself or its partition).
 */
static void
direct_begin(SamplesInsert *si, Relation parent, Relation rel)
{
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	List	   *range_table;

	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(parent);
	rte->relkind = parent->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	rte->requiredPerms = ACL_INSERT;
	for (int attno = 1; attno <= SAMPLES_NATTS; attno++)
		rte->insertedCols = bms_add_member(rte->insertedCols,
										   attno - FirstLowInvalidHeapAttributeNumber);
	ExecCheckRTPerms(list_make1(rte), true);
	if (rel != parent)
	{
		/* a partition is written as routing does: its own rights are not asked */
		rte = copyObject(rte);
		rte->relid = RelationGetRelid(rel);
		rte->relkind = rel->rd_rel->relkind;
		rte->requiredPerms = 0;
	}
	range_table = list_make1(rte);

	si->estate = CreateExecutorState();
	ExecInitRangeTable(si->estate, range_table);
	si->rri = makeNode(ResultRelInfo);
	ExecInitResultRelation(si->estate, si->rri, 1);
	CheckValidResultRel(si->rri, CMD_INSERT);
	ExecOpenIndices(si->rri, false);
	si->cid = GetCurrentCommandId(true);
	si->estate->es_output_cid = si->cid;
}

static void
direct_flush(SamplesInsert *si)
{
	EState	   *estate = si->estate;
	ResultRelInfo *rri = si->rri;
	Relation	rel = rri->ri_RelationDesc;

	if (si->nslots == 0)
		return;
	if (rel->rd_att->constr)
		for (int i = 0; i < si->nslots; i++)
			ExecConstraints(rri, si->slots[i], estate);
	table_multi_insert(rel, si->slots, si->nslots, si->cid, 0, NULL);
	if (rri->ri_NumIndices > 0)
		for (int i = 0; i < si->nslots; i++)
		{
			ExecInsertIndexTuples(rri, si->slots[i], estate, false, false, NULL, NIL);
			ResetPerTupleExprContext(estate);
		}
	si->nslots = 0;
}

static void
direct_add(SamplesInsert *si, int64 series_id, Datum stack, int64 value, Datum num_labels)
{
	TupleTableSlot *slot = si->slots[si->nslots];

	if (slot == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(si->estate->es_query_cxt);

		slot = table_slot_create(si->rri->ri_RelationDesc, &si->estate->es_tupleTable);
		si->slots[si->nslots] = slot;
		MemoryContextSwitchTo(old);
	}
	ExecClearTuple(slot);
	slot->tts_values[SAMPLES_ATT_TIME - 1] = TimestampTzGetDatum(si->time);
	slot->tts_values[SAMPLES_ATT_SERIES_ID - 1] = Int64GetDatum(series_id);
	slot->tts_values[SAMPLES_ATT_STACK - 1] = stack;
	slot->tts_values[SAMPLES_ATT_VALUE - 1] = Int64GetDatum(value);
	slot->tts_values[SAMPLES_ATT_PERIOD - 1] = Int64GetDatum(si->period);
	slot->tts_values[SAMPLES_ATT_DURATION - 1] = Int64GetDatum(si->duration);
	slot->tts_values[SAMPLES_ATT_NUM_LABELS - 1] = num_labels;
	memset(slot->tts_isnull, false, SAMPLES_NATTS * sizeof(bool));
	slot->tts_isnull[SAMPLES_ATT_NUM_LABELS - 1] = num_labels == (Datum) 0;
	ExecStoreVirtualTuple(slot);
	if (++si->nslots == BATCH_ROWS)
		direct_flush(si);
}

static void
direct_end(SamplesInsert *si)
{
	direct_flush(si);
	ExecResetTupleTable(si->estate->es_tupleTable, false);
	ExecCloseResultRelations(si->estate);
	ExecCloseRangeTableRelations(si->estate);
	FreeExecutorState(si->estate);
}

static void
statement_add(SamplesInsert *si, int64 series_id, Datum stack, int64 value, Datum num_labels)
{
	int			r = (int) si->nrows;

	if (r == si->cap)
	{
		si->cap *= 2;
		si->series = repalloc_huge(si->series, si->cap * sizeof(Datum));
		si->stacks = repalloc_huge(si->stacks, si->cap * sizeof(Datum));
		si->values = repalloc_huge(si->values, si->cap * sizeof(Datum));
		si->num_labels = repalloc_huge(si->num_labels, si->cap * sizeof(Datum));
		si->num_nulls = repalloc_huge(si->num_nulls, si->cap * sizeof(bool));
	}
	si->series[r] = Int64GetDatum(series_id);
	si->stacks[r] = stack;
	si->values[r] = Int64GetDatum(value);
	si->num_labels[r] = num_labels;
	si->num_nulls[r] = num_labels == (Datum) 0;
}

/* The INSERT, prepared once per backend (again if the type changes). */
static SPIPlanPtr insert_plan = NULL;
static Oid	insert_plan_stack_type = InvalidOid;

static SPIPlanPtr
statement_plan(void)
{
	Oid			stack_array = metastore_stacktrace_type(true);

	if (insert_plan == NULL || insert_plan_stack_type != stack_array)
	{
		Oid			argtypes[7] = {TIMESTAMPTZOID, INT8ARRAYOID, stack_array, INT8ARRAYOID,
		INT8OID, INT8OID, JSONBARRAYOID};
		SPIPlanPtr	plan;

		if (insert_plan)
			SPI_freeplan(insert_plan);
		insert_plan = NULL;
		plan = SPI_prepare("INSERT INTO parca.samples (" SAMPLES_COLUMN_LIST ") "
						   "SELECT $1, u.series_id, u.stack, u.value, $5, $6, u.num_labels "
						   "FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($7)) "
						   "AS u(series_id, stack, value, num_labels)",
						   7, argtypes);
		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "could not prepare the samples insert: %s",
				 SPI_result_code_string(SPI_result));
		insert_plan = plan;
		insert_plan_stack_type = stack_array;
	}
	return insert_plan;
}

static void
statement_end(SamplesInsert *si)
{
	int			dims[1] = {(int) si->nrows};
	int			lbs[1] = {1};
	Datum		args[7];
	int			rc;

	if (si->nrows == 0)
		return;
	args[0] = TimestampTzGetDatum(si->time);
	args[1] = PointerGetDatum(construct_md_array(si->series, NULL, 1, dims, lbs, INT8OID, 8,
												 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[2] = PointerGetDatum(construct_md_array(si->stacks, NULL, 1, dims, lbs,
												 metastore_stacktrace_type(false), -1,
												 false, TYPALIGN_INT));
	args[3] = PointerGetDatum(construct_md_array(si->values, NULL, 1, dims, lbs, INT8OID, 8,
												 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[4] = Int64GetDatum(si->period);
	args[5] = Int64GetDatum(si->duration);
	args[6] = PointerGetDatum(construct_md_array(si->num_labels, si->num_nulls, 1, dims, lbs,
												 JSONBOID, -1, false, TYPALIGN_INT));
	rc = SPI_execute_plan(statement_plan(), args, NULL, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "inserting samples failed: %s", SPI_result_code_string(rc));
}

SamplesInsert *
samples_insert_begin(TimestampTz time, int64 period, int64 duration)
{
	SamplesInsert *si = palloc0(sizeof(SamplesInsert));
	Relation	rel = table_open(samples_table_relid(), RowExclusiveLock);
	Relation	target = rel;

	si->time = time;
	si->period = period;
	si->duration = duration;
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		bool		routable;
		Oid			partition = samples_table_partition_for(rel, time, &routable);

		if (OidIsValid(partition) && is_plain(rel, RELKIND_PARTITIONED_TABLE, true))
		{
			target = table_open(partition, RowExclusiveLock);
			si->direct = is_plain(target, RELKIND_RELATION, false);
		}
	}
	else
		si->direct = is_plain(rel, RELKIND_RELATION, true);
	if (si->direct)
		direct_begin(si, rel, target);
	else
	{
		si->cap = 1024;
		si->series = palloc(si->cap * sizeof(Datum));
		si->stacks = palloc(si->cap * sizeof(Datum));
		si->values = palloc(si->cap * sizeof(Datum));
		si->num_labels = palloc(si->cap * sizeof(Datum));
		si->num_nulls = palloc(si->cap * sizeof(bool));
	}
	if (target != rel)
		table_close(target, NoLock);
	table_close(rel, NoLock);
	return si;
}

void
samples_insert_add(SamplesInsert *si, int64 series_id, Datum stack, int64 value,
				   Datum num_labels)
{
	if (si->direct)
		direct_add(si, series_id, stack, value, num_labels);
	else
		statement_add(si, series_id, stack, value, num_labels);
	si->nrows++;
}

int64
samples_insert_end(SamplesInsert *si)
{
	int64		nrows = si->nrows;

	if (si->direct)
		direct_end(si);
	else
		statement_end(si);
	pfree(si);
	return nrows;
}
