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

#include "profile.h"
#include "query/symbols.h"

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

PG_FUNCTION_INFO_V1(parca_top);

Datum
parca_top(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	struct varlena *profile;
	Symbols    *syms;
	ProfileReader r;
	ProfileSample s;
	TopRow	   *rows;
	int			maxrows;
	int64		total = 0;
	int64		stack_no = 0;
	int			nrows = 0;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0))
		PG_RETURN_VOID();
	profile = PG_GETARG_PROFILE_P(0);
	syms = symbols_load(profile);

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

				if (name >= maxrows)
				{
					int			old = maxrows;

					maxrows = Max(name + 1, maxrows * 2);
					rows = repalloc(rows, sizeof(TopRow) * maxrows);
					memset(rows + old, 0, sizeof(TopRow) * (maxrows - old));
					for (int j = old; j < maxrows; j++)
						rows[j].stamp = -1;
				}
				if (leaf)
				{
					profile_value_add(&rows[name].flat, v);
					leaf = false;
				}
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
