/*
 * export.c
 *		parca_pprof(profile): a profile as gzipped pprof.
 *
 * The profile holds location ids; their mappings, functions and lines
 * are read from the metastore in three queries, whatever the size of the
 * profile.  Every pprof id is renumbered densely from 1.  Mappings are
 * written with start 0 and offset 0, so that the stored (normalized)
 * addresses read back as they are.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "common/ids.h"
#include "metastore.h"
#include "pprof/pprof.h"
#include "profile.h"

PG_FUNCTION_INFO_V1(parca_pprof);

typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Function PbFunction;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__ValueType PbValueType;

/* metastore id -> dense pprof id (index + 1) */
typedef struct IdEntry
{
	uint64		key;
	uint64		pprof_id;
} IdEntry;

typedef struct Exporter
{
	PprofMessage msg;
	HTAB	   *strings;		/* string -> index */
	char	  **string_table;
	int			nstrings;
	int			strings_cap;
	HTAB	   *locations;		/* location id -> pprof id */
	HTAB	   *functions;
	HTAB	   *mappings;
} Exporter;

typedef struct StrIndex
{
	const char *key;			/* hash key (string) */
	int64		index;
} StrIndex;

static uint32
string_hash(const void *key, Size keysize)
{
	const char *s = *(const char *const *) key;

	return (uint32) parca_hash64(s, strlen(s));
}

