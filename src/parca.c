/*
 * parca.c
 *		Entry point of the parca extension: module magic and settings.
 *
 * Each part of the extension that needs start-up work (settings, shared
 * memory) has an init function called from here; the background workers
 * are started by the launcher that workers_init() registers.
 */
#include "postgres.h"

#include <limits.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "parca.h"
#include "columnar/columnar.h"
#include "partitions.h"
#include "rollups.h"
#include "scrape/scrape.h"
#include "series_index.h"
#include "symbolize/symbolize.h"
#include "workers/workers.h"

PG_MODULE_MAGIC;

int			parca_max_profile_size = 64 * 1024 * 1024;

void		_PG_init(void);

void
_PG_init(void)
{
	DefineCustomIntVariable("parca.max_profile_size",
							"Largest profile accepted, in bytes after decompression.",
							"Larger profiles, and gzip data that would inflate past this, are refused.",
							&parca_max_profile_size,
							64 * 1024 * 1024,
							1024, INT_MAX,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);
	columnar_init();
	series_index_init();
	scrape_init();
	symbolize_init();
	partitions_init();
	rollups_init();
	workers_init();
	MarkGUCPrefixReserved("parca");
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

Datum
parca_settings_row(FunctionCallInfo fcinfo, const Datum *values)
{
	TupleDesc	desc;
	bool	   *nulls;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	desc = BlessTupleDesc(desc);
	nulls = palloc0(sizeof(bool) * desc->natts);
	return HeapTupleGetDatum(heap_form_tuple(desc, (Datum *) values, nulls));
}
