/*
 * ingest.c
 *		parca_ingest_pprof(): store one pprof profile.
 *
 * One call is one statement: the profile is decoded and validated in
 * full before anything is written, and every write happens in the
 * caller's transaction (the metastore's through SPI, the sample rows
 * through samples_insert.c), so an error leaves nothing behind.
 *
 * A pprof with N sample types yields N profile types; each sample
 * becomes one row per sample type with a non-zero value.  A sample's
 * string labels join the caller's labels (the caller's win on a clash)
 * to name its series; its numeric labels go to samples.num_labels.
 */
#include "postgres.h"

#include <limits.h>
#include <malloc.h>

#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "ids/ids.h"
#include "ingest/ingest.h"
#include "types/labels.h"
#include "metastore/metastore.h"
#include "pprof/pprof.h"
#include "types/profile_type.h"
#include "ingest/samples_insert.h"
#include "types/stacktrace.h"
#include "types/keyed_table.h"

int			parca_max_profile_size = 64 * 1024 * 1024;

void
ingest_init(void)
{
	DefineCustomIntVariable("parca.max_profile_size",
							"Largest profile accepted, in bytes after decompression.",
							"Larger profiles, and gzip data that would inflate past this, are refused.",
							&parca_max_profile_size,
							64 * 1024 * 1024,
							1024, INT_MAX,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);
}

PG_FUNCTION_INFO_V1(parca_ingest_pprof);
PG_FUNCTION_INFO_V1(parca_series_id);

/*
 * What the samples with one list of pprof labels share.  Entries are
 * keyed by a hash of the label list; "labels" is (key, str, num,
 * num_unit) per label.  Two tables use it: one keyed by the string
 * labels alone (they name the series), one by all labels (the numeric
 * ones become num_labels).
 */
typedef struct LabelSetEntry
{
	uint64		hash;			/* hash key */
	int			nlabels;
	int64	   *labels;
	int64	   *series_ids;		/* per sample type */
	Datum		num_labels;		/* jsonb, or 0 for none */
} LabelSetEntry;

typedef struct IngestState
{
	const Pprof *p;
	LabelPair  *base;
	int			nbase;
	char	  **profile_types;	/* per sample type */
	HTAB	   *series_sets;	/* string labels -> series_ids */
	HTAB	   *num_label_sets;	/* all labels -> num_labels */
} IngestState;

static uint64
address_normalized(const Perftools__Profiles__Mapping *m, uint64 address)
{
	if (m == NULL || address < m->memory_start || (m->memory_start == 0 && m->memory_limit == 0))
		return address;
	return address - m->memory_start + m->file_offset;
}

/*
 * Computes every location's id and registers mappings, functions and
 * locations.  Returns the location ids in the order of msg->location.
 */
static uint64 *
register_metadata(const Pprof *p)
{
	const PprofMessage *m = p->msg;
	MetaMapping *mappings = palloc(Max(m->n_mapping, 1) * sizeof(MetaMapping));
	MetaFunction *functions = palloc(Max(m->n_function, 1) * sizeof(MetaFunction));
	MetaLocation *locations = palloc(Max(m->n_location, 1) * sizeof(MetaLocation));
	uint64	   *location_ids = palloc(Max(m->n_location, 1) * sizeof(uint64));

	for (size_t i = 0; i < m->n_mapping; i++)
	{
		mappings[i].build_id = pprof_string(p, m->mapping[i]->build_id);
		mappings[i].file = pprof_string(p, m->mapping[i]->filename);
		mappings[i].id = parca_mapping_id(mappings[i].build_id, mappings[i].file);
	}
	for (size_t i = 0; i < m->n_function; i++)
	{
		const Perftools__Profiles__Function *f = m->function[i];

		functions[i].name = pprof_string(p, f->name);
		functions[i].system_name = pprof_string(p, f->system_name);
		functions[i].filename = pprof_string(p, f->filename);
		functions[i].start_line = f->start_line;
		functions[i].id = parca_function_id(functions[i].name, functions[i].system_name,
											functions[i].filename, f->start_line);
	}
	for (size_t i = 0; i < m->n_location; i++)
	{
		const Perftools__Profiles__Location *loc = m->location[i];
		MetaLocation *l = &locations[i];
		int			mi = loc->mapping_id ? pprof_id_lookup(p->mappings, loc->mapping_id) : -1;
		uint64	   *fids = palloc(Max(loc->n_line, 1) * sizeof(uint64));
		int64	   *lines = palloc(Max(loc->n_line, 1) * sizeof(int64));
		bool		has_build_id = mi >= 0 && mappings[mi].build_id[0] != '\0';

		for (size_t j = 0; j < loc->n_line; j++)
		{
			fids[j] = functions[pprof_id_lookup(p->functions, loc->line[j]->function_id)].id;
			lines[j] = loc->line[j]->line;
		}
		l->has_mapping = mi >= 0;
		l->mapping_id = mi >= 0 ? mappings[mi].id : 0;
		l->address = address_normalized(mi >= 0 ? m->mapping[mi] : NULL, loc->address);
		l->is_folded = loc->is_folded;
		l->nlines = (int) loc->n_line;
		l->function_ids = fids;
		l->lines = lines;
		l->id = parca_location_id(l->mapping_id, has_build_id, l->address,
								  l->nlines, fids, lines);
		location_ids[i] = l->id;
	}
	metastore_register(mappings, (int) m->n_mapping, functions, (int) m->n_function,
					   locations, (int) m->n_location);
	return location_ids;
}

