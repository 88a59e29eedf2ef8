/*
 * top.c
 *		parca_top(): the table of `go tool pprof -top`.
 *
 * Per function name: flat is the value of the stacks whose innermost
 * frame is that function, cum the value of the stacks that contain it at
 * least once (recursion counts once).  Names are pprof's at its default
 * "functions" granularity: inlined functions are rows of their own and
 * unsymbolized addresses of one binary merge into "[binary]".  Rows come
 * in pprof's order: larger |flat| first, then by name.  Percentages are of
 * the sum of absolute sample values; for a diff profile flat and cum are
 * compared minus base and percentages are of the base's total, as with
 * `go tool pprof -diff_base`.
 */
#include "postgres.h"

#include "common/int.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "metastore/metastore_read.h"
#include "query/grow_array.h"
#include "query/name_filter.h"
#include "query/symbols.h"
#include "types/profile.h"
#include "types/valid_text.h"

typedef struct TopRow
{
	int			name;
	int64		flat;
	int64		cum;
	int64		stamp;			/* last stack that added to cum */
} TopRow;

static const Symbols *sort_syms;

/* |v|, defined for PG_INT64_MIN too */
static inline uint64
magnitude(int64 v)
{
	return v < 0 ? -(uint64) v : (uint64) v;
}

static void
value_out_of_range(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("profile value out of range: a difference or absolute value exceeds 64 bits")));
}

static int
cmp_top(const void *a, const void *b)
{
	const TopRow *x = a;
	const TopRow *y = b;
	int			c;

	if (magnitude(x->flat) != magnitude(y->flat))
		return magnitude(x->flat) > magnitude(y->flat) ? -1 : 1;
	c = strcmp(sort_syms->names.strings[x->name], sort_syms->names.strings[y->name]);
	if (c != 0)
		return c;
	if (magnitude(x->cum) != magnitude(y->cum))
		return magnitude(x->cum) > magnitude(y->cum) ? -1 : 1;
	return 0;
}

/*
 * Per function name of the profile (those filter wants, all without one):
 * flat and cum, in pprof's order; *total is the sum of absolute values.
 */
static TopRow *
top_rows(Symbols *syms, struct varlena *profile, NameFilter *filter, int *nrows_out,
		 int64 *total_out)
{
	ProfileReader r;
	ProfileSample s;
	TopRow	   *rows;
	int			maxrows;
	int64		total = 0;
	int64		stack_no = 0;
	int			nrows = 0;

	/* Rows indexed by name; names are interned densely from 0. */
	maxrows = Max(syms->names.n, 1) + 64;
	rows = palloc0(sizeof(TopRow) * maxrows);
	for (int i = 0; i < maxrows; i++)
		rows[i].stamp = -1;

	profile_reader_init(&r, profile);
	while (profile_reader_next(&r, &s))
	{
		int64		v = s.value;
		bool		leaf = true;

		CHECK_FOR_INTERRUPTS();
		/* a diff shows compared - base; its percentages are of the base */
		if (r.meta.is_diff && pg_sub_s64_overflow(s.value_right, s.value, &v))
			value_out_of_range();
		if (s.value == PG_INT64_MIN)
			value_out_of_range();
		profile_value_add(&total, Abs(s.value));
		stack_no++;
		for (int i = 0; i < s.nframes; i++)
		{
			const SymLocation *loc = symbols_location(syms, profile_sample_frame(&s, i));

			for (int k = 0; k < loc->nframes; k++)
			{
				int			name = loc->top_names[k];
				bool		innermost = leaf;

				leaf = false;
				if (filter && !name_filter_wants(filter, syms, name))
					continue;
				if (name >= maxrows)
				{
					int			old = maxrows;

					maxrows = grow_cap(maxrows, (int64) name + 1, 0);
					rows = repalloc(rows, sizeof(TopRow) * maxrows);
					memset(rows + old, 0, sizeof(TopRow) * (maxrows - old));
					for (int j = old; j < maxrows; j++)
						rows[j].stamp = -1;
				}
				if (innermost)
					profile_value_add(&rows[name].flat, v);
				if (rows[name].stamp != stack_no)
				{
					rows[name].stamp = stack_no;
					profile_value_add(&rows[name].cum, v);
				}
			}
		}
	}

	/* Keep the names that occurred, then order them as pprof does. */
	for (int i = 0; i < maxrows; i++)
	{
		if (rows[i].stamp < 0)
			continue;
		rows[i].name = i;
		rows[nrows++] = rows[i];
	}
	sort_syms = syms;
	qsort(rows, nrows, sizeof(TopRow), cmp_top);
	*nrows_out = nrows;
	*total_out = total;
	return rows;
}

