/*
 * exec.c
 *		parca_query(): merging the samples a selector picks in a time range.
 *
 * The selector is resolved against parca.series first (a small table),
 * giving the set of series ids.  The samples are then merged by one
 * aggregate query (parca_merge, in C) whose WHERE clause carries the time
 * range and the series ids, so that the planner can push them into the
 * scan (a columnar scan skipping chunks by time) and run the merge in
 * parallel workers.
 * samples:count types are reported in the period unit, value x period,
 * as Parca does, and the result's profile type says so.  A period of 0
 * means unknown: such rows keep their counts, and a result made only of
 * them keeps the samples:count type.
 *
 * Grouping by labels puts one synthetic root frame per label value
 * combination above each stack, e.g. `comm="postgres"`.  These frames are
 * registered in the metastore like any other (a function of that name in
 * a location without mapping; ids are content hashes, so registering is
 * idempotent), so every consumer of profiles shows them; in a read-only
 * transaction they are only known to this session.
 *
 * Stack filters are applied to the merged profile's distinct stacks, not
 * to every row: the locations whose function name (or binary) contains
 * the given text, case-insensitively, are found in the metastore, then
 * stacks are kept or dropped by whether they contain one.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type_d.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "ids/ids.h"
#include "metastore.h"
#include "metastore_read.h"
#include "parca.h"
#include "profile.h"
#include "query/merge_scan.h"
#include "query/rollup_ranges.h"
#include "query/selector.h"
#include "query/symbols.h"
#include "stacktrace.h"

/*
 * The type of sample counts scaled by the period:
 * name:samples:count:pt:pu[:delta] -> name:pt:pu:pt:pu[:delta].
 */
static char *
period_unit_type(const ProfileType *type)
{
	ProfileType scaled = *type;

	scaled.sample_type = type->period_type;
	scaled.sample_unit = type->period_unit;
	return profile_type_format(&scaled);
}

/*
 * Registers the synthetic root frame for one group and returns its
 * location id.  The caller is connected to SPI.
 */
static uint64
group_location(const char *label)
{
	MetaFunction fn;
	MetaLocation loc;
	int64		line = 0;

	fn.id = parca_function_id(label, "", "", 0);
	fn.name = label;
	fn.system_name = "";
	fn.filename = "";
	fn.start_line = 0;
	memset(&loc, 0, sizeof(loc));
	loc.id = parca_location_id(0, false, 0, 1, &fn.id, &line);
	loc.nlines = 1;
	loc.function_ids = &fn.id;
	loc.lines = &line;

	/* Named here for readers within this statement, whose snapshot is older. */
	symbols_name_frame(loc.id, label);
	if (!XactReadOnly && !RecoveryInProgress())
		metastore_register(NULL, 0, &fn, 1, &loc, 1);
	return loc.id;
}

/* Label of a group: `a="x", b="y"` for the grouping labels' values. */
static char *
group_label(List *names, char **values)
{
	StringInfoData buf;
	ListCell   *lc;
	int			i = 0;

	initStringInfo(&buf);
	foreach(lc, names)
	{
		appendStringInfo(&buf, "%s%s=\"%s\"", i ? ", " : "", (char *) lfirst(lc), values[i]);
		i++;
	}
	return buf.data;
}

/*
 * Adds the samples of the given series in one part of the range (raw rows
 * or rollups, rollup_ranges.h) to b, with the
 * group's root frame on top of each stack when grouping (groups[i] is the
 * group of series[i]).  Without grouping, a parca_columnar samples table
 * is read directly (merge_scan.c).  Otherwise the merge is one aggregate
 * query, parca_merge
 * over the samples table, planned like any other: the time range and the
 * series reach whatever scan the table's access method offers (a columnar
 * scan that skips chunks by time), and on a large table the planner runs
 * it in parallel workers, each merging its share in C, combined at the
 * end.  Grouping groups by the series' group, so that each group's stacks
 * are merged before their root frame is added here.  The caller is
 * connected to SPI.
 */