static char *
profile_type_of(const Pprof *p, const char *name, size_t sample_type)
{
	const PprofMessage *m = p->msg;
	ProfileType type;

	type.name = name;
	type.sample_type = pprof_string(p, m->sample_type[sample_type]->type);
	type.sample_unit = pprof_string(p, m->sample_type[sample_type]->unit);
	type.period_type = m->period_type ? pprof_string(p, m->period_type->type) : "";
	type.period_unit = m->period_type ? pprof_string(p, m->period_type->unit) : "";
	type.delta = m->duration_nanos > 0;
	profile_type_field_validate(type.sample_type, "sample type");
	profile_type_field_validate(type.sample_unit, "sample unit");
	profile_type_field_validate(type.period_type, "period type");
	profile_type_field_validate(type.period_unit, "period unit");
	return profile_type_format(&type);
}

static Datum
num_labels_jsonb(const Pprof *p, const Perftools__Profiles__Sample *s)
{
	JsonbParseState *state = NULL;
	JsonbValue *result;
	bool		any = false;

	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	for (size_t i = 0; i < s->n_label; i++)
	{
		const Perftools__Profiles__Label *l = s->label[i];
		const char *unit = pprof_string(p, l->num_unit);
		JsonbValue	k,
					v;

		if (l->str != 0)
			continue;
		any = true;
		k.type = jbvString;
		k.val.string.val = (char *) pprof_string(p, l->key);
		k.val.string.len = strlen(k.val.string.val);
		pushJsonbValue(&state, WJB_KEY, &k);
		v.type = jbvNumeric;
		v.val.numeric = int64_to_numeric(l->num);
		if (unit[0] == '\0')
			pushJsonbValue(&state, WJB_VALUE, &v);
		else
		{
			JsonbValue	uk,
						uv,
						vk;

			vk.type = jbvString;
			vk.val.string.val = "value";
			vk.val.string.len = 5;
			uk.type = jbvString;
			uk.val.string.val = "unit";
			uk.val.string.len = 4;
			uv.type = jbvString;
			uv.val.string.val = (char *) unit;
			uv.val.string.len = strlen(unit);
			pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
			pushJsonbValue(&state, WJB_KEY, &vk);
			pushJsonbValue(&state, WJB_VALUE, &v);
			pushJsonbValue(&state, WJB_KEY, &uk);
			pushJsonbValue(&state, WJB_VALUE, &uv);
			pushJsonbValue(&state, WJB_END_OBJECT, NULL);
		}
	}
	result = pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	return any ? JsonbPGetDatum(JsonbValueToJsonb(result)) : (Datum) 0;
}

/*
 * The entry of this sample's label list in table; *created says whether
 * the caller must fill it.  string_only leaves numeric labels out.
 */
