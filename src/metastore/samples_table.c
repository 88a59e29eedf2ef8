/*
 * samples_table.c
 *		The columns of parca.samples, checked against the catalog.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "partitioning/partdesc.h"
#include "catalog/pg_type.h"
#include "partitioning/partbounds.h"
#include "rewrite/rowsecurity.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rls.h"
#include "utils/timestamp.h"

#include "metastore/metastore.h"
#include "metastore/samples_table.h"

static const char *const column_names[SAMPLES_NATTS] = {
	"time", "series_id", "stack", "value", "period", "duration", "num_labels"
};

/* The type of the column at attno in the table as made. */
static Oid
column_type(AttrNumber attno)
{
	switch (attno)
	{
		case SAMPLES_ATT_TIME:
			return TIMESTAMPTZOID;
		case SAMPLES_ATT_STACK:
			return metastore_stacktrace_type(false);
		case SAMPLES_ATT_NUM_LABELS:
			return JSONBOID;
		default:
			return INT8OID;
	}
}

Oid
samples_table_relid(void)
{
	Oid			relid = get_relname_relid("samples", get_namespace_oid("parca", false));

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table parca.samples does not exist"),
				 errhint("Drop and create extension parca again.")));
	return relid;
}

bool
samples_table_rls_hides_rows(Relation rel)
{
	RowSecurityPolicy *policy;

	if (check_enable_rls(RelationGetRelid(rel), InvalidOid, true) != RLS_ENABLED)
		return false;
	if (rel->rd_rsdesc == NULL || list_length(rel->rd_rsdesc->policies) != 1)
		return true;
	policy = linitial(rel->rd_rsdesc->policies);
	return strcmp(policy->policy_name, SAMPLES_UNRESTRICTED_POLICY) != 0 || !policy->permissive ||
		check_enable_rls(samples_table_relid(), InvalidOid, true) == RLS_ENABLED;
}

/* Whether attribute a of rel is the column at attno in the table as made. */
static bool
is_column(Form_pg_attribute a, AttrNumber attno)
{
	return !a->attisdropped && a->atttypid == column_type(attno) &&
		strcmp(NameStr(a->attname), column_names[attno - 1]) == 0;
}

bool
samples_table_has_layout(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (desc->natts != SAMPLES_NATTS)
		return false;
	for (AttrNumber attno = 1; attno <= SAMPLES_NATTS; attno++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, attno - 1);

		if (a->attgenerated || !is_column(a, attno))
			return false;
	}
	return true;
}

AttrNumber
samples_table_find_column(Relation rel, AttrNumber attno)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
		if (is_column(TupleDescAttr(desc, i), attno))
			return TupleDescAttr(desc, i)->attnum;
	return InvalidAttrNumber;
}

/*
 * The range partitioning of parent on its time column, or NULL if parent
 * is partitioned some other way (then only the executor can route).
 */
static PartitionBoundInfo
time_ranges(Relation parent, PartitionDesc *pd)
{
	PartitionKey key = RelationGetPartitionKey(parent);

	if (key == NULL || key->strategy != PARTITION_STRATEGY_RANGE || key->partnatts != 1 ||
		key->partattrs[0] != samples_table_find_column(parent, SAMPLES_ATT_TIME))
		return NULL;
	*pd = RelationGetPartitionDesc(parent, true);
	return (*pd)->boundinfo;
}

Oid
samples_table_partition_for(Relation parent, TimestampTz t, bool *routable)
{
	PartitionKey key = RelationGetPartitionKey(parent);
	PartitionDesc pd;
	PartitionBoundInfo bi = time_ranges(parent, &pd);
	Datum		value = TimestampTzGetDatum(t);
	bool		equal;
	int			index = -1;

	*routable = bi != NULL;
	if (bi == NULL)
		return InvalidOid;
	if (bi->ndatums > 0)
		index = bi->indexes[partition_range_datum_bsearch(key->partsupfunc, key->partcollation,
														  bi, 1, &value, &equal) + 1];
	if (index < 0)
		index = bi->default_index;
	return index < 0 ? InvalidOid : pd->oids[index];
}

/* The bound at offset i of a range partitioning on a timestamptz. */
static TimestampTz
bound_time(PartitionBoundInfo bi, int i)
{
	switch (bi->kind[i][0])
	{
		case PARTITION_RANGE_DATUM_MINVALUE:
			return DT_NOBEGIN;
		case PARTITION_RANGE_DATUM_MAXVALUE:
			return DT_NOEND;
		default:
			return DatumGetTimestampTz(bi->datums[i][0]);
	}
}

List *
samples_table_partitions_between(Relation parent, TimestampTz start, TimestampTz stop,
								 bool *routable)
{
	PartitionDesc pd;
	PartitionBoundInfo bi = time_ranges(parent, &pd);
	List	   *oids = NIL;

	*routable = bi != NULL;
	if (bi == NULL)
		return NIL;
	/* the partition at indexes[i] holds [datums[i - 1], datums[i]) */
	for (int i = 1; i < bi->ndatums; i++)
	{
		int			index = bi->indexes[i];

		if (index >= 0 && bound_time(bi, i - 1) <= stop && bound_time(bi, i) > start)
			oids = lappend_oid(oids, pd->oids[index]);
	}
	if (bi->default_index >= 0)
		oids = lappend_oid(oids, pd->oids[bi->default_index]);
	return oids;
}
