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

#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "metastore/metastore_read.h"
#include "pprof/pprof.h"
#include "types/profile.h"
#include "types/profile_type.h"
#include "query/string_table.h"
#include "types/keyed_table.h"

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
	StringTable strings;		/* the pprof's string table */
	HTAB	   *locations;		/* location id -> pprof id */
	HTAB	   *functions;
	HTAB	   *mappings;
} Exporter;

static int64
intern(Exporter *e, const char *s)
{
	return string_table_add(&e->strings, s, NULL);
}

static void
exporter_init(Exporter *e)
{
	memset(e, 0, sizeof(*e));
	perftools__profiles__profile__init(&e->msg);
	string_table_init(&e->strings, "parca export strings");
	intern(e, "");				/* pprof's string 0 */
	e->locations = keyed_table_create("parca export locations", 1024, sizeof(uint64),
									  sizeof(IdEntry), CurrentMemoryContext);
	e->functions = keyed_table_create("parca export functions", 1024, sizeof(uint64),
									  sizeof(IdEntry), CurrentMemoryContext);
	e->mappings = keyed_table_create("parca export mappings", 1024, sizeof(uint64),
									 sizeof(IdEntry), CurrentMemoryContext);
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
	MetaLocation *stored_locs;
	MetaFunction *stored_fns = NULL;
	MetaMapping *stored_maps = NULL;
	int			nstored;

	for (int i = 0; i < nlocs; i++)
	{
		locs[i] = palloc(sizeof(PbLocation));
		perftools__profiles__location__init(locs[i]);
		locs[i]->id = i + 1;
	}

	stored_locs = metastore_read_locations(loc_ids, nlocs, &nstored);
	for (int r = 0; r < nstored; r++)
	{
		const MetaLocation *ml = &stored_locs[r];
		PbLocation *loc = locs[lookup_id(e->locations, ml->id) - 1];

		if (ml->has_mapping)
			loc->mapping_id = *number_ids(e->mappings, ml->mapping_id, &map_ids, &nmap, &map_cap);
		loc->address = ml->address;
		loc->is_folded = ml->is_folded;
		loc->n_line = ml->nlines;
		loc->line = palloc(Max(loc->n_line, 1) * sizeof(PbLine *));
		for (size_t j = 0; j < loc->n_line; j++)
		{
			PbLine	   *line = palloc(sizeof(PbLine));

			perftools__profiles__line__init(line);
			line->function_id = *number_ids(e->functions, ml->function_ids[j],
											&fn_ids, &nfn, &fn_cap);
			line->line = ml->lines[j];
			loc->line[j] = line;
		}
	}
	e->msg.location = locs;
	e->msg.n_location = nlocs;

	e->msg.function = palloc(Max(nfn, 1) * sizeof(PbFunction *));
	e->msg.n_function = nfn;
	for (int i = 0; i < nfn; i++)
	{
		e->msg.function[i] = palloc(sizeof(PbFunction));
		perftools__profiles__function__init(e->msg.function[i]);
		e->msg.function[i]->id = i + 1;
	}
	nstored = 0;
	if (nfn > 0)
		stored_fns = metastore_read_functions(fn_ids, nfn, &nstored);
	for (int r = 0; r < nstored; r++)
	{
		const MetaFunction *mf = &stored_fns[r];
		PbFunction *f = e->msg.function[lookup_id(e->functions, mf->id) - 1];

		f->name = intern(e, mf->name);
		f->system_name = intern(e, mf->system_name);
		f->filename = intern(e, mf->filename);
		f->start_line = mf->start_line;
	}

	e->msg.mapping = palloc(Max(nmap, 1) * sizeof(PbMapping *));
	e->msg.n_mapping = nmap;
	for (int i = 0; i < nmap; i++)
	{
		e->msg.mapping[i] = palloc(sizeof(PbMapping));
		perftools__profiles__mapping__init(e->msg.mapping[i]);
		e->msg.mapping[i]->id = i + 1;
		e->msg.mapping[i]->memory_limit = UINT64_MAX;
	}
	nstored = 0;
	if (nmap > 0)
		stored_maps = metastore_read_mappings(map_ids, nmap, &nstored);
	for (int r = 0; r < nstored; r++)
	{
		const MetaMapping *mm = &stored_maps[r];
		PbMapping  *m = e->msg.mapping[lookup_id(e->mappings, mm->id) - 1];

		m->build_id = intern(e, mm->build_id);
		m->filename = intern(e, mm->file);
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
	struct varlena *profile;
	MemoryContext work;
	MemoryContext old;
	ProfileReader r;
	ProfileSample s;
	Exporter	e;
	const char *profile_type;
	ProfileType type = {"", "", "", "", "", false};
	int64		period;
	uint64	   *loc_ids = NULL;
	int			nlocs = 0,
				loc_cap = 0;
	PbSample  **samples;
	size_t		nsamples = 0;
	bytea	   *result;

	/*
	 * No profile (parca_merge over no rows is NULL): nothing to export.  Not
	 * STRICT, because a NULL type or period means "the profile's own".
	 */
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	profile = PG_GETARG_PROFILE_P(0);
	work = AllocSetContextCreate(CurrentMemoryContext, "parca export", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	profile_reader_init(&r, profile);
	profile_type = PG_ARGISNULL(1) ? r.meta.profile_type : text_to_cstring(PG_GETARG_TEXT_PP(1));
	period = PG_ARGISNULL(2) ? r.meta.period : PG_GETARG_INT64(2);
	if (r.meta.is_diff)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a diff profile cannot be exported as pprof"),
				 errhint("Export each side and compare them with go tool pprof -diff_base.")));
	/* a profile merged from bare stacks has no type: its value types stay empty */
	if (profile_type[0] != '\0')
		profile_type_parse_or_error(profile_type, &type);

	exporter_init(&e);
	e.msg.n_sample_type = 1;
	e.msg.sample_type = palloc(sizeof(PbValueType *));
	e.msg.sample_type[0] = value_type(&e, type.sample_type, type.sample_unit);
	e.msg.period_type = value_type(&e, type.period_type, type.period_unit);
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

	e.msg.string_table = e.strings.strings;
	e.msg.n_string_table = e.strings.n;
	MemoryContextSwitchTo(old);
	result = pprof_encode(&e.msg);
	MemoryContextDelete(work);
	PG_RETURN_BYTEA_P(result);
}
