/*
 * columnar_admin.c
 *		The SQL functions that change a parca_columnar table outside the
 *		table access method: parca_columnar_compact() (of a table, or of
 *		each parca_columnar partition), parca.columnar_delete_all_rows();
 *		and opening the tables such functions are given.
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "columnar/columnar_internal.h"

PG_FUNCTION_INFO_V1(parca_columnar_compact);
PG_FUNCTION_INFO_V1(parca_columnar_delete_all_rows);

Relation
columnar_open_table(Oid relid, LOCKMODE lockmode)
{
	Relation	rel = try_table_open(relid, lockmode);

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (!columnar_is_columnar(rel))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a parca_columnar table", RelationGetRelationName(rel))));
	return rel;
}

List *
columnar_tables_of(Oid relid, LOCKMODE lockmode)
{
	List	   *tables = NIL;
	ListCell   *lc;

	if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
		return list_make1_oid(relid);
	foreach(lc, find_all_inheritors(relid, lockmode, NULL))
	{
		Oid			part = lfirst_oid(lc);
		Relation	rel;

		/* the table itself, and partitioned partitions, hold no rows */
		if (get_rel_relkind(part) == RELKIND_PARTITIONED_TABLE)
			continue;
		rel = try_table_open(part, NoLock);
		if (rel == NULL)
			continue;
		if (columnar_is_columnar(rel))
			tables = lappend_oid(tables, part);
		else
			ereport(NOTICE,
					(errmsg("partition \"%s\" of \"%s\" is not a parca_columnar table: skipped",
							RelationGetRelationName(rel), get_rel_name(relid))));
		table_close(rel, NoLock);
	}
	return tables;
}

/* Whoever may VACUUM the table may compact it: its owner, the database's. */
static bool
may_compact(Oid relid)
{
	return pg_class_ownercheck(relid, GetUserId()) ||
		pg_database_ownercheck(MyDatabaseId, GetUserId());
}

/*
 * parca_columnar_compact(regclass): merge small stripes now, of the table
 * or of each parca_columnar partition of a partitioned table, as VACUUM of
 * it would: rights checked before the lock is taken, a partition the user
 * may not compact skipped with a WARNING.  Returns the stripes merged.
 */
Datum
parca_columnar_compact(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	int64		merged = 0;
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "parca_columnar_compact",
											  ALLOCSET_DEFAULT_SIZES);
	ListCell   *lc;

	PreventCommandDuringRecovery("parca_columnar_compact()");
	if (!may_compact(relid))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
	foreach(lc, columnar_tables_of(relid, RowExclusiveLock))
	{
		Oid			part = lfirst_oid(lc);
		MemoryContext old;
		Relation	rel;

		CHECK_FOR_INTERRUPTS();
		if (!may_compact(part))
		{
			ereport(WARNING,
					(errmsg("skipping \"%s\": only its owner or the database's owner may compact it",
							get_rel_name(part))));
			continue;
		}
		old = MemoryContextSwitchTo(cxt);
		rel = columnar_open_table(part, RowExclusiveLock);
		columnar_refresh_free_space(rel);
		/* not as VACUUM: this lock lets CREATE INDEX CONCURRENTLY run meanwhile */
		merged += columnar_compact(rel, true, false);
		table_close(rel, NoLock);
		MemoryContextSwitchTo(old);
		MemoryContextReset(cxt);
	}
	MemoryContextDelete(cxt);
	PG_RETURN_INT64(merged);
}

/*
 * parca.columnar_delete_all_rows(regclass): every row of a parca_columnar
 * table deleted, MVCC-safe (columnar_delete_all_rows), by its owner;
 * writers wait from here to the end of the transaction, readers do not.
 * Returns the rows deleted.
 */
Datum
parca_columnar_delete_all_rows(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Relation	rel;
	int64		rows;

	PreventCommandDuringRecovery("parca.columnar_delete_all_rows()");
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
	rel = columnar_open_table(relid, ExclusiveLock);
	rows = columnar_delete_all_rows(rel);
	table_close(rel, NoLock);
	PG_RETURN_INT64(rows);
}