static void
scan_samples(ProfileBuilder *b, const SeriesMatch *series, const int32 *groups, int nseries,
			 const uint64 *group_frames, const QueryRange *range,
			 bool scale_by_period, MergePeriods *periods)
{
	TimestampTz start = range->start;
	TimestampTz stop = range->stop;
	const char *table = range->table;
	Datum	   *ids = palloc(sizeof(Datum) * nseries);
	Datum	   *grps = palloc(sizeof(Datum) * nseries);
	Oid			types[5] = {TIMESTAMPTZOID, TIMESTAMPTZOID, INT8ARRAYOID, BOOLOID, INT4ARRAYOID};
	Datum		args[5];
	uint64	   *buf = NULL;
	int			ret;
	char	   *merge;

	if (group_frames == NULL)
	{
		int64	   *series_ids = palloc(sizeof(int64) * nseries);

		for (int i = 0; i < nseries; i++)
			series_ids[i] = series[i].id;
		if (merge_scan_samples(b, range->relid, series_ids, nseries, start, stop,
							   scale_by_period, periods))
			return;
	}
	for (int i = 0; i < nseries; i++)
	{
		ids[i] = Int64GetDatum(series[i].id);
		grps[i] = Int32GetDatum(groups[i]);
	}
	args[0] = TimestampTzGetDatum(start);
	args[1] = TimestampTzGetDatum(stop);
	args[2] = PointerGetDatum(construct_array(ids, nseries, INT8OID, 8, true, TYPALIGN_DOUBLE));
	args[3] = BoolGetDatum(scale_by_period);
	args[4] = PointerGetDatum(construct_array(grps, nseries, INT4OID, 4, true, TYPALIGN_INT));

	/*
	 * Every name qualified: the caller's search_path may hold anything.  A
	 * period of 0 is unknown: the row keeps its count.
	 */
	merge = quote_qualified_identifier(parca_extension_schema(), "parca_merge");
	if (group_frames == NULL)
		ret = SPI_execute_with_args(psprintf("SELECT 0, %s(stack, CASE WHEN $4 AND period OPERATOR(pg_catalog.>) 0"
											 " THEN value OPERATOR(pg_catalog.*) period ELSE value END),"
											 " pg_catalog.min(period) FILTER (WHERE period OPERATOR(pg_catalog.>) 0),"
											 " pg_catalog.bool_or(period OPERATOR(pg_catalog.<=) 0)"
											 " FROM %s"
											 " WHERE time OPERATOR(pg_catalog.>=) $1 AND time OPERATOR(pg_catalog.<=) $2"
											 " AND series_id OPERATOR(pg_catalog.=) ANY ($3)", merge, table),
									4, types, args, NULL, true, 0);
	else
		ret = SPI_execute_with_args(psprintf("SELECT g.grp, %s(x.stack, CASE WHEN $4 AND x.period OPERATOR(pg_catalog.>) 0"
											 " THEN x.value OPERATOR(pg_catalog.*) x.period ELSE x.value END),"
											 " pg_catalog.min(x.period) FILTER (WHERE x.period OPERATOR(pg_catalog.>) 0),"
											 " pg_catalog.bool_or(x.period OPERATOR(pg_catalog.<=) 0)"
											 " FROM %s x JOIN ROWS FROM (pg_catalog.unnest($3), pg_catalog.unnest($5)) AS g(id, grp)"
											 " ON g.id OPERATOR(pg_catalog.=) x.series_id"
											 " WHERE x.time OPERATOR(pg_catalog.>=) $1 AND x.time OPERATOR(pg_catalog.<=) $2"
											 " AND x.series_id OPERATOR(pg_catalog.=) ANY ($3)"
											 " GROUP BY g.grp", merge, table),
									5, types, args, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(ret));

	if (group_frames)
		buf = palloc(sizeof(uint64) * (STACKTRACE_MAX_FRAMES + 1));
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		TupleDesc	desc = SPI_tuptable->tupdesc;
		HeapTuple	tup = SPI_tuptable->vals[row];
		bool		isnull;
		int32		group = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		Datum		merged = SPI_getbinval(tup, desc, 2, &isnull);
		Datum		known;
		Datum		unknown;
		ProfileReader r;
		ProfileSample smp;

		if (isnull)
			continue;			/* no rows in range */
		known = SPI_getbinval(tup, desc, 3, &isnull);
		if (!isnull && (periods->min_known == 0 || DatumGetInt64(known) < periods->min_known))
			periods->min_known = DatumGetInt64(known);
		unknown = SPI_getbinval(tup, desc, 4, &isnull);
		if (!isnull && DatumGetBool(unknown))
			periods->unknown_seen = true;
		profile_reader_init(&r, (struct varlena *) PG_DETOAST_DATUM(merged));
		while (profile_reader_next(&r, &smp))
		{
			if (group_frames == NULL)
			{
				profile_builder_add(b, smp.frames, smp.nframes, smp.value, 0);
				continue;
			}
			memcpy(buf, smp.frames, sizeof(uint64) * smp.nframes);
			buf[smp.nframes] = group_frames[group];
			profile_builder_add(b, (const char *) buf, smp.nframes + 1, smp.value, 0);
		}
	}
}