static LabelSetEntry *
label_set_entry(HTAB *table, const Perftools__Profiles__Sample *s, bool string_only,
				bool *created)
{
	int64	   *labels = palloc((s->n_label + 1) * 4 * sizeof(int64));
	int			n = 0;
	uint64		hash;
	LabelSetEntry *e;
	bool		found;

	for (size_t i = 0; i < s->n_label; i++)
	{
		if (string_only && s->label[i]->str == 0)
			continue;
		labels[4 * n] = s->label[i]->key;
		labels[4 * n + 1] = s->label[i]->str;
		labels[4 * n + 2] = s->label[i]->num;
		labels[4 * n + 3] = s->label[i]->num_unit;
		n++;
	}
	hash = parca_hash64(labels, n * 4 * sizeof(int64));
	e = hash_search(table, &hash, HASH_ENTER, &found);
	if (found && e->nlabels == n && memcmp(e->labels, labels, n * 4 * sizeof(int64)) == 0)
	{
		pfree(labels);
		*created = false;
		return e;
	}
	if (found)					/* a 64-bit collision: use a private entry */
		e = palloc0(sizeof(LabelSetEntry));
	e->nlabels = n;
	e->labels = labels;
	*created = true;
	return e;
}

/* The series of each sample type for this sample's string labels. */
static const int64 *
series_of(IngestState *st, const Perftools__Profiles__Sample *s)
{
	bool		created;
	LabelSetEntry *e = label_set_entry(st->series_sets, s, true, &created);
	const PprofMessage *m = st->p->msg;
	LabelPair  *pairs;
	int			n = 0;
	Jsonb	   *labels;

	if (!created)
		return e->series_ids;
	pairs = palloc((st->nbase + s->n_label + 1) * sizeof(LabelPair));
	for (int i = 0; i < st->nbase; i++)
		pairs[n++] = st->base[i];
	for (size_t i = 0; i < s->n_label; i++)
	{
		char	   *name;

		if (s->label[i]->str == 0)
			continue;
		name = label_name_sanitize(pprof_string(st->p, s->label[i]->key));
		if (name[0] == '\0')
			continue;
		pairs[n].name = name;
		pairs[n].value = pprof_string(st->p, s->label[i]->str);
		n++;
	}
	labels = labels_to_jsonb(pairs, n);
	e->series_ids = palloc(m->n_sample_type * sizeof(int64));
	for (size_t t = 0; t < m->n_sample_type; t++)
		e->series_ids[t] = metastore_series_id(st->profile_types[t], labels);
	return e->series_ids;
}

/* This sample's numeric labels as jsonb, or 0 when it has none. */
static Datum
num_labels_of(IngestState *st, const Perftools__Profiles__Sample *s)
{
	bool		created;
	LabelSetEntry *e;

	if (s->n_label == 0)
		return (Datum) 0;
	e = label_set_entry(st->num_label_sets, s, false, &created);
	if (created)
		e->num_labels = num_labels_jsonb(st->p, s);
	return e->num_labels;
}

static TimestampTz
profile_time(const PprofMessage *m)
{
	if (m->time_nanos == 0)
		return GetCurrentTransactionStartTimestamp();
	return (TimestampTz) (m->time_nanos / 1000) -
		(TimestampTz) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
}

/*
 * The rows of the samples, sample type by sample type: each type is a
 * series of its own, and a stripe whose rows come series by series lets a
 * query for one type skip the other types' chunk groups, and numbers its
 * stacks in the same order for every type (runs of consecutive dictionary
 * indexes), before VACUUM orders merged stripes (docs/columnar.md).
 */
