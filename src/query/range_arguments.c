/*
 * range_arguments.c
 *		parca.range_arguments(): the checks of parca_query_range's and
 *		parca_function_range's arguments (SQL functions, sql/70_query.sql and
 *		sql/72_views.sql), made before anything runs, so that a bad step or
 *		sum_by is an error that names it rather than one from deep inside.
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "types/labels.h"
#include "query/selector.h"

PG_FUNCTION_INFO_V1(parca_range_arguments);

/*
 * parca.range_arguments(step interval, sum_by text[]) RETURNS text[]
 * sum_by, or an error: step is positive and has no months or years (time
 * buckets are date_bin's, of fixed length); sum_by holds at most
 * SELECTOR_MAX_LABEL_NAMES label names (NULLs are left out, as the sums
 * leave them out).  NULL arguments pass: a NULL step gives no buckets.
 * (parca_query_range, inlined, reads sum_by from here: an argument it
 * named several times would be copied as many times.)
 */
Datum
parca_range_arguments(PG_FUNCTION_ARGS)
{
	if (!PG_ARGISNULL(0))
	{
		Interval   *step = PG_GETARG_INTERVAL_P(0);

		if (step->month != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("step must not contain months or years"),
					 errhint("Give a step of days, hours, minutes or seconds, such as interval '30 days'.")));
		if (step->day < 0 || step->time < 0 ||
			(int128) step->day * USECS_PER_DAY + step->time <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("step must be positive"),
					 errhint("Give a step such as interval '1 minute'.")));
	}
	if (!PG_ARGISNULL(1))
		(void) label_names_from_array(PG_GETARG_ARRAYTYPE_P(1), SELECTOR_MAX_LABEL_NAMES, "sum_by");
	if (PG_ARGISNULL(1))
		PG_RETURN_NULL();
	PG_RETURN_DATUM(PG_GETARG_DATUM(1));
}