static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y;
}

/* Whether a sample has a frame in the sorted set (sorted as int64). */
static bool
sample_has_any(const ProfileSample *s, const uint64 *set, int n)
{
	for (int i = 0; i < s->nframes; i++)
	{
		int64		id = (int64) profile_sample_frame(s, i);

		if (bsearch(&id, set, n, sizeof(int64), cmp_int64))
			return true;
	}
	return false;
}

typedef struct StackFilter
{
	const char *needle;
	bool		binary;
	bool		keep;			/* keep stacks containing it, else drop them */
	uint64	   *set;
	int			n;
} StackFilter;

/*
 * The profile without the stacks the filters reject, allocated in cxt.
 * The caller is connected to SPI (whose calls switch to its own context).
 */
static struct varlena *
filter_profile(struct varlena *profile, StackFilter *filters, int nfilters,
			   MemoryContext cxt)
{
	int			nids;
	uint64	   *ids = profile_location_ids(profile, &nids);
	ProfileBuilder *b;
	ProfileReader r;
	ProfileSample s;

	for (int f = 0; f < nfilters; f++)
	{
		filters[f].set = metastore_locations_matching(ids, nids, filters[f].needle,
													  filters[f].binary, &filters[f].n);
		/* sorted as bigint, which is what bsearch uses */
	}

	MemoryContextSwitchTo(cxt);
	b = profile_builder_create(cxt);
	profile_reader_init(&r, profile);
	profile_builder_set_meta(b, &r.meta);
	while (profile_reader_next(&r, &s))
	{
		bool		pass = true;

		for (int f = 0; f < nfilters && pass; f++)
			pass = sample_has_any(&s, filters[f].set, filters[f].n) == filters[f].keep;
		if (pass)
			profile_builder_add(b, s.frames, s.nframes, s.value, s.value_right);
	}
	return profile_builder_finish(b);
}

PG_FUNCTION_INFO_V1(parca_query);

/*
 * parca_query(selector text, start timestamptz, stop timestamptz,
 *             group_by text[] DEFAULT NULL,
 *             keep_function text DEFAULT NULL, drop_function text DEFAULT NULL,
 *             keep_binary text DEFAULT NULL, drop_binary text DEFAULT NULL)
 *   RETURNS profile
 * The time range is inclusive at both ends.
 */
