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
#include "common/int.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "installation/citus.h"
#include "ids/ids.h"
#include "types/labels.h"
#include "metastore/metastore.h"
#include "metastore/metastore_read.h"
#include "installation/extension_version.h"
#include "types/profile.h"
#include "query/merge_scan.h"
#include "query/rollup_ranges.h"
#include "query/selector.h"
#include "query/stack_filter.h"
#include "query/symbols.h"
#include "types/stacktrace.h"
#include "types/valid_text.h"

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

/*
 * Label of a group: `a="x", b="y"` for the grouping labels' values, each
 * quoted as in a selector, so that values holding quotes or commas cannot
 * make two groups look alike (nor share a frame).
 */
static char *
group_label(List *names, char **values)
{
	StringInfoData buf;
	ListCell   *lc;
	int			i = 0;

	initStringInfo(&buf);
	foreach(lc, names)
	{
		if (i > 0)
			appendStringInfoString(&buf, ", ");
		appendStringInfo(&buf, "%s=", (char *) lfirst(lc));
		selector_append_quoted(&buf, values[i], strlen(values[i]));
		i++;
	}
	return buf.data;
}

/*
 * Adds the stacks of a merged profile to b with frame on top of each
 * (buf: room for STACKTRACE_MAX_FRAMES + 1 frames).
 */
static void
add_under_frame(ProfileBuilder *b, const struct varlena *merged, uint64 frame, uint64 *buf)
{
	ProfileReader r;
	ProfileSample smp;

	profile_reader_init(&r, merged);
	while (profile_reader_next(&r, &smp))
	{
		memcpy(buf, smp.frames, sizeof(uint64) * smp.nframes);
		buf[smp.nframes] = frame;
		profile_builder_add(b, (const char *) buf, smp.nframes + 1, smp.value, 0);
	}
}

/*
 * Adds the samples of the given series in one part of the range (raw rows
 * or rollups, rollup_ranges.h) to b, with the
 * group's root frame on top of each stack when grouping (groups[i] is the
 * group of series[i], ngroups groups).  A parca_columnar samples table is
 * read directly (merge_scan.c), every group in one pass.  Otherwise the
 * merge is one aggregate query, parca_merge
 * over the samples table, planned like any other: the time range and the
 * series reach whatever scan the table's access method offers (a columnar
 * scan that skips chunks by time), and on a large table the planner runs
 * it in parallel workers, each merging its share in C, combined at the
 * end.  Grouping groups by the series' group, so that each group's stacks
 * are merged before their root frame is added here.  The caller is
 * connected to SPI, and ends *exiting (merge_scan_samples) before it runs
 * SQL.
 */
