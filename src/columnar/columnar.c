/*
 * columnar.c
 *		Start-up of the parca_columnar access method: settings, transaction
 *		callbacks, the custom scan, and the clean-up of dropped tables.
 */
#include "postgres.h"

#include <limits.h>

#include "access/relation.h"
#include "access/table.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "storage/bufmgr.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "columnar/columnar_internal.h"

int			columnar_stripe_rows = 1000000;
int			columnar_chunk_group_rows = 10000;
int			columnar_compression_level = 3;
int			columnar_write_memory_kb = 256 * 1024;
int			columnar_inline_stripe_bytes = 256 * 1024;
int			columnar_scan_cache_kb = 32 * 1024;
bool		columnar_enable_custom_scan = true;
bool		columnar_enable_aggregate = true;

static object_access_hook_type prev_object_access_hook;

/* DROP TABLE: forget the stripes and the options of a columnar table. */
static void
columnar_object_access(ObjectAccessType access, Oid classId, Oid objectId,
					   int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access == OAT_DROP && classId == RelationRelationId && subId == 0)
	{
		Relation	rel = try_relation_open(objectId, AccessExclusiveLock);

		if (rel == NULL)
			return;
		if (rel->rd_rel->relkind == RELKIND_RELATION && columnar_is_columnar(rel))
		{
			columnar_discard_relation(objectId);
			if (RelationGetNumberOfBlocks(rel) > 0)
				columnar_delete_storage(objectId, columnar_read_storage_id(rel));
			columnar_delete_options(objectId);
		}
		relation_close(rel, NoLock);
	}
}

void
columnar_init(void)
{
	DefineCustomIntVariable("parca.columnar_stripe_rows",
							"Rows per stripe of parca_columnar tables.",
							"Per table: parca_columnar_set_options().",
							&columnar_stripe_rows, 1000000, 1000, 100000000,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.columnar_chunk_group_rows",
							"Rows per chunk group (the unit of min/max skipping).",
							NULL,
							&columnar_chunk_group_rows, 10000, 100, 1000000,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.columnar_compression_level",
							"zstd level of parca_columnar chunks (0: none).",
							NULL,
							&columnar_compression_level, 3, 0, 19,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.columnar_write_memory",
							"Memory a backend may use to buffer rows for one columnar table.",
							"A buffer that grows past it is written out as a stripe.",
							&columnar_write_memory_kb, 256 * 1024, 1024, INT_MAX / 1024,
							PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.columnar_inline_stripe_bytes",
							"Stripes smaller than this are kept inline in parca.columnar_stripes until compaction merges them.",
							NULL,
							&columnar_inline_stripe_bytes, 256 * 1024, 0, 64 * 1024 * 1024,
							PGC_USERSET, GUC_UNIT_BYTE, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.columnar_scan_cache",
							"Memory a backend keeps from one columnar scan to the next.",
							"Buffers of chunk bytes, dictionaries and chunk groups that scans gave back; 0 keeps none.",
							&columnar_scan_cache_kb, 32 * 1024, 0, INT_MAX / 1024,
							PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomBoolVariable("parca.columnar_enable_custom_scan",
							 "Use the Columnar Scan node (column projection, chunk skipping).",
							 NULL,
							 &columnar_enable_custom_scan, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("parca.columnar_enable_aggregate",
							 "Use the Columnar Aggregate node (GROUP BY inside the scan).",
							 NULL,
							 &columnar_enable_aggregate, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	columnar_write_state_init();
	columnar_dictionary_init();
	columnar_customscan_init();
	columnar_agg_init();
	prev_object_access_hook = object_access_hook;
	object_access_hook = columnar_object_access;
}