static int64
write_samples(IngestState *st, const uint64 *location_ids)
{
	const PprofMessage *m = st->p->msg;
	uint64	   *frames = palloc(Max(STACKTRACE_MAX_FRAMES, 1) * sizeof(uint64));
	Size		n = Max(m->n_sample, 1);
	const int64 **series_ids = palloc(n * sizeof(int64 *));
	Datum	   *num_labels = palloc(n * sizeof(Datum));
	Datum	   *stacks = palloc0(n * sizeof(Datum));
	SamplesInsert *si = samples_insert_begin(profile_time(m), m->period,
											 Max(m->duration_nanos, 0));

	for (size_t i = 0; i < m->n_sample; i++)
	{
		const Perftools__Profiles__Sample *s = m->sample[i];

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (s->n_location_id > STACKTRACE_MAX_FRAMES)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("sample %zu has %zu frames, more than the limit of %d",
							i, s->n_location_id, STACKTRACE_MAX_FRAMES)));
		series_ids[i] = series_of(st, s);
		num_labels[i] = num_labels_of(st, s);
	}
	for (size_t t = 0; t < m->n_sample_type; t++)
		for (size_t i = 0; i < m->n_sample; i++)
		{
			const Perftools__Profiles__Sample *s = m->sample[i];

			if ((i & 1023) == 0)
				CHECK_FOR_INTERRUPTS();
			if (s->value[t] == 0)
				continue;
			if (stacks[i] == (Datum) 0)
			{
				for (size_t j = 0; j < s->n_location_id; j++)
					frames[j] = location_ids[pprof_id_lookup(st->p->locations, s->location_id[j])];
				stacks[i] = PointerGetDatum(stacktrace_from_frames(frames, (int) s->n_location_id));
			}
			samples_insert_add(si, series_ids[i][t], stacks[i], s->value[t], num_labels[i]);
		}
	return samples_insert_end(si);
}

/*
 * An ingest allocates a few MB and frees them all at the end.  glibc
 * returns freed memory at the top of the heap to the kernel, and serves
 * requests above its mmap threshold with fresh mappings, so each profile
 * faults the same pages in again: a quarter of a warm ingest's time
 * (bench/ingest.sh, "warm").  A backend that ingests keeps up to 16 MB of
 * freed heap for its next profile instead; backends that never ingest are
 * left as they are.
 */
static void
keep_freed_memory_for_next_profile(void)
{
	static bool done = false;

	if (done)
		return;
	mallopt(M_MMAP_THRESHOLD, 16 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 16 * 1024 * 1024);
	done = true;
}

Datum
parca_ingest_pprof(PG_FUNCTION_ARGS)
{
	bytea	   *data;
	char	   *name;
	MemoryContext work,
				old;
	IngestState st;
	uint64	   *location_ids;
	int64		nrows;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("parca_ingest_pprof needs a profile and a name")));
	data = PG_GETARG_BYTEA_PP(0);
	name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	profile_name_validate(name);
	keep_freed_memory_for_next_profile();

	work = AllocSetContextCreate(CurrentMemoryContext, "parca ingest", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	memset(&st, 0, sizeof(st));
	if (!PG_ARGISNULL(2))
		st.base = labels_from_jsonb(PG_GETARG_JSONB_P(2), &st.nbase, "the labels argument");
	st.p = pprof_decode(VARDATA_ANY(data), VARSIZE_ANY_EXHDR(data),
						 (Size) parca_max_profile_size);
	st.profile_types = palloc(Max(st.p->msg->n_sample_type, 1) * sizeof(char *));
	for (size_t t = 0; t < st.p->msg->n_sample_type; t++)
		st.profile_types[t] = profile_type_of(st.p, name, t);
	st.series_sets = keyed_table_create("parca ingest series", 64, sizeof(uint64),
									   sizeof(LabelSetEntry), work);
	st.num_label_sets = keyed_table_create("parca ingest numeric labels", 64, sizeof(uint64),
										  sizeof(LabelSetEntry), work);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	location_ids = register_metadata(st.p);
	nrows = write_samples(&st, location_ids);
	SPI_finish();

	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	PG_RETURN_INT64(nrows);
}

/*
 * parca_series_id(profile_type, labels): the id of a series, created if
 * new.  For writers that COPY samples themselves (the agent).
 */
Datum
parca_series_id(PG_FUNCTION_ARGS)
{
	char	   *profile_type = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ProfileType parsed;
	LabelPair  *pairs;
	int			npairs;
	int64		id;

	profile_type_parse_or_error(profile_type, &parsed);
	pairs = labels_from_jsonb(PG_GETARG_JSONB_P(1), &npairs, "the labels argument");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	id = metastore_series_id(profile_type, labels_to_jsonb(pairs, npairs));
	SPI_finish();
	PG_RETURN_INT64(id);
}
