/*
 * citus.c
 *		Whether a table is distributed by Citus (docs/scale-out.md).
 *
 * A Citus table's rows are in shards (tables of their own on the worker
 * nodes); on the coordinator the table itself is an empty shell.  Code
 * that reads a table's storage directly (the direct columnar merge,
 * src/query/merge_scan.c) would find nothing there, in silence, so it
 * asks here first and reads such a table through SQL instead, which
 * Citus distributes.  Citus lists its tables in pg_dist_partition; it is
 * looked up by name, so that nothing here depends on Citus being
 * installed.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "commands/extension.h"
#include "fmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "installation/citus.h"

/* pg_dist_partition's first column, logicalrelid; pg_dist_local_group's, groupid */
#define Anum_dist_partition_logicalrelid 1
#define Anum_dist_local_group_groupid 1

bool
citus_table(Oid relid)
{
	Oid			catalog;
	Oid			index;
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	bool		found;

	if (!OidIsValid(get_extension_oid("citus", true)))
		return false;
	catalog = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
	index = get_relname_relid("pg_dist_partition_logical_relid_index", PG_CATALOG_NAMESPACE);
	if (!OidIsValid(catalog) || !OidIsValid(index))
		return false;
	rel = table_open(catalog, AccessShareLock);
	ScanKeyInit(&key, Anum_dist_partition_logicalrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, index, true, NULL, 1, &key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

bool
citus_worker_node(void)
{
	Oid			catalog;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		worker = false;

	if (!OidIsValid(get_extension_oid("citus", true)))
		return false;
	catalog = get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE);
	if (!OidIsValid(catalog))
		return false;
	rel = table_open(catalog, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		group = heap_getattr(tup, Anum_dist_local_group_groupid,
										 RelationGetDescr(rel), &isnull);

		/* the coordinator is group 0 */
		worker = !isnull && DatumGetInt32(group) != 0;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return worker;
}

PG_FUNCTION_INFO_V1(parca_is_citus_table);

/* parca.is_citus_table(tbl regclass) RETURNS boolean */
Datum
parca_is_citus_table(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(citus_table(PG_GETARG_OID(0)));
}
