/*
 * discovery.c
 *		parca_series_ids(): the series a selector matches.
 *
 * This is the one entry point that SQL functions use to apply a selector:
 * parca_series(), parca_labels(), parca_label_values() and
 * parca_query_range() (sql/70_query.sql) are written over it.
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "query/selector.h"

PG_FUNCTION_INFO_V1(parca_series_ids);

Datum
parca_series_ids(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	   *sel_text = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Selector   *sel = selector_parse(sel_text);
	SeriesMatch *series;
	int			n;
	Datum	   *ids;
	ArrayType  *result;

	SPI_connect();
	series = selector_find_series(sel, NIL, &n);
	ids = MemoryContextAlloc(cxt, sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
		ids[i] = Int64GetDatum(series[i].id);
	SPI_finish();
	result = construct_array(ids, n, INT8OID, 8, true, TYPALIGN_DOUBLE);
	PG_RETURN_ARRAYTYPE_P(result);
}