/*
 * What a call site of parca_function_values keeps for the calls of the
 * rest of the query (in fn_extra): parca_function_range's SQL path calls
 * it for many profiles (one per bucket) whose locations, and so names, are mostly the
 * same.  (Not parca_top: a name's file is the one it was first seen with,
 * which must come from the profile ranked, not from an earlier one.)
 */
typedef struct TopCache
{
	Symbols    *syms;
	NameFilter *filter;			/* the last call's */
} TopCache;

static TopCache *
top_cache(FunctionCallInfo fcinfo, struct varlena *profile)
{
	TopCache   *cache = fcinfo->flinfo->fn_extra;

	if (cache == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		cache = palloc0(sizeof(TopCache));
		cache->syms = symbols_create();
		fcinfo->flinfo->fn_extra = cache;
		MemoryContextSwitchTo(old);
	}
	symbols_add_profile(cache->syms, profile);
	return cache;
}

PG_FUNCTION_INFO_V1(parca_top);

Datum
parca_top(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	struct varlena *profile;
	Symbols    *syms;
	TopRow	   *rows;
	int			nrows;
	int64		total;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0))
		PG_RETURN_VOID();
	profile = PG_GETARG_PROFILE_P(0);
	syms = symbols_load(profile);
	rows = top_rows(syms, profile, NULL, &nrows, &total);

	for (int i = 0; i < nrows; i++)
	{
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};

		values[0] = CStringGetTextDatum(syms->names.strings[rows[i].name]);
		values[1] = CStringGetTextDatum(syms->file[rows[i].name]);
		values[2] = Int64GetDatum(rows[i].flat);
		values[3] = Float8GetDatum(total ? 100.0 * rows[i].flat / total : 0.0);
		values[4] = Int64GetDatum(rows[i].cum);
		values[5] = Float8GetDatum(total ? 100.0 * rows[i].cum / total : 0.0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_VOID();
}

/*
 * parca_function_values(profile, function_name, match): the rows of
 * parca_top whose function name matches (equal, contains, starts_with or
 * their negations), without naming and ranking the others; the core of
 * parca_function_range where it merges with SQL (row-level security),
 * once per bucket.
 */
PG_FUNCTION_INFO_V1(parca_function_values);

Datum
parca_function_values(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	struct varlena *profile = PG_GETARG_PROFILE_P(0);
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	char	   *match = text_to_cstring(PG_GETARG_TEXT_PP(2));
	TopCache   *cache;
	NameFilter *filter;
	TopRow	   *rows;
	int			nrows;
	int64		total;

	InitMaterializedSRF(fcinfo, 0);
	cache = top_cache(fcinfo, profile);
	if (cache->filter == NULL || !name_filter_is(cache->filter, name, match))
	{
		if (cache->filter)
			name_filter_free(cache->filter);
		cache->filter = NULL;
		cache->filter = name_filter_create(fcinfo->flinfo->fn_mcxt, name, match);
	}
	filter = cache->filter;
	rows = top_rows(cache->syms, profile, filter, &nrows, &total);
	for (int i = 0; i < nrows; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		values[0] = CStringGetTextDatum(cache->syms->names.strings[rows[i].name]);
		values[1] = Int64GetDatum(rows[i].flat);
		values[2] = Int64GetDatum(rows[i].cum);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_VOID();
}
