/*
 * symbolize.c
 *		Naming the locations of a build id from its debug information;
 *		see symbolize.h and docs/symbolization.md.
 *
 * A location in a mapping with a build id, at a non-zero address, is
 * identified by that mapping and address alone (ids/ids.h): its lines
 * can be filled in later without changing its id, and every stack that
 * names it, stored before or after, shows them.  The metastore does the
 * filling (it updates a stored location that has no lines), so a location
 * named here and the same location named by a writer are the same rows.
 */
#include "postgres.h"

#include <limits.h>

#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "ids/ids.h"
#include "metastore/metastore.h"
#include "symbolize/debugfile.h"
#include "symbolize/symbolize.h"
#include "symbolize/symbolize_internal.h"

/* Locations named per metastore call: bounds the memory of one batch. */
#define LOCATIONS_PER_BATCH 4096

int			symbolize_max_debuginfo_size = 256 * 1024 * 1024;

PG_FUNCTION_INFO_V1(parca_debuginfo_upload);
PG_FUNCTION_INFO_V1(parca_symbolize);

void
symbolize_check_build_id(const char *build_id)
{
	size_t		len = strlen(build_id);

	if (len < 2 || len > 1024 || strspn(build_id, "0123456789abcdefABCDEF") != len)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a build id must be 2 to 1024 hexadecimal digits")));
}

List *
symbolize_first_column(MemoryContext cxt)
{
	List	   *values = NIL;

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *value = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		MemoryContext old = MemoryContextSwitchTo(cxt);

		values = lappend(values, pstrdup(value));
		MemoryContextSwitchTo(old);
	}
	return values;
}

typedef struct UnnamedLocations
{
	int64		n;
	uint64	   *ids;
	uint64	   *addresses;
	uint64	   *mapping_ids;
} UnnamedLocations;

