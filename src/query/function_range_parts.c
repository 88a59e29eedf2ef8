/*
 * function_range_parts.c
 *		Which parts of parca_function_range's buckets are read from the
 *		rollups and which from raw rows (function_range_internal.h), as
 *		parca_query over each bucket would read them.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "query/function_range_internal.h"
#include "query/rollup_ranges.h"
#include "maintenance/rollups.h"

static int
cmp_part(const void *a, const void *b)
{
	const Part *x = a;
	const Part *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The buckets that hold a whole period listed in a rollup list the caller
 * may read (only there can rollup_ranges cut a bucket), sorted.  The
 * caller is connected to SPI.
 */
static TimestampTz *
rolled_buckets(FunctionRange *fr, int *n)
{
	static const struct
	{
		const char *list;
		const char *table;
		const char *width;
	}			levels[] = {
		{"rollup_hours", "samples_hourly", "1 hour"},
		{"rollup_days", "samples_daily", "24 hours"},
		{"rollup_weeks", "samples_weekly", "168 hours"},
	};
	StringInfoData q;
	Oid			nsp = get_namespace_oid("parca", false);
	TimestampTz *times;
	int			ret;

	*n = 0;
	if (!parca_rollups)
		return NULL;
	initStringInfo(&q);
	for (int i = 0; i < lengthof(levels); i++)
	{
		Oid			list = get_relname_relid(levels[i].list, nsp);
		Oid			table = get_relname_relid(levels[i].table, nsp);

		if (!OidIsValid(list) || !OidIsValid(table) ||
			pg_class_aclcheck(list, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
			continue;
		appendStringInfo(&q, "%sSELECT start, interval '%s' AS w FROM parca.%s",
						 q.len ? " UNION ALL " : "", levels[i].width, levels[i].list);
	}
	if (q.len == 0)
		return NULL;
	ret = SPI_execute_with_args(psprintf("SELECT DISTINCT pg_catalog.date_bin($3, p.start, $4) FROM (%s) p"
										 " WHERE p.start OPERATOR(pg_catalog.>=) $1"
										 " AND p.start OPERATOR(pg_catalog.+) p.w OPERATOR(pg_catalog.-) interval '1 microsecond' OPERATOR(pg_catalog.<=) $2"
										 " AND pg_catalog.date_bin($3, p.start, $4) OPERATOR(pg_catalog.=)"
										 " pg_catalog.date_bin($3, p.start OPERATOR(pg_catalog.+) p.w OPERATOR(pg_catalog.-) interval '1 microsecond', $4)"
										 " ORDER BY 1", q.data),
								4, (Oid[]) {TIMESTAMPTZOID, TIMESTAMPTZOID, INTERVALOID, TIMESTAMPTZOID},
								(Datum[]) {TimestampTzGetDatum(fr->start), TimestampTzGetDatum(fr->stop),
								IntervalPGetDatum(fr->step), TimestampTzGetDatum(fr->origin)},
								NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(ret));
	*n = (int) SPI_processed;
	times = palloc(sizeof(TimestampTz) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		bool		isnull;

		times[i] = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i],
													 SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	return times;
}

/*
 * The raw rows to read: [start, stop] but where a part read from rollups
 * lies within an hour whose sums parca_query_range reads (there raw rows
 * neither count nor list a bucket).  Sorted, disjoint, inclusive.
 */
Part *
function_range_raw_regions(FunctionRange *fr, RollupTable *tables, int ntables, int *nregions)
{
	int			nrolled = 0;
	Part	   *rolled;
	Part	   *skip;
	int			nskip = 0;
	Part	   *regions;
	int			n = 0;
	TimestampTz cursor = fr->start;
	int			h = 0;

	for (int i = 0; i < ntables; i++)
		nrolled += tables[i].nparts;
	rolled = palloc(sizeof(Part) * Max(nrolled, 1));
	nrolled = 0;
	for (int i = 0; i < ntables; i++)
		for (int j = 0; j < tables[i].nparts; j++)
			rolled[nrolled++] = tables[i].parts[j];
	qsort(rolled, nrolled, sizeof(Part), cmp_part);

	/* rolled parts intersected with the summed hours */
	skip = palloc(sizeof(Part) * (nrolled + fr->nsum_hours + 1));
	for (int i = 0; i < nrolled; i++)
	{
		while (h < fr->nsum_hours && fr->sum_hours[h] + USECS_PER_HOUR - 1 < rolled[i].start)
			h++;
		for (int j = h; j < fr->nsum_hours && fr->sum_hours[j] <= rolled[i].stop; j++)
		{
			TimestampTz a = Max(fr->sum_hours[j], rolled[i].start);
			TimestampTz b = Min(fr->sum_hours[j] + USECS_PER_HOUR - 1, rolled[i].stop);

			if (nskip > 0 && skip[nskip - 1].stop + 1 == a)
				skip[nskip - 1].stop = b;
			else
			{
				skip[nskip].start = a;
				skip[nskip++].stop = b;
			}
		}
	}
	regions = palloc(sizeof(Part) * (nskip + 1));
	for (int i = 0; i < nskip; i++)
	{
		if (skip[i].start > cursor)
		{
			regions[n].start = cursor;
			regions[n++].stop = skip[i].start - 1;
		}
		cursor = skip[i].stop + 1;
	}
	if (nskip == 0 || skip[nskip - 1].stop < fr->stop)
	{
		regions[n].start = cursor;
		regions[n++].stop = fr->stop;
	}
	*nregions = n;
	return regions;
}

/*
 * Cuts the buckets that hold whole rolled-up periods as parca_query would
 * (rollup_ranges): their raw parts kept with them, their rollup parts
 * added to the tables read.  The caller is connected to SPI.
 */
RollupTable *
function_range_cut_buckets(FunctionRange *fr, int *ntables)
{
	int			nrolled;
	TimestampTz *rolled = rolled_buckets(fr, &nrolled);
	RollupTable *tables = palloc0(sizeof(RollupTable) * 3);

	*ntables = 0;
	for (int i = 0; i < nrolled; i++)
	{
		int			b = function_range_bucket_index(fr, rolled[i]);
		Bucket	   *k;
		ListCell   *lc;
		List	   *ranges;

		CHECK_FOR_INTERRUPTS();
		k = &fr->buckets[b];
		/* (the retention NOTICE is raised once, for the buckets listed) */
		ranges = rollup_ranges(k->lo, k->hi, NULL);
		k = &fr->buckets[b];
		k->cut = true;
		k->first_raw = fr->nraw_parts;
		foreach(lc, ranges)
		{
			QueryRange *r = lfirst(lc);
			Part		p = {r->start, r->stop, b};

			if (r->raw)
			{
				if (fr->nraw_parts == fr->raw_parts_cap)
				{
					fr->raw_parts_cap *= 2;
					fr->raw_parts = repalloc_huge(fr->raw_parts, sizeof(Part) * fr->raw_parts_cap);
				}
				fr->raw_parts[fr->nraw_parts++] = p;
				k->nraw++;
			}
			else
			{
				RollupTable *t = NULL;

				for (int j = 0; j < *ntables; j++)
					if (tables[j].relid == r->relid)
						t = &tables[j];
				if (t == NULL)
				{
					if (*ntables == 3)
						elog(ERROR, "more rollup tables than levels");
					t = &tables[(*ntables)++];
					t->relid = r->relid;
					t->cap = 16;
					t->parts = palloc(sizeof(Part) * t->cap);
				}
				if (t->nparts == t->cap)
				{
					t->cap *= 2;
					t->parts = repalloc_huge(t->parts, sizeof(Part) * t->cap);
				}
				t->parts[t->nparts++] = p;
			}
		}
	}
	for (int j = 0; j < *ntables; j++)
		qsort(tables[j].parts, tables[j].nparts, sizeof(Part), cmp_part);
	return tables;
}

/*
 * parca_query's NOTICE when a bucket listed reads raw rows from before
 * parca.retention, once for the call (the merge of each bucket raised it
 * for each).
 */
void
function_range_retention_notice(FunctionRange *fr)
{
	QueryRange	earliest = {DT_NOEND, DT_NOEND, InvalidOid, "parca.samples", true};

	for (int b = 0; b < fr->nbuckets; b++)
	{
		const Bucket *k = &fr->buckets[b];

		if (!k->listed)
			continue;
		if (!k->cut)
			earliest.start = Min(earliest.start, k->lo);
		for (int i = 0; k->cut && i < k->nraw; i++)
			earliest.start = Min(earliest.start, fr->raw_parts[k->first_raw + i].start);
	}
	if (earliest.start != DT_NOEND)
		rollup_ranges_notice(list_make1(&earliest), "parca_function_range");
}
