/*
 * metastore_read.c
 *		Reading locations, functions and mappings by id.
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "metastore/metastore_read.h"

/*
 * Runs sql with ids as $1 (bigint[]) and extra as $2 (text, if not NULL);
 * the rows are in SPI_tuptable.  Returns in the caller's memory context,
 * which SPI's calls leave for their own.
 */
static uint64
select_by_ids(const char *sql, const uint64 *ids, int n, const char *extra)
{
	Oid			types[2] = {INT8ARRAYOID, TEXTOID};
	Datum		args[2];
	MemoryContext cxt = CurrentMemoryContext;
	int			ret;

	args[0] = metastore_id_array(ids, n);
	if (extra)
		args[1] = CStringGetTextDatum(extra);
	ret = SPI_execute_with_args(sql, extra ? 2 : 1, types, args, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "metastore query failed: %s", SPI_result_code_string(ret));
	MemoryContextSwitchTo(cxt);
	return SPI_processed;
}

/* A bigint column; NULL reads as 0. */
static int64
int8_col(uint64 row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

static const char *
text_col(uint64 row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? "" : TextDatumGetCString(d);
}

/* A bigint[] column; NULL elements read as 0. */
static int64 *
int8_array_col(uint64 row, int col, int *n)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int64	   *out;

	*n = 0;
	if (isnull)
		return NULL;
	arr = DatumGetArrayTypeP(d);
	if (ARR_ELEMTYPE(arr) != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("metastore column \"%s\" is not of type bigint[]",
						SPI_fname(SPI_tuptable->tupdesc, col))));
	if (ARR_NDIM(arr) == 1 && !ARR_HASNULL(arr))
	{
		/* stored as int64s one after the other; copied out of SPI's tuple */
		*n = ARR_DIMS(arr)[0];
		out = palloc(sizeof(int64) * Max(*n, 1));
		memcpy(out, ARR_DATA_PTR(arr), sizeof(int64) * *n);
		return out;
	}
	deconstruct_array(arr, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, n);
	out = palloc(sizeof(int64) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
		out[i] = nulls[i] ? 0 : DatumGetInt64(elems[i]);
	return out;
}

/* Compares ids as bigint (the order metastore_locations_matching's ORDER BY gives). */
static int
cmp_id(const void *key, const void *entry)
{
	int64		a = (int64) *(const uint64 *) key;
	int64		b = (int64) *(const uint64 *) entry;

	return a < b ? -1 : a > b;
}

/* The id is each struct's first member, so the structs compare by it. */
StaticAssertDecl(offsetof(MetaFunction, id) == 0, "MetaFunction.id leads");
StaticAssertDecl(offsetof(MetaMapping, id) == 0, "MetaMapping.id leads");

MetaLocation *
metastore_read_locations(const uint64 *ids, int n, int *nfound)
{
	uint64		rows = select_by_ids("SELECT id, mapping_id, address, function_ids, line_numbers, is_folded "
									 "FROM parca.locations WHERE id OPERATOR(pg_catalog.=) ANY ($1)",
									 ids, n, NULL);
	MetaLocation *locs = palloc0(sizeof(MetaLocation) * Max(rows, 1));

	for (uint64 r = 0; r < rows; r++)
	{
		MetaLocation *loc = &locs[r];
		bool		isnull;
		Datum		d;
		int64	   *fids;
		int64	   *lines;
		int			nf,
					nl;

		CHECK_FOR_INTERRUPTS();
		loc->id = (uint64) int8_col(r, 1);
		d = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull);
		loc->has_mapping = !isnull;
		loc->mapping_id = isnull ? 0 : (uint64) DatumGetInt64(d);
		loc->address = (uint64) int8_col(r, 3);
		fids = int8_array_col(r, 4, &nf);
		lines = int8_array_col(r, 5, &nl);
		d = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 6, &isnull);
		loc->is_folded = !isnull && DatumGetBool(d);
		if (nl < nf)
		{
			int64	   *padded = palloc0(sizeof(int64) * nf);

			if (nl > 0)
				memcpy(padded, lines, sizeof(int64) * nl);
			lines = padded;
		}
		loc->nlines = nf;
		loc->function_ids = (const uint64 *) fids;
		loc->lines = lines;
	}
	*nfound = (int) rows;
	return locs;
}

