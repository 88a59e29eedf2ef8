/*
 * settings_row.c
 *		The row a maintenance settings function returns; see
 *		maintenance_internal.h.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "funcapi.h"

#include "maintenance/maintenance_internal.h"

Datum
settings_row(FunctionCallInfo fcinfo, const Datum *values)
{
	TupleDesc	desc;
	bool	   *nulls;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	desc = BlessTupleDesc(desc);
	nulls = palloc0(sizeof(bool) * desc->natts);
	return HeapTupleGetDatum(heap_form_tuple(desc, (Datum *) values, nulls));
}