/* The locations of the build id that have no lines yet. */
static void
find_unnamed(const char *build_id, UnnamedLocations *u)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(build_id)};
	int			rc;

	rc = SPI_execute_with_args(
							   "SELECT l.id, l.address, l.mapping_id FROM parca.mappings m "
							   "JOIN parca.locations l ON l.mapping_id OPERATOR(pg_catalog.=) m.id "
							   "WHERE m.build_id OPERATOR(pg_catalog.=) $1 "
							   "AND pg_catalog.cardinality(l.function_ids) OPERATOR(pg_catalog.=) 0 "
							   "AND l.address OPERATOR(pg_catalog.<>) 0",
							   1, argtypes, args, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read the unnamed locations: %s", SPI_result_code_string(rc));
	u->n = (int64) SPI_processed;
	u->ids = palloc_extended(Max(u->n, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);
	u->addresses = palloc_extended(Max(u->n, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);
	u->mapping_ids = palloc_extended(Max(u->n, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < u->n; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		TupleDesc	d = SPI_tuptable->tupdesc;
		bool		isnull;

		u->ids[i] = (uint64) DatumGetInt64(SPI_getbinval(t, d, 1, &isnull));
		u->addresses[i] = (uint64) DatumGetInt64(SPI_getbinval(t, d, 2, &isnull));
		u->mapping_ids[i] = (uint64) DatumGetInt64(SPI_getbinval(t, d, 3, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
}

/* Name locations [from, to) of u; returns how many got lines. */
static int
name_batch(DebugFile *f, const UnnamedLocations *u, int64 from, int64 to)
{
	int			n = (int) (to - from);
	MetaLocation *locs = palloc(n * sizeof(MetaLocation));
	MetaFunction *funcs = palloc(n * DEBUGFILE_MAX_LINES * sizeof(MetaFunction));
	int			nlocs = 0;
	int			nfuncs = 0;

	for (int64 i = from; i < to; i++)
	{
		DebugLine	lines[DEBUGFILE_MAX_LINES];
		int			nlines;
		uint64	   *function_ids;
		int64	   *line_numbers;
		MetaLocation *l;

		CHECK_FOR_INTERRUPTS();
		nlines = debugfile_lines(f, u->addresses[i], lines);
		if (nlines == 0)
			continue;
		function_ids = palloc(nlines * sizeof(uint64));
		line_numbers = palloc(nlines * sizeof(int64));
		for (int j = 0; j < nlines; j++)
		{
			MetaFunction *fn = &funcs[nfuncs++];

			fn->name = lines[j].name;
			fn->system_name = lines[j].system_name;
			fn->filename = lines[j].filename;
			fn->start_line = lines[j].start_line;
			fn->id = parca_function_id(fn->name, fn->system_name, fn->filename, fn->start_line);
			function_ids[j] = fn->id;
			line_numbers[j] = lines[j].line;
		}
		l = &locs[nlocs++];
		memset(l, 0, sizeof(*l));
		l->id = u->ids[i];
		l->has_mapping = true;
		l->mapping_id = u->mapping_ids[i];
		l->address = u->addresses[i];
		l->nlines = nlines;
		l->function_ids = function_ids;
		l->lines = line_numbers;
	}
	if (nlocs > 0)
		metastore_register(NULL, 0, funcs, nfuncs, locs, nlocs);
	return nlocs;
}

static void
record_run(const char *build_id, int64 unnamed)
{
	Oid			argtypes[2] = {TEXTOID, INT8OID};
	Datum		args[2] = {CStringGetTextDatum(build_id), Int64GetDatum(unnamed)};
	int			rc;

	rc = SPI_execute_with_args("UPDATE parca.debuginfo SET symbolized_at = pg_catalog.now(), unnamed = $2 "
							   "WHERE build_id OPERATOR(pg_catalog.=) $1",
							   2, argtypes, args, NULL, false, 0);
	if (rc != SPI_OK_UPDATE)
		elog(ERROR, "could not record the symbolization: %s", SPI_result_code_string(rc));
}

/* Name the build id's unnamed locations from f; returns how many got lines. */
static int64
symbolize_with(const char *build_id, DebugFile *f)
{
	UnnamedLocations u;
	MemoryContext batch_cxt;
	MemoryContext old;
	int64		named = 0;

	find_unnamed(build_id, &u);
	batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "parca symbolize batch",
									  ALLOCSET_DEFAULT_SIZES);
	for (int64 from = 0; from < u.n; from += LOCATIONS_PER_BATCH)
	{
		old = MemoryContextSwitchTo(batch_cxt);
		named += name_batch(f, &u, from, Min(from + LOCATIONS_PER_BATCH, u.n));
		MemoryContextSwitchTo(old);
		MemoryContextReset(batch_cxt);
	}
	MemoryContextDelete(batch_cxt);
	record_run(build_id, u.n - named);
	return named;
}

int64
symbolize_build_id(const char *build_id)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(build_id)};
	MemoryContext file_cxt;
	MemoryContext old;
	bytea	   *elf;
	bool		isnull;
	DebugFile  *f;
	int64		named;
	int			rc;

	/*
	 * The row locked first, as an upload locks it before it names: two
	 * runs over one build id wait for each other instead of deadlocking
	 * on its locations.
	 */
	rc = SPI_execute_with_args("SELECT elf FROM parca.debuginfo WHERE build_id OPERATOR(pg_catalog.=) $1 "
							   "FOR NO KEY UPDATE",
							   1, argtypes, args, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read parca.debuginfo: %s", SPI_result_code_string(rc));
	if (SPI_processed == 0)
		return 0;

	/* the file and what libelf and libdw make of it go with this context */
	file_cxt = AllocSetContextCreate(CurrentMemoryContext, "parca debug file",
									 ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(file_cxt);
	elf = DatumGetByteaPCopy(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	/* a copy of its own: libelf may write into the image (symbolize_store) */
	f = debugfile_open(VARDATA(elf), VARSIZE(elf) - VARHDRSZ, build_id);
	MemoryContextSwitchTo(old);
	named = symbolize_with(build_id, f);
	MemoryContextDelete(file_cxt);
	return named;
}

static void
store_debuginfo(const char *build_id, bytea *elf, const char *source)
{
	Oid			argtypes[3] = {TEXTOID, BYTEAOID, TEXTOID};
	Datum		args[3] = {CStringGetTextDatum(build_id), PointerGetDatum(elf),
	CStringGetTextDatum(source)};
	int			rc;

	rc = SPI_execute_with_args("INSERT INTO parca.debuginfo AS d (build_id, elf, source) VALUES ($1, $2, $3) "
							   "ON CONFLICT (build_id) DO UPDATE SET elf = excluded.elf, source = excluded.source, "
							   "stored_at = pg_catalog.now(), symbolized_at = NULL, unnamed = NULL",
							   3, argtypes, args, NULL, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "could not store the debug information: %s", SPI_result_code_string(rc));
	rc = SPI_execute_with_args("DELETE FROM parca.debuginfo_missing WHERE build_id OPERATOR(pg_catalog.=) $1",
							   1, argtypes, args, NULL, false, 0);
	if (rc != SPI_OK_DELETE)
		elog(ERROR, "could not update parca.debuginfo_missing: %s", SPI_result_code_string(rc));
}

int64
symbolize_store(const char *build_id, bytea *elf, const char *source)
{
	symbolize_check_build_id(build_id);
	/*
	 * Stored first: libelf may write into the image it reads
	 * (elf_memory reads it as a private mapping), so the stored bytes are
	 * the caller's and the file is read from a copy; an invalid file
	 * raises an error, which takes the row back with it.
	 */
	store_debuginfo(build_id, elf, source);
	return symbolize_build_id(build_id);
}

Datum
parca_debuginfo_upload(PG_FUNCTION_ARGS)
{
	char	   *build_id = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Size		size = toast_raw_datum_size(PG_GETARG_DATUM(1)) - VARHDRSZ;
	bytea	   *elf;
	int64		named;

	symbolize_check_build_id(build_id);
	/* before the value is read: a stored one may be large */
	if (size > (Size) symbolize_max_debuginfo_size)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("debug information of %zu bytes is larger than parca.max_debuginfo_size (%d bytes)",
						size, symbolize_max_debuginfo_size)));
	elf = PG_GETARG_BYTEA_PP(1);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	named = symbolize_store(build_id, elf, "upload");
	SPI_finish();
	PG_RETURN_INT64(named);
}

Datum
parca_symbolize(PG_FUNCTION_ARGS)
{
	char	   *build_id = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int64		named;

	symbolize_check_build_id(build_id);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	named = symbolize_build_id(build_id);
	SPI_finish();
	PG_RETURN_INT64(named);
}

void
symbolize_init(void)
{
	DefineCustomIntVariable("parca.max_debuginfo_size",
							"Largest ELF file stored as debug information, in bytes.",
							"Its debug sections may decompress to at most four times this.",
							&symbolize_max_debuginfo_size,
							256 * 1024 * 1024,
							1024, (int) (MaxAllocSize - VARHDRSZ),
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);
	symbolize_worker_init();
}
