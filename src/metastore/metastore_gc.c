/*
 * metastore_gc.c
 *		What the metastore's garbage collection (parca_metastore_gc(),
 *		sql/45_metastore_gc.sql) needs from C: the ids a partition of
 *		parca.samples refers to, and the invalidation of every backend's
 *		metastore cache.
 *
 * A partition's references are read from its stripes: only the series_id
 * and stack columns are decoded, a stripe's stacks are taken from its
 * dictionary, not from its rows, and the locations of a stack seen in an
 * earlier stripe or partition are not looked at again.  The collection
 * keeps each partition's references with its content version
 * (columnar_content_version), so a partition is read again only when rows
 * came to it: its cost follows the rows that arrived since the last
 * collection, not all the rows kept.
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "catalog/namespace.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "installation/citus.h"
#include "columnar/columnar.h"
#include "metastore/samples_table.h"
#include "types/keyed_table.h"

PG_FUNCTION_INFO_V1(parca_partition_references);
PG_FUNCTION_INFO_V1(parca_partition_content_version);
PG_FUNCTION_INFO_V1(parca_metastore_invalidate);

/* A stack already read, by a hash of its bytes: a stack's locations are added once. */
typedef struct SeenStack
{
	uint64		hash;			/* hash key */
	const char *bytes;			/* NULL: two stacks share the hash; never skip */
	Size		len;
} SeenStack;

typedef struct References
{
	HTAB	   *series;
	HTAB	   *locations;
	HTAB	   *stacks;
} References;

static void
add_stack(References *refs, const char *stack)
{
	const struct varlena *v = (const struct varlena *) stack;
	const char *ids = VARDATA_ANY(v);
	Size		len = VARSIZE_ANY_EXHDR(v);
	int			n = (int) (len / sizeof(uint64));
	uint64		hash = DatumGetUInt64(hash_any_extended((const unsigned char *) ids, (int) len, 0));
	bool		found;
	SeenStack  *seen = hash_search(refs->stacks, &hash, HASH_ENTER, &found);

	if (found)
	{
		if (seen->bytes != NULL && seen->len == len && memcmp(seen->bytes, ids, len) == 0)
			return;
		seen->bytes = NULL;
	}
	else
	{
		seen->bytes = memcpy(palloc(Max(len, 1)), ids, len);
		seen->len = len;
	}
	for (int i = 0; i < n; i++)
	{
		int64		id;

		memcpy(&id, ids + i * sizeof(uint64), sizeof(int64));
		(void) hash_search(refs->locations, &id, HASH_ENTER, NULL);
	}
}

static void
emit(ReturnSetInfo *rsinfo, HTAB *ids, char kind)
{
	HASH_SEQ_STATUS seq;
	int64	   *id;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	values[0] = CharGetDatum(kind);
	hash_seq_init(&seq, ids);
	while ((id = hash_seq_search(&seq)) != NULL)
	{
		values[1] = Int64GetDatum(*id);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * relid opened for reading, if it exists, the user may read it and it is a
 * parca_columnar table; NULL if it does not exist and missing_ok.  Closed
 * keeping its lock until the transaction ends, as a scan's table.
 */
static Relation
open_columnar_table(Oid relid, bool missing_ok)
{
	Relation	rel = try_table_open(relid, AccessShareLock);

	if (rel == NULL && missing_ok)
		return NULL;
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));
	if (!columnar_is_columnar(rel))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a parca_columnar table",
						RelationGetRelationName(rel))));
	/* its rows are in shards on other nodes: read here, it refers to nothing */
	if (citus_table(relid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the references of \"%s\" are in its Citus shards, which are not read yet",
						RelationGetRelationName(rel)),
				 errhint("parca_metastore_gc() finds the references of a Citus table through Citus (docs/scale-out.md).")));
	return rel;
}

/*
 * Adds the references of the rows of relid, a parca_columnar table.  One
 * dropped since the caller listed it (a rollup partition that retention
 * dropped) refers to nothing any more.
 */