MetaFunction *
metastore_read_functions(const uint64 *ids, int n, int *nfound)
{
	uint64		rows = select_by_ids("SELECT id, name, system_name, filename, start_line "
									 "FROM parca.functions WHERE id OPERATOR(pg_catalog.=) ANY ($1)",
									 ids, n, NULL);
	MetaFunction *fns = palloc0(sizeof(MetaFunction) * Max(rows, 1));

	for (uint64 r = 0; r < rows; r++)
	{
		CHECK_FOR_INTERRUPTS();
		fns[r].id = (uint64) int8_col(r, 1);
		fns[r].name = text_col(r, 2);
		fns[r].system_name = text_col(r, 3);
		fns[r].filename = text_col(r, 4);
		fns[r].start_line = int8_col(r, 5);
	}
	qsort(fns, rows, sizeof(MetaFunction), cmp_id);
	*nfound = (int) rows;
	return fns;
}

MetaMapping *
metastore_read_mappings(const uint64 *ids, int n, int *nfound)
{
	uint64		rows = select_by_ids("SELECT id, build_id, file "
									 "FROM parca.mappings WHERE id OPERATOR(pg_catalog.=) ANY ($1)",
									 ids, n, NULL);
	MetaMapping *maps = palloc0(sizeof(MetaMapping) * Max(rows, 1));

	for (uint64 r = 0; r < rows; r++)
	{
		maps[r].id = (uint64) int8_col(r, 1);
		maps[r].build_id = text_col(r, 2);
		maps[r].file = text_col(r, 3);
	}
	qsort(maps, rows, sizeof(MetaMapping), cmp_id);
	*nfound = (int) rows;
	return maps;
}

const MetaFunction *
metastore_find_function(const MetaFunction *functions, int n, uint64 id)
{
	return bsearch(&id, functions, n, sizeof(MetaFunction), cmp_id);
}

const MetaMapping *
metastore_find_mapping(const MetaMapping *mappings, int n, uint64 id)
{
	return bsearch(&id, mappings, n, sizeof(MetaMapping), cmp_id);
}

uint64 *
metastore_locations_matching(const uint64 *ids, int n, LocationField field, NameMatch match,
							 const char *text, int *nfound)
{
	static const char *const conditions[] = {
		[NAME_EQUAL] = "%s OPERATOR(pg_catalog.=) $2",
		[NAME_CONTAINS] = "pg_catalog.strpos(%s, $2) OPERATOR(pg_catalog.>) 0",
		[NAME_STARTS_WITH] = "pg_catalog.starts_with(%s, $2)",
		[NAME_CONTAINS_ANY_CASE] = "pg_catalog.strpos(pg_catalog.lower(%s), pg_catalog.lower($2)) OPERATOR(pg_catalog.>) 0",
	};
	const char *cond = conditions[match];
	char	   *where;
	uint64		rows;
	uint64	   *out;

	switch (field)
	{
		case LOCATION_FUNCTION:
		case LOCATION_FILE:
			where = psprintf("EXISTS (SELECT 1 FROM parca.functions f"
							 " WHERE f.id OPERATOR(pg_catalog.=) ANY (l.function_ids) AND %s)",
							 psprintf(cond, field == LOCATION_FUNCTION ? "f.name" : "f.filename"));
			break;
		case LOCATION_BINARY:
		case LOCATION_MAPPING_PATH:
			where = psprintf("EXISTS (SELECT 1 FROM parca.mappings m"
							 " WHERE m.id OPERATOR(pg_catalog.=) l.mapping_id AND %s)",
							 psprintf(cond, field == LOCATION_BINARY ?
									  "pg_catalog.regexp_replace(m.file, '^.*/', '')" : "m.file"));
			break;
		case LOCATION_ADDRESS:
			Assert(match == NAME_EQUAL);
			where = "l.address OPERATOR(pg_catalog.=) $2::pg_catalog.int8";
			break;
		default:
			elog(ERROR, "unknown location field %d", (int) field);
	}
	rows = select_by_ids(psprintf("SELECT l.id FROM parca.locations l"
								  " WHERE l.id OPERATOR(pg_catalog.=) ANY ($1) AND %s ORDER BY 1", where),
						 ids, n, text);
	out = palloc(sizeof(uint64) * Max(rows, 1));
	for (uint64 r = 0; r < rows; r++)
		out[r] = (uint64) int8_col(r, 1);
	*nfound = (int) rows;
	return out;
}
