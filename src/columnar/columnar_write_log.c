/*
 * columnar_write_log.c
 *		Reading the write log: whether rows were written into a table at
 *		given times since a reader of parca.columnar_write_log last took
 *		their entries away.
 *
 * A table with a log_by column logs, per writing transaction, the range
 * of that column over the rows it wrote (columnar_write_state.c).  The
 * rollups consume the entries of parca.samples (sql/46_rollups.sql); a
 * query asks here whether a rolled-up period has entries left, that is
 * whether rows were written into it since it was rolled up, as its
 * snapshot sees them, its own transaction's rows included.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "columnar/columnar_internal.h"

bool
columnar_written(Oid relid, TimestampTz lo, TimestampTz hi)
{
	Snapshot	snapshot = ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();

	if (lo > hi)
		return false;
	return columnar_pending_written(relid, lo, hi) ||
		columnar_log_meets(relid, lo, hi, snapshot);
}

PG_FUNCTION_INFO_V1(parca_columnar_written);

/*
 * parca_columnar_written(tbl regclass, lo timestamptz, hi timestamptz) -> boolean
 *
 * Whether parca.columnar_write_log holds a write into tbl (a table with a
 * log_by column, or the partitioned table at the top of such tables)
 * whose log_by values meet [lo, hi], or this transaction wrote such rows.
 * The caller needs SELECT on tbl, and is refused where row-level security
 * applies to it: the log tells the times of every row written.
 */
Datum
parca_columnar_written(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	AclResult	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);

	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, get_rel_name(relid));
	if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot read the write log of \"%s\": row-level security applies to it",
						get_rel_name(relid))));
	PG_RETURN_BOOL(columnar_written(relid, PG_GETARG_TIMESTAMPTZ(1), PG_GETARG_TIMESTAMPTZ(2)));
}