static void
read_references(References *refs, Oid relid)
{
	Relation	rel = open_columnar_table(relid, true);
	AttrNumber	series_att;
	AttrNumber	stack_att;
	ColumnarReadState *rs;
	ColumnarGroup g;
	int			dict_stripe = -1;

	if (rel == NULL)
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	series_att = samples_table_find_column(rel, SAMPLES_ATT_SERIES_ID);
	stack_att = samples_table_find_column(rel, SAMPLES_ATT_STACK);
	SPI_finish();
	if (series_att == InvalidAttrNumber || stack_att == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" does not have the columns of parca.samples",
						RelationGetRelationName(rel))));

	rs = columnar_read_begin(rel, GetActiveSnapshot(),
							 bms_add_member(bms_make_singleton(series_att), stack_att), NIL);
	while (columnar_read_next_group(rs, &g))
	{
		const Datum *sid = g.values[series_att - 1];
		const bool *sid_null = g.nulls[series_att - 1];
		const Datum *stack = g.values[stack_att - 1];
		const bool *stack_null = g.nulls[stack_att - 1];
		int64		last = 0;
		bool		have_last = false;

		CHECK_FOR_INTERRUPTS();
		for (int r = 0; r < g.nrows; r++)
			if (!sid_null[r] && (!have_last || DatumGetInt64(sid[r]) != last))
			{
				last = DatumGetInt64(sid[r]);
				have_last = true;
				(void) hash_search(refs->series, &last, HASH_ENTER, NULL);
			}
		if (g.dict_index[stack_att - 1] != NULL)
		{
			/* the stripe's distinct stacks, once per stripe */
			if (g.stripe != dict_stripe)
			{
				for (int e = 0; e < g.dict_sizes[stack_att - 1]; e++)
					add_stack(refs, g.dicts[stack_att - 1][e]);
				dict_stripe = g.stripe;
			}
		}
		else
			for (int r = 0; r < g.nrows; r++)
				if (!stack_null[r])
					add_stack(refs, DatumGetPointer(stack[r]));
	}
	columnar_read_end(rs);
	table_close(rel, NoLock);
}

/*
 * (kind, id): the series ('s') and locations ('l') that the rows of the
 * given parca_columnar tables (with the columns of parca.samples) refer
 * to, each once.
 */
Datum
parca_partition_references(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ArrayType  *partitions = PG_GETARG_ARRAYTYPE_P(0);
	Datum	   *relids;
	bool	   *nulls;
	int			n;
	References	refs;

	InitMaterializedSRF(fcinfo, 0);
	if (ARR_ELEMTYPE(partitions) != REGCLASSOID)
		elog(ERROR, "expected an array of regclass");
	deconstruct_array(partitions, REGCLASSOID, sizeof(Oid), true, TYPALIGN_INT,
					  &relids, &nulls, &n);
	refs.series = keyed_table_create("parca series references", 4096, sizeof(uint64),
									 sizeof(int64), CurrentMemoryContext);
	refs.locations = keyed_table_create("parca location references", 4096, sizeof(uint64),
										sizeof(int64), CurrentMemoryContext);
	refs.stacks = keyed_table_create("parca stacks read", 4096, sizeof(uint64),
									 sizeof(SeenStack), CurrentMemoryContext);
	for (int i = 0; i < n; i++)
		if (!nulls[i])
			read_references(&refs, DatumGetObjectId(relids[i]));
	emit(rsinfo, refs.series, 's');
	emit(rsinfo, refs.locations, 'l');
	return (Datum) 0;
}

/*
 * "storage/next row" of a parca_columnar table: changes whenever rows are
 * added to it or it is truncated (columnar_content_version).
 */
Datum
parca_partition_content_version(PG_FUNCTION_ARGS)
{
	Relation	rel = open_columnar_table(PG_GETARG_OID(0), false);
	int64		storage_id;
	int64		next_row;

	columnar_content_version(rel, &storage_id, &next_row);
	table_close(rel, NoLock);
	PG_RETURN_TEXT_P(cstring_to_text(psprintf(INT64_FORMAT "/" INT64_FORMAT,
											  storage_id, next_row)));
}

/*
 * Makes every backend empty its metastore cache (metastore.c) when this
 * transaction commits, as a TRUNCATE of the metastore would: ids the
 * collection removed must be registered again before they are used.
 */
Datum
parca_metastore_invalidate(PG_FUNCTION_ARGS)
{
	static const char *const tables[] = {"series", "locations", "functions", "mappings"};
	Oid			nsp = get_namespace_oid("parca", false);

	for (int i = 0; i < lengthof(tables); i++)
	{
		Oid			relid = get_relname_relid(tables[i], nsp);

		if (OidIsValid(relid))
			CacheInvalidateRelcacheByRelid(relid);
	}
	PG_RETURN_VOID();
}
