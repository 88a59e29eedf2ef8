/*
 * extension_version.c
 *		Does the database's extension match this library, and where is it?
 *		See extension_version.h.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "installation/extension_version.h"

/*
 * Once the versions matched they stay matched for this backend: the
 * library cannot change under it, and ALTER EXTENSION UPDATE only moves
 * the SQL towards the library's version.
 */
static bool version_matched = false;

void
extension_version_check(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *installed = NULL;

	if (version_matched)
		return;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("parca"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		v = heap_getattr(tuple, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			installed = text_to_cstring(DatumGetTextPP(v));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	/* Not installed: the caller's own checks say what is missing. */
	if (installed == NULL || strcmp(installed, PARCA_EXTVERSION) == 0)
	{
		version_matched = installed != NULL;
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("extension \"parca\" is at version %s in this database, but its library is version %s",
					installed, PARCA_EXTVERSION),
			 errhint("Run ALTER EXTENSION parca UPDATE.")));
}

char *
parca_extension_schema(void)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			schema = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("parca"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		schema = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return OidIsValid(schema) ? get_namespace_name(schema) : NULL;
}