Datum
parca_query(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	   *sel_text;
	Selector   *sel;
	TimestampTz start;
	TimestampTz stop;
	List	   *group_names = NIL;
	SeriesMatch *series;
	int			nseries;
	int32	   *groups;
	uint64	   *group_frames = NULL;
	ProfileBuilder *b;
	ProfileMeta meta;
	bool		scale;
	MergePeriods periods = {0, false};
	StackFilter filters[4];
	int			nfilters = 0;
	struct varlena *result;
	int			ret;

	/* no selector or no range: nothing to merge (not STRICT: the rest may be NULL) */
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		PG_RETURN_NULL();
	sel_text = text_to_cstring(PG_GETARG_TEXT_PP(0));
	start = PG_GETARG_TIMESTAMPTZ(1);
	stop = PG_GETARG_TIMESTAMPTZ(2);
	sel = selector_parse(sel_text);
	selector_require_type(sel, sel_text);
	if (!PG_ARGISNULL(3))
	{
		Datum	   *elems;
		bool	   *nulls;
		int			n;

		deconstruct_array(PG_GETARG_ARRAYTYPE_P(3), TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, &nulls, &n);
		for (int i = 0; i < n; i++)
			if (!nulls[i])
				group_names = lappend(group_names, TextDatumGetCString(elems[i]));
	}
	for (int arg = 4; arg < 8; arg++)
	{
		if (PG_ARGISNULL(arg))
			continue;
		filters[nfilters].needle = text_to_cstring(PG_GETARG_TEXT_PP(arg));
		filters[nfilters].keep = (arg == 4 || arg == 6);
		filters[nfilters].binary = (arg >= 6);
		nfilters++;
	}

	SPI_connect();
	ret = SPI_execute_with_args("SELECT 1 FROM parca.series WHERE profile_type OPERATOR(pg_catalog.=) $1 LIMIT 1",
								1, (Oid[]) {TEXTOID},
								(Datum[]) {CStringGetTextDatum(sel->profile_type)},
								NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("unknown profile type \"%s\"", sel->profile_type),
				 errhint("SELECT * FROM parca_profile_types() lists the stored ones.")));

	series = selector_find_series(sel, group_names, &nseries);
	groups = palloc(sizeof(int32) * Max(nseries, 1));
	if (group_names != NIL)
	{
		/* one group per distinct label combination, in series order */
		char	  **labels = palloc(sizeof(char *) * Max(nseries, 1));
		int			ngroups = 0;

		group_frames = palloc(sizeof(uint64) * Max(nseries, 1));
		for (int i = 0; i < nseries; i++)
		{
			char	   *label = group_label(group_names, series[i].values);
			int			g;

			for (g = 0; g < ngroups; g++)
				if (strcmp(labels[g], label) == 0)
					break;
			if (g == ngroups)
			{
				labels[ngroups] = label;
				group_frames[ngroups++] = group_location(label);
			}
			groups[i] = g;
		}
	}
	else
		memset(groups, 0, sizeof(int32) * Max(nseries, 1));

	scale = profile_type_is_sample_count(&sel->type);
	b = profile_builder_create(cxt);
	if (nseries > 0)
	{
		ListCell   *lc;

		foreach(lc, rollup_ranges(start, stop, "parca_query"))
			scan_samples(b, series, groups, nseries, group_frames, lfirst(lc), scale, &periods);
	}
	MemoryContextSwitchTo(cxt);
	if (scale && periods.min_known > 0 && periods.unknown_seen)
		ereport(NOTICE,
				(errmsg("parca_query: some samples of \"%s\" have no period (0); their counts were added unscaled",
						sel->profile_type)));
	/* only rows without a period: the values are counts, and say so */
	meta.profile_type = scale && !(periods.unknown_seen && periods.min_known == 0) ?
		period_unit_type(&sel->type) : sel->profile_type;
	meta.period = periods.min_known;
	meta.is_diff = false;
	profile_builder_set_meta(b, &meta);
	result = profile_builder_finish(b);
	if (nfilters > 0)
		result = filter_profile(result, filters, nfilters, cxt);
	SPI_finish();
	PG_RETURN_POINTER(result);
}
