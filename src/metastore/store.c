/*
 * store.c
 *		The write protocol: the SQL functions through which every writer
 *		that builds its own stacks (parca-agent) stores metastore rows.
 *
 * parca_store_mappings, parca_store_functions and parca_store_locations
 * take a batch of rows as parallel arrays and hand them to
 * metastore_register(), the same code parca_ingest_pprof uses, so the
 * statements that write the metastore exist once (metastore.c).  Ids are
 * content hashes (ids/ids.c): a mapping's and a function's are
 * recomputed here and must match, so a writer that computes them
 * differently (another version, names repaired differently) is refused
 * instead of storing rows nobody else will find.  parca_write_protocol()
 * names the version of all this, PARCA_WRITE_PROTOCOL, for writers to
 * check when they connect.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "ids/ids.h"
#include "installation/extension_version.h"
#include "metastore/metastore.h"
#include "types/valid_text.h"

PG_FUNCTION_INFO_V1(parca_store_mappings);
PG_FUNCTION_INFO_V1(parca_store_functions);
PG_FUNCTION_INFO_V1(parca_store_locations);
PG_FUNCTION_INFO_V1(parca_write_protocol);

typedef struct Column
{
	const char *name;
	Datum	   *values;
	bool	   *nulls;
	int			n;
} Column;

/*
 * Argument argno, a one-dimensional array of type elemtype (or empty),
 * as a column; NULL elements only if nullable.
 */
static void
get_column(FunctionCallInfo fcinfo, int argno, const char *name, Oid elemtype,
		   bool nullable, Column *col)
{
	ArrayType  *a;
	int16		typlen;
	bool		typbyval;
	char		typalign;

	col->name = name;
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", name)));
	a = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", name)));
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(a, elemtype, typlen, typbyval, typalign,
					  &col->values, &col->nulls, &col->n);
	for (int i = 0; i < col->n && !nullable; i++)
		if (col->nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain NULL", name)));
}

/* All columns as long as the first. */
static void
check_lengths(const Column *cols, int ncols)
{
	for (int i = 1; i < ncols; i++)
		if (cols[i].n != cols[0].n)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("%s has %d elements, %s has %d", cols[i].name, cols[i].n,
							cols[0].name, cols[0].n),
					 errdetail("The arrays are the columns of one batch of rows.")));
}

static void
check_id(uint64 given, uint64 computed, const char *what, const char *name)
{
	if (given != computed)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s %s has id %lld, but its content has id %lld",
						what, message_quote_cstring(name), (long long) given, (long long) computed),
				 errhint("The writer computes ids differently from this server: check that their write protocols match (parca_write_protocol()).")));
}

static void
register_batch(const MetaMapping *m, int nm, const MetaFunction *f, int nf,
			   const MetaLocation *l, int nl)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	metastore_register(m, nm, f, nf, l, nl);
	SPI_finish();
}

/*
 * parca_store_mappings(ids bigint[], build_ids text[], files text[]):
 * stores the mappings the metastore lacks.
 */
Datum
parca_store_mappings(PG_FUNCTION_ARGS)
{
	Column		cols[3];
	MetaMapping *m;

	get_column(fcinfo, 0, "ids", INT8OID, false, &cols[0]);
	get_column(fcinfo, 1, "build_ids", TEXTOID, false, &cols[1]);
	get_column(fcinfo, 2, "files", TEXTOID, false, &cols[2]);
	check_lengths(cols, 3);
	m = palloc(Max(cols[0].n, 1) * sizeof(MetaMapping));
	for (int i = 0; i < cols[0].n; i++)
	{
		m[i].id = (uint64) DatumGetInt64(cols[0].values[i]);
		m[i].build_id = TextDatumGetCString(cols[1].values[i]);
		m[i].file = TextDatumGetCString(cols[2].values[i]);
		check_id(m[i].id, parca_mapping_id(m[i].build_id, m[i].file), "mapping", m[i].file);
	}
	register_batch(m, cols[0].n, NULL, 0, NULL, 0);
	PG_RETURN_VOID();
}

/*
 * parca_store_functions(ids bigint[], names text[], system_names text[],
 * filenames text[], start_lines bigint[]): stores the functions the
 * metastore lacks.
 */