static int
string_match(const void *a, const void *b, Size keysize)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static HTAB *
id_map(const char *name)
{
	HASHCTL		ctl;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(IdEntry);
	ctl.hcxt = CurrentMemoryContext;
	return hash_create(name, 1024, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

static int64
intern(Exporter *e, const char *s)
{
	StrIndex   *entry;
	bool		found;

	entry = hash_search(e->strings, &s, HASH_ENTER, &found);
	if (found)
		return entry->index;
	entry->key = pstrdup(s);
	if (e->nstrings == e->strings_cap)
	{
		e->strings_cap *= 2;
		e->string_table = repalloc_huge(e->string_table, e->strings_cap * sizeof(char *));
	}
	e->string_table[e->nstrings] = (char *) entry->key;
	entry->index = e->nstrings++;
	return entry->index;
}

static void
exporter_init(Exporter *e)
{
	HASHCTL		ctl;

	memset(e, 0, sizeof(*e));
	perftools__profiles__profile__init(&e->msg);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(char *);
	ctl.entrysize = sizeof(StrIndex);
	ctl.hash = string_hash;
	ctl.match = string_match;
	ctl.hcxt = CurrentMemoryContext;
	e->strings = hash_create("parca export strings", 1024, &ctl,
							 HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	e->strings_cap = 1024;
	e->string_table = palloc(e->strings_cap * sizeof(char *));
	intern(e, "");
	e->locations = id_map("parca export locations");
	e->functions = id_map("parca export functions");
	e->mappings = id_map("parca export mappings");
}

/* Gives each distinct id a dense pprof id; returns the ids in order. */
static uint64 *
number_ids(HTAB *map, uint64 id, uint64 **ordered, int *n, int *cap)
{
	bool		found;
	IdEntry    *entry = hash_search(map, &id, HASH_ENTER, &found);

	if (!found)
	{
		if (*n == *cap)
		{
			*cap = Max(*cap * 2, 256);
			*ordered = *ordered ? repalloc_huge(*ordered, *cap * sizeof(uint64)) : palloc(*cap * sizeof(uint64));
		}
		(*ordered)[*n] = id;
		entry->pprof_id = ++(*n);
	}
	return &entry->pprof_id;
}

static uint64
lookup_id(HTAB *map, uint64 id)
{
	IdEntry    *entry = hash_search(map, &id, HASH_FIND, NULL);

	return entry ? entry->pprof_id : 0;
}

static void
select_by_ids(const char *sql, const uint64 *ids, int n)
{
	Oid			argtypes[1] = {INT8ARRAYOID};
	Datum		args[1] = {metastore_id_array(ids, n)};
	MemoryContext cxt = CurrentMemoryContext;

	if (SPI_execute_with_args(sql, 1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "metastore query failed: %s", sql);
	/* SPI leaves us in its procedure context; the message lives in ours. */
	MemoryContextSwitchTo(cxt);
}

static char *
text_col(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	return isnull ? "" : TextDatumGetCString(d);
}

static int64
int8_col(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

static void
int8_array_col(HeapTuple tup, TupleDesc desc, int col, Datum **elems, int *n)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	*n = 0;
	*elems = NULL;
	if (!isnull)
		deconstruct_array(DatumGetArrayTypeP(d), INT8OID, 8, FLOAT8PASSBYVAL,
						  TYPALIGN_DOUBLE, elems, NULL, n);
}

/*
 * Fills msg.location (for the ids in loc_ids, pprof ids 1..n), then the
 * functions and mappings they use.
 */
static void
export_metadata(Exporter *e, const uint64 *loc_ids, int nlocs)
{
	PbLocation **locs = palloc(Max(nlocs, 1) * sizeof(PbLocation *));
	uint64	   *fn_ids = NULL,
			   *map_ids = NULL;
	int			nfn = 0,
				fn_cap = 0,
				nmap = 0,
				map_cap = 0;

	for (int i = 0; i < nlocs; i++)
	{
		locs[i] = palloc(sizeof(PbLocation));
		perftools__profiles__location__init(locs[i]);
		locs[i]->id = i + 1;
	}

	select_by_ids("SELECT id, mapping_id, address, function_ids, line_numbers, is_folded "
				  "FROM parca.locations WHERE id OPERATOR(pg_catalog.=) ANY ($1)", loc_ids, nlocs);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		PbLocation *loc = locs[lookup_id(e->locations, (uint64) int8_col(tup, desc, 1)) - 1];
		bool		isnull;
		Datum	   *fids,
				   *lines;
		int			nf,
					nl;

		SPI_getbinval(tup, desc, 2, &isnull);
		if (!isnull)
			loc->mapping_id = *number_ids(e->mappings, (uint64) int8_col(tup, desc, 2),
										  &map_ids, &nmap, &map_cap);
		loc->address = (uint64) int8_col(tup, desc, 3);
		int8_array_col(tup, desc, 4, &fids, &nf);
		int8_array_col(tup, desc, 5, &lines, &nl);
		loc->is_folded = DatumGetBool(SPI_getbinval(tup, desc, 6, &isnull));
		loc->n_line = Min(nf, nl);
		loc->line = palloc(Max(loc->n_line, 1) * sizeof(PbLine *));
		for (size_t j = 0; j < loc->n_line; j++)
		{
			PbLine	   *line = palloc(sizeof(PbLine));

			perftools__profiles__line__init(line);
			line->function_id = *number_ids(e->functions, (uint64) DatumGetInt64(fids[j]),
											&fn_ids, &nfn, &fn_cap);
			line->line = DatumGetInt64(lines[j]);
			loc->line[j] = line;
		}
	}
	e->msg.location = locs;
	e->msg.n_location = nlocs;

	e->msg.function = palloc(Max(nfn, 1) * sizeof(PbFunction *));
	e->msg.n_function = nfn;
	if (nfn > 0)
		select_by_ids("SELECT id, name, system_name, filename, start_line "
					  "FROM parca.functions WHERE id OPERATOR(pg_catalog.=) ANY ($1)", fn_ids, nfn);
	for (int i = 0; i < nfn; i++)
	{
		e->msg.function[i] = palloc(sizeof(PbFunction));
		perftools__profiles__function__init(e->msg.function[i]);
		e->msg.function[i]->id = i + 1;
	}
	for (uint64 r = 0; nfn > 0 && r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		PbFunction *f = e->msg.function[lookup_id(e->functions, (uint64) int8_col(tup, desc, 1)) - 1];

		f->name = intern(e, text_col(tup, desc, 2));
		f->system_name = intern(e, text_col(tup, desc, 3));
		f->filename = intern(e, text_col(tup, desc, 4));
		f->start_line = int8_col(tup, desc, 5);
	}

	e->msg.mapping = palloc(Max(nmap, 1) * sizeof(PbMapping *));
	e->msg.n_mapping = nmap;
	if (nmap > 0)
		select_by_ids("SELECT id, build_id, file FROM parca.mappings WHERE id OPERATOR(pg_catalog.=) ANY ($1)",
					  map_ids, nmap);
	for (int i = 0; i < nmap; i++)
	{
		e->msg.mapping[i] = palloc(sizeof(PbMapping));
		perftools__profiles__mapping__init(e->msg.mapping[i]);
		e->msg.mapping[i]->id = i + 1;
		e->msg.mapping[i]->memory_limit = UINT64_MAX;
	}
	for (uint64 r = 0; nmap > 0 && r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		PbMapping  *m = e->msg.mapping[lookup_id(e->mappings, (uint64) int8_col(tup, desc, 1)) - 1];

		m->build_id = intern(e, text_col(tup, desc, 2));
		m->filename = intern(e, text_col(tup, desc, 3));
	}
	/* pprof wants these set when the mapping's locations carry them. */
	for (int i = 0; i < nlocs; i++)
	{
		if (locs[i]->mapping_id != 0 && locs[i]->n_line > 0)
		{
			PbMapping  *m = e->msg.mapping[locs[i]->mapping_id - 1];

			m->has_functions = m->has_filenames = m->has_line_numbers = true;
			if (locs[i]->n_line > 1)
				m->has_inline_frames = true;
		}
	}
}

/* Splits "name:sample_type:sample_unit:period_type:period_unit[:delta]". */
static void
split_profile_type(const char *profile_type, char *parts[6])
{
	char	   *copy = pstrdup(profile_type);
	int			n = 0;

	for (int i = 0; i < 6; i++)
		parts[i] = "";
	parts[n++] = copy;
	for (char *p = copy; *p && n < 6; p++)
		if (*p == ':')
		{
			*p = '\0';
			parts[n++] = p + 1;
		}
}

static PbValueType *
value_type(Exporter *e, const char *type, const char *unit)
{
	PbValueType *vt = palloc(sizeof(PbValueType));

	perftools__profiles__value_type__init(vt);
	vt->type = intern(e, type);
	vt->unit = intern(e, unit);
	return vt;
}

Datum
parca_pprof(PG_FUNCTION_ARGS)
{
	struct varlena *profile = PG_GETARG_PROFILE_P(0);
	MemoryContext work = AllocSetContextCreate(CurrentMemoryContext, "parca export",
											   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(work);
	ProfileReader r;
	ProfileSample s;
	Exporter	e;
	const char *profile_type;
	char	   *parts[6];
	int64		period;
	uint64	   *loc_ids = NULL;
	int			nlocs = 0,
				loc_cap = 0;
	PbSample  **samples;
	size_t		nsamples = 0;
	bytea	   *result;

	profile_reader_init(&r, profile);
	profile_type = PG_ARGISNULL(1) ? r.meta.profile_type : text_to_cstring(PG_GETARG_TEXT_PP(1));
	period = PG_ARGISNULL(2) ? r.meta.period : PG_GETARG_INT64(2);
	if (r.meta.is_diff)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a diff profile cannot be exported as pprof"),
				 errhint("Export each side and compare them with go tool pprof -diff_base.")));
	split_profile_type(profile_type, parts);

	exporter_init(&e);
	e.msg.n_sample_type = 1;
	e.msg.sample_type = palloc(sizeof(PbValueType *));
	e.msg.sample_type[0] = value_type(&e, parts[1], parts[2]);
	e.msg.period_type = value_type(&e, parts[3], parts[4]);
	e.msg.period = period;

	samples = palloc(Max(r.remaining, 1) * sizeof(PbSample *));
	while (profile_reader_next(&r, &s))
	{
		PbSample   *ps = palloc(sizeof(PbSample));

		CHECK_FOR_INTERRUPTS();
		perftools__profiles__sample__init(ps);
		ps->n_location_id = s.nframes;
		ps->location_id = palloc(Max(s.nframes, 1) * sizeof(uint64));
		for (int i = 0; i < s.nframes; i++)
			ps->location_id[i] = *number_ids(e.locations, profile_sample_frame(&s, i),
											 &loc_ids, &nlocs, &loc_cap);
		ps->n_value = 1;
		ps->value = palloc(sizeof(int64));
		ps->value[0] = s.value;
		samples[nsamples++] = ps;
	}
	e.msg.sample = samples;
	e.msg.n_sample = nsamples;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	MemoryContextSwitchTo(work);
	export_metadata(&e, loc_ids, nlocs);
	SPI_finish();

	e.msg.string_table = e.string_table;
	e.msg.n_string_table = e.nstrings;
	MemoryContextSwitchTo(old);
	result = pprof_encode(&e.msg);
	MemoryContextDelete(work);
	PG_RETURN_BYTEA_P(result);
}