static void
scan_samples(ProfileBuilder *b, const SeriesMatch *series, const int32 *groups, int nseries,
			 const uint64 *group_frames, int ngroups, const QueryRange *range,
			 bool scale_by_period, MergePeriods *periods, struct ParallelContext **exiting)
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

	int64	   *series_ids = palloc(sizeof(int64) * nseries);

	for (int i = 0; i < nseries; i++)
		series_ids[i] = series[i].id;
	if (group_frames == NULL)
	{
		if (merge_scan_samples(&b, 1, range->relid, series_ids, NULL, nseries, start, stop,
							   scale_by_period, periods, exiting))
			return;
	}
	else
	{
		/* each group merged on its own in one pass, then put under its frame */
		ProfileBuilder **builders = palloc(sizeof(ProfileBuilder *) * ngroups);
		ProfileMeta meta = {"", 0, false};

		for (int g = 0; g < ngroups; g++)
		{
			builders[g] = profile_builder_create(CurrentMemoryContext);
			profile_builder_set_meta(builders[g], &meta);
		}
		if (merge_scan_samples(builders, ngroups, range->relid, series_ids, groups, nseries,
							   start, stop, scale_by_period, periods, NULL))
		{
			buf = palloc(sizeof(uint64) * (STACKTRACE_MAX_FRAMES + 1));
			for (int g = 0; g < ngroups; g++)
			{
				CHECK_FOR_INTERRUPTS();
				add_under_frame(b, profile_builder_finish(builders[g]), group_frames[g], buf);
			}
			return;
		}
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
	if (citus_table(range->relid))
	{
		/*
		 * Citus pushes an aggregate down to its workers only whole, grouped
		 * by the distribution column (series_id), or as partial states of a
		 * type it can ship, which parca_merge's (internal) is not; so each
		 * worker merges its series, and the coordinator merges those
		 * profiles (docs/scale-out.md).  The CTE is planned on its own, the
		 * rest on the coordinator.  Without groups, every group is 0.
		 */
		ret = SPI_execute_with_args(psprintf("WITH s AS MATERIALIZED ("
											 "SELECT series_id, %s(stack, CASE WHEN $4 AND period OPERATOR(pg_catalog.>) 0"
											 " THEN value OPERATOR(pg_catalog.*) period ELSE value END) AS p,"
											 " pg_catalog.min(period) FILTER (WHERE period OPERATOR(pg_catalog.>) 0) AS known,"
											 " pg_catalog.bool_or(period OPERATOR(pg_catalog.<=) 0) AS unknown"
											 " FROM %s"
											 " WHERE time OPERATOR(pg_catalog.>=) $1 AND time OPERATOR(pg_catalog.<=) $2"
											 " AND series_id OPERATOR(pg_catalog.=) ANY ($3)"
											 " GROUP BY series_id)"
											 " SELECT g.grp, parca.merge_profiles(s.p), pg_catalog.min(s.known),"
											 " pg_catalog.bool_or(s.unknown)"
											 " FROM s JOIN ROWS FROM (pg_catalog.unnest($3), pg_catalog.unnest($5)) AS g(id, grp)"
											 " ON g.id OPERATOR(pg_catalog.=) s.series_id"
											 " GROUP BY g.grp", merge, table),
									5, types, args, NULL, true, 0);
	}
	else if (group_frames == NULL)
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

		if (isnull)
			continue;			/* no rows in range */
		known = SPI_getbinval(tup, desc, 3, &isnull);
		if (!isnull && (periods->min_known == 0 || DatumGetInt64(known) < periods->min_known))
			periods->min_known = DatumGetInt64(known);
		unknown = SPI_getbinval(tup, desc, 4, &isnull);
		if (!isnull && DatumGetBool(unknown))
			periods->unknown_seen = true;
		if (group_frames == NULL)
			profile_builder_add_profile(b, (struct varlena *) PG_DETOAST_DATUM(merged));
		else
			add_under_frame(b, (struct varlena *) PG_DETOAST_DATUM(merged), group_frames[group], buf);
	}
}

/*
 * The profile of the given series in [start, stop] (inclusive), all of
 * profile type ptype (parsed: type), allocated in cxt: samples:count
 * scaled to the period unit where the period is known.  Whole rolled-up
 * hours and days come from the rollups (rollup_ranges.h).  caller names
 * the SQL function in messages.  The caller is connected to SPI.
 */
static struct varlena *
merge_series(const char *caller, const char *ptype, const ProfileType *type,
			 const SeriesMatch *series, const int32 *groups, int nseries,
			 const uint64 *group_frames, int ngroups, TimestampTz start, TimestampTz stop,
			 MemoryContext cxt)
{
	bool		scale = profile_type_is_sample_count(type);
	ProfileBuilder *b = profile_builder_create(cxt);
	MergePeriods periods = {0, false};
	ProfileMeta meta;
	struct ParallelContext *exiting = NULL;
	struct varlena *result;

	if (nseries > 0)
	{
		ListCell   *lc;

		foreach(lc, rollup_ranges(start, stop, caller))
		{
			/* the next part may run SQL, which parallel mode restricts */
			merge_scan_end_parallel(&exiting);
			scan_samples(b, series, groups, nseries, group_frames, ngroups, lfirst(lc), scale,
						 &periods, &exiting);
		}
	}
	MemoryContextSwitchTo(cxt);
	if (scale && periods.min_known > 0 && periods.unknown_seen)
		ereport(NOTICE,
				(errmsg("%s: some samples of %s have no period (0); their counts were added unscaled",
						caller, message_quote_cstring(ptype))));
	/* only rows without a period: the values are counts, and say so */
	meta.profile_type = scale && !(periods.unknown_seen && periods.min_known == 0) ?
		period_unit_type(type) : pstrdup(ptype);
	meta.period = periods.min_known;
	meta.is_diff = false;
	profile_builder_set_meta(b, &meta);
	/* the profile's bytes written while the last merge's workers exit */
	result = profile_builder_finish(b);
	merge_scan_end_parallel(&exiting);
	return result;
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
	text	   *sel_text;
	Selector   *sel;
	TimestampTz start;
	TimestampTz stop;
	List	   *group_names = NIL;
	SeriesMatch *series;
	int			nseries;
	int32	   *groups;
	uint64	   *group_frames = NULL;
	StackFilter filters[4];
	int			nfilters = 0;
	int			ngroups = 0;
	struct varlena *result;
	int			ret;

	/* no selector or no range: nothing to merge (not STRICT: the rest may be NULL) */
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		PG_RETURN_NULL();
	sel_text = PG_GETARG_TEXT_PP(0);
	start = PG_GETARG_TIMESTAMPTZ(1);
	stop = PG_GETARG_TIMESTAMPTZ(2);
	sel = selector_parse_text(sel_text);
	selector_require_type(sel, sel_text);
	if (!PG_ARGISNULL(3))
		group_names = label_names_from_array(PG_GETARG_ARRAYTYPE_P(3), SELECTOR_MAX_LABEL_NAMES,
											 "group_by");
	for (int arg = 4; arg < 8; arg++)
	{
		if (PG_ARGISNULL(arg))
			continue;
		filters[nfilters].text = text_to_cstring(PG_GETARG_TEXT_PP(arg));
		filters[nfilters].keep = (arg == 4 || arg == 6);
		filters[nfilters].field = arg >= 6 ? LOCATION_MAPPING_PATH : LOCATION_FUNCTION;
		filters[nfilters].match = NAME_CONTAINS_ANY_CASE;
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
				 errmsg("unknown profile type %s", message_quote_cstring(sel->profile_type)),
				 errhint("SELECT * FROM parca_profile_types() lists the stored ones.")));

	series = selector_find_series(sel, group_names, &nseries);
	groups = palloc(sizeof(int32) * Max(nseries, 1));
	if (group_names != NIL)
	{
		/* one group per distinct label combination, in series order */
		char	  **labels = palloc(sizeof(char *) * Max(nseries, 1));

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

	result = merge_series("parca_query", sel->profile_type, &sel->type, series, groups, nseries,
						  group_frames, ngroups, start, stop, cxt);
	if (nfilters > 0)
		result = stack_filter_apply(result, filters, nfilters, cxt);
	SPI_finish();
	PG_RETURN_POINTER(result);
}