Datum
parca_store_functions(PG_FUNCTION_ARGS)
{
	Column		cols[5];
	MetaFunction *f;

	get_column(fcinfo, 0, "ids", INT8OID, false, &cols[0]);
	get_column(fcinfo, 1, "names", TEXTOID, false, &cols[1]);
	get_column(fcinfo, 2, "system_names", TEXTOID, false, &cols[2]);
	get_column(fcinfo, 3, "filenames", TEXTOID, false, &cols[3]);
	get_column(fcinfo, 4, "start_lines", INT8OID, false, &cols[4]);
	check_lengths(cols, 5);
	f = palloc(Max(cols[0].n, 1) * sizeof(MetaFunction));
	for (int i = 0; i < cols[0].n; i++)
	{
		f[i].id = (uint64) DatumGetInt64(cols[0].values[i]);
		f[i].name = TextDatumGetCString(cols[1].values[i]);
		f[i].system_name = TextDatumGetCString(cols[2].values[i]);
		f[i].filename = TextDatumGetCString(cols[3].values[i]);
		f[i].start_line = DatumGetInt64(cols[4].values[i]);
		check_id(f[i].id, parca_function_id(f[i].name, f[i].system_name, f[i].filename,
											f[i].start_line), "function", f[i].name);
	}
	register_batch(NULL, 0, f, cols[0].n, NULL, 0);
	PG_RETURN_VOID();
}

/*
 * parca_store_locations(ids bigint[], mapping_ids bigint[], addresses
 * bigint[], line_counts integer[], function_ids bigint[], line_numbers
 * bigint[], is_folded boolean[] DEFAULT NULL): stores the locations the
 * metastore lacks and adds lines to stored ones that have none.  Location
 * i has line_counts[i] lines, innermost first, the next ones of the flat
 * arrays function_ids and line_numbers; a NULL mapping id means none;
 * is_folded NULL means no location is folded.
 */
Datum
parca_store_locations(PG_FUNCTION_ARGS)
{
	Column		cols[4];
	Column		flat[2];
	Column		folded = {"is_folded", NULL, NULL, 0};
	MetaLocation *l;
	uint64	   *function_ids;
	int64	   *lines;
	int64		pos = 0;

	get_column(fcinfo, 0, "ids", INT8OID, false, &cols[0]);
	get_column(fcinfo, 1, "mapping_ids", INT8OID, true, &cols[1]);
	get_column(fcinfo, 2, "addresses", INT8OID, false, &cols[2]);
	get_column(fcinfo, 3, "line_counts", INT4OID, false, &cols[3]);
	check_lengths(cols, 4);
	get_column(fcinfo, 4, "function_ids", INT8OID, false, &flat[0]);
	get_column(fcinfo, 5, "line_numbers", INT8OID, false, &flat[1]);
	check_lengths(flat, 2);
	if (!PG_ARGISNULL(6))
	{
		Column		pair[2] = {cols[0]};

		get_column(fcinfo, 6, "is_folded", BOOLOID, false, &folded);
		pair[1] = folded;
		check_lengths(pair, 2);
	}

	function_ids = palloc(Max(flat[0].n, 1) * sizeof(uint64));
	lines = palloc(Max(flat[0].n, 1) * sizeof(int64));
	for (int i = 0; i < flat[0].n; i++)
	{
		function_ids[i] = (uint64) DatumGetInt64(flat[0].values[i]);
		lines[i] = DatumGetInt64(flat[1].values[i]);
	}
	l = palloc(Max(cols[0].n, 1) * sizeof(MetaLocation));
	for (int i = 0; i < cols[0].n; i++)
	{
		int32		count = DatumGetInt32(cols[3].values[i]);

		if (count < 0 || count > flat[0].n - pos)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("line_counts[%d] is %d, but %lld lines are left in function_ids",
							i + 1, count, (long long) (flat[0].n - pos))));
		l[i].id = (uint64) DatumGetInt64(cols[0].values[i]);
		l[i].has_mapping = !cols[1].nulls[i];
		l[i].mapping_id = l[i].has_mapping ? (uint64) DatumGetInt64(cols[1].values[i]) : 0;
		l[i].address = (uint64) DatumGetInt64(cols[2].values[i]);
		l[i].is_folded = folded.n > 0 && DatumGetBool(folded.values[i]);
		l[i].nlines = count;
		l[i].function_ids = function_ids + pos;
		l[i].lines = lines + pos;
		pos += count;
	}
	if (pos != flat[0].n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("line_counts add up to %lld, but function_ids has %d elements",
						(long long) pos, flat[0].n)));
	register_batch(NULL, 0, NULL, 0, l, cols[0].n);
	PG_RETURN_VOID();
}

/* parca_write_protocol(): the version of the write protocol spoken here. */
Datum
parca_write_protocol(PG_FUNCTION_ARGS)
{
	extension_version_check();
	PG_RETURN_INT32(PARCA_WRITE_PROTOCOL);
}
