/*
 * citus.c
 *		Whether a table is distributed by Citus, and what follows for the
 *		roles parca's workers write as (docs/scale-out.md).
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
#include "catalog/pg_authid.h"
#include "catalog/pg_namespace.h"
#include "commands/extension.h"
#include "fmgr.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "installation/citus.h"

/* pg_dist_partition's first column, logicalrelid; pg_dist_local_group's, groupid */
#define Anum_dist_partition_logicalrelid 1
#define Anum_dist_local_group_groupid 1

/*
 * The answers, cached: the series index's trigger and every parca_query
 * ask, and each look-up opens Citus's catalogs.  Any relcache
 * invalidation clears them all.  That covers every change an answer
 * depends on: Citus invalidates a table's relcache entry when its row in
 * pg_dist_partition comes or goes, and pg_dist_local_group's when this
 * node's group changes; CREATE (DROP) EXTENSION citus makes (drops) its
 * catalogs, whose rows in pg_class invalidate them.  Invalidations are
 * rare next to the questions, so clearing all costs nothing that
 * matters.  A few tables are asked about (parca.samples, its rollups):
 * past CACHED_TABLES the oldest answer makes room.
 */
#define CACHED_TABLES 8

typedef struct CitusCache
{
	bool		callback_registered;
	bool		node_known;		/* is worker_node valid? */
	bool		worker_node;
	int			ntables;		/* valid entries in tables/distributed */
	int			next;			/* the entry to replace when full */
	Oid			tables[CACHED_TABLES];
	bool		distributed[CACHED_TABLES];
} CitusCache;

static CitusCache cache;

static void
invalidate_cache(Datum arg, Oid relid)
{
	cache.node_known = false;
	cache.ntables = 0;
	cache.next = 0;
}

static void
use_cache(void)
{
	if (!cache.callback_registered)
	{
		CacheRegisterRelcacheCallback(invalidate_cache, (Datum) 0);
		cache.callback_registered = true;
	}
}

static bool
lookup_citus_table(Oid relid)
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
citus_table(Oid relid)
{
	bool		distributed;
	int			slot;

	use_cache();
	for (int i = 0; i < cache.ntables; i++)
		if (cache.tables[i] == relid)
			return cache.distributed[i];

	/*
	 * (the look-up takes locks, which may process invalidations and clear
	 * the cache: the answer is stored after it)
	 */
	distributed = lookup_citus_table(relid);
	if (cache.ntables < CACHED_TABLES)
		slot = cache.ntables++;
	else
	{
		slot = cache.next;
		cache.next = (cache.next + 1) % CACHED_TABLES;
	}
	cache.tables[slot] = relid;
	cache.distributed[slot] = distributed;
	return distributed;
}

static bool
lookup_worker_node(void)
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

bool
citus_worker_node(void)
{
	bool		worker;

	use_cache();
	if (cache.node_known)
		return cache.worker_node;
	worker = lookup_worker_node();
	cache.worker_node = worker;
	cache.node_known = true;
	return worker;
}

/*
 * Unless the role was let log in (with the cluster's authentication
 * between nodes for it), the worker stays its session's user, the
 * bootstrap superuser, as Citus's own connections are.
 */
bool
citus_refuses_role(Oid relid, Oid role)
{
	HeapTuple	tup;
	bool		can_login;

	if (!OidIsValid(relid) || !citus_table(relid))
		return false;
	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(role));
	if (!HeapTupleIsValid(tup))
		return false;
	can_login = ((Form_pg_authid) GETSTRUCT(tup))->rolcanlogin;
	ReleaseSysCache(tup);
	return !can_login;
}

PG_FUNCTION_INFO_V1(parca_is_citus_table);

/* parca.is_citus_table(tbl regclass) RETURNS boolean */
Datum
parca_is_citus_table(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(citus_table(PG_GETARG_OID(0)));
}