PG_FUNCTION_INFO_V1(parca_profile);

/*
 * parca_profile(profile_id text) RETURNS profile
 * One profile on its own: the samples of one series at one instant.  A
 * profile is what one ingestion (or agent flush) wrote for a series, and
 * its rows all carry that profile's time to the microsecond; so the id is
 * "SERIES_ID@MICROSECONDS_SINCE_1970" (parca_profiles lists them), exact
 * where a time shown to the second, or Grafana's milliseconds, is not.
 * An id that names no stored profile gives an empty profile of the
 * series' type; an unknown series, NULL.
 */
Datum
parca_profile(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = CurrentMemoryContext;
	text	   *id_text = PG_GETARG_TEXT_PP(0);
	char	   *id;
	char	   *at;
	char	   *end;
	int64		series_id;
	int64		unix_us;
	TimestampTz t;
	SeriesMatch series;
	ProfileType type;
	int32		group = 0;
	bool		isnull;
	int			ret;
	struct varlena *result;

	/* two 64-bit integers and an @: a longer id is not read any further */
	if (VARSIZE_ANY_EXHDR(id_text) > 2 * 20 + 1)
		goto bad;
	id = text_to_cstring(id_text);
	at = strchr(id, '@');
	errno = 0;
	if (at == NULL || at == id || at[1] == '\0')
		goto bad;
	*at = '\0';
	series_id = strtoll(id, &end, 10);
	if (errno != 0 || *end != '\0' || series_id <= 0)
		goto bad;
	unix_us = strtoll(at + 1, &end, 10);
	if (errno != 0 || *end != '\0' ||
		pg_sub_s64_overflow(unix_us, (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY, &t) ||
		!IS_VALID_TIMESTAMP(t))
		goto bad;

	SPI_connect();
	ret = SPI_execute_with_args("SELECT profile_type FROM parca.series WHERE id OPERATOR(pg_catalog.=) $1",
								1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(series_id)},
								NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
	{
		SPI_finish();
		PG_RETURN_NULL();
	}
	series.id = series_id;
	series.profile_type = MemoryContextStrdup(cxt, TextDatumGetCString(SPI_getbinval(SPI_tuptable->vals[0],
																				  SPI_tuptable->tupdesc, 1, &isnull)));
	series.values = NULL;
	MemoryContextSwitchTo(cxt);
	profile_type_parse_or_error(series.profile_type, &type);
	result = merge_series("parca_profile", series.profile_type, &type, &series, &group, 1, NULL, 1,
						  t, t, cxt);
	SPI_finish();
	PG_RETURN_POINTER(result);

bad:
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid profile id %s", message_quote(VARDATA_ANY(id_text), VARSIZE_ANY_EXHDR(id_text))),
			 errhint("A profile id is SERIES_ID@MICROSECONDS_SINCE_1970, as parca_profiles() lists them.")));
	PG_RETURN_NULL();			/* not reached */
}
