/*
 * function_range.c
 *		parca_function_range's values in one pass over the range's rows.
 *
 * parca_function_range (sql/72_views.sql) reports, per step bucket, the
 * flat and cum of the functions whose name matches, as parca_top gives
 * them of parca_query over exactly the bucket, and the bucket's total.
 * Merging each bucket on its own reads the range once per bucket.  Here
 * the rows are read once (merge_scan_rows, the direct columnar read
 * parca_query uses) and each goes to its bucket by its time.  Flat and
 * cum are sums over the bucket's stacks, so a row adds its value to the
 * bucket's total and to the flat and cum of the matching functions of
 * its stack, once each however often a function occurs in it.  Which
 * functions those are is decided once per distinct stack of the call:
 * an entry of a stripe's dictionary (the stripe's distinct stacks) is
 * looked up once in the stacks seen, so a row costs a few additions.
 *
 * The parts of a bucket read from rollups are those parca_query reads for
 * it (rollup_ranges over the bucket): the buckets that hold a whole
 * rolled-up period are cut by rollup_ranges, every other bucket is raw
 * rows (function_range_parts.c).  Each table is then read once, over all
 * the parts it serves.
 *
 * The buckets reported are those parca_query_range lists (the caller
 * passes the hours parca_query_range reads from parca.profiles_hourly:
 * raw rows within them list no bucket, those with sums there do), each
 * with its values, 0 where it has none.  A table that cannot be read
 * directly (row-level security, no rights, not parca_columnar) gives one
 * row of NULLs: the caller then merges bucket by bucket with SQL.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "types/profile.h"
#include "types/profile_type.h"
#include "query/grow_array.h"
#include "query/function_range_internal.h"
#include "query/merge_scan.h"
#include "query/name_filter.h"
#include "query/rollup_ranges.h"
#include "query/selector.h"
#include "query/symbols.h"
#include "maintenance/rollups.h"
#include "metastore/samples_table.h"
#include "types/valid_text.h"

/* The index of bucket time b, made if new. */
static int
bucket_index(FunctionRange *fr, TimestampTz b)
{
	bool		found;
	BucketSlot *slot = bucketmap_insert(fr->bucket_map, b, &found);
	Bucket	   *k;
	TimestampTz end;

	if (found)
		return slot->index;
	if (fr->nbuckets == fr->bucket_cap)
	{
		fr->bucket_cap *= 2;
		fr->buckets = repalloc_huge(fr->buckets, sizeof(Bucket) * fr->bucket_cap);
	}
	slot->index = fr->nbuckets;
	k = &fr->buckets[fr->nbuckets++];
	memset(k, 0, sizeof(Bucket));
	k->time = b;
	/* as parca_function_range's SQL wrote it: [b, b + step) within [start, stop] */
	end = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(b),
												  IntervalPGetDatum(fr->step)));
	k->lo = Max(b, fr->start);
	k->hi = Min(end - 1, fr->stop);
	return slot->index;
}

int
function_range_bucket_index(FunctionRange *fr, TimestampTz b)
{
	return bucket_index(fr, b);
}

/* The bucket of a row's time: date_bin(step, t, origin). */
static inline int
bucket_of(FunctionRange *fr, TimestampTz t)
{
	TimestampTz b;

	if (likely(t >= fr->cached_from && t < fr->cached_until))
		return fr->cached;
	b = DatumGetTimestampTz(DirectFunctionCall3(timestamptz_bin, IntervalPGetDatum(fr->step),
												TimestampTzGetDatum(t),
												TimestampTzGetDatum(fr->origin)));
	fr->cached = bucket_index(fr, b);
	fr->cached_from = b;
	/* before the origin date_bin is not a plain division: no run kept */
	if (b >= fr->origin && b <= PG_INT64_MAX - fr->stride)
		fr->cached_until = b + fr->stride;
	else
		fr->cached_until = b;
	return fr->cached;
}

/* Whether t is in an hour whose sums parca_query_range reads. */
static inline bool
in_sum_hour(FunctionRange *fr, TimestampTz t)
{
	TimestampTz hour;
	int			lo = 0,
				hi = fr->nsum_hours - 1;

	if (fr->nsum_hours == 0 || TIMESTAMP_NOT_FINITE(t))
		return false;
	hour = t - ((t % USECS_PER_HOUR) + USECS_PER_HOUR) % USECS_PER_HOUR;
	if (hour == fr->cached_hour)
		return fr->cached_hour_summed;
	fr->cached_hour = hour;
	fr->cached_hour_summed = false;
	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (fr->sum_hours[mid] == hour)
		{
			fr->cached_hour_summed = true;
			break;
		}
		if (fr->sum_hours[mid] < hour)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return fr->cached_hour_summed;
}

/* The wanted index of syms name number name, or -1. */
static int
wanted_index(FunctionRange *fr, int name)
{
	if (name >= fr->wanted_of_name_cap)
	{
		int			n = grow_cap(fr->wanted_of_name_cap, (int64) name + 1, 0);

		fr->wanted_of_name = repalloc_huge(fr->wanted_of_name, sizeof(int) * n);
		for (int i = fr->wanted_of_name_cap; i < n; i++)
			fr->wanted_of_name[i] = -2;
		fr->wanted_of_name_cap = n;
	}
	if (fr->wanted_of_name[name] == -2)
	{
		if (!name_filter_wants(fr->filter, fr->syms, name))
			fr->wanted_of_name[name] = -1;
		else
		{
			if (fr->nwanted == fr->wanted_cap)
			{
				fr->wanted_cap *= 2;
				fr->wanted = repalloc_huge(fr->wanted, sizeof(int) * fr->wanted_cap);
				fr->stamp = repalloc_huge(fr->stamp, sizeof(int64) * fr->wanted_cap);
			}
			fr->wanted[fr->nwanted] = name;
			fr->stamp[fr->nwanted] = -1;
			fr->wanted_of_name[name] = fr->nwanted++;
		}
	}
	return fr->wanted_of_name[name];
}

static void
pool_push(FunctionRange *fr, int v)
{
	if (fr->info_len == fr->info_cap)
	{
		fr->info_cap *= 2;
		fr->info_pool = repalloc_huge(fr->info_pool, sizeof(int) * fr->info_cap);
	}
	fr->info_pool[fr->info_len++] = v;
}

/*
 * What a stack (its locations named) adds to, as top.c's parca_top
 * counts it: flat to the function of its innermost frame, cum to each
 * function in it once.
 */
static int
decide(FunctionRange *fr, const struct varlena *stack)
{
	const char *frames = VARDATA_ANY(stack);
	int			nframes = (int) (VARSIZE_ANY_EXHDR(stack) / sizeof(uint64));
	int			at = fr->info_len;
	bool		leaf = true;

	fr->stack_no++;
	pool_push(fr, 0);
	pool_push(fr, -1);
	for (int i = 0; i < nframes; i++)
	{
		uint64		id;
		const SymLocation *loc;

		memcpy(&id, frames + (Size) i * sizeof(uint64), sizeof(uint64));
		loc = symbols_location(fr->syms, id);
		for (int k = 0; k < loc->nframes; k++)
		{
			int			w = wanted_index(fr, loc->top_names[k]);
			bool		innermost = leaf;

			leaf = false;
			if (w < 0)
				continue;
			if (innermost)
				fr->info_pool[at + 1] = w;
			if (fr->stamp[w] != fr->stack_no)
			{
				fr->stamp[w] = fr->stack_no;
				pool_push(fr, w);
				fr->info_pool[at]++;
			}
		}
	}
	if (fr->info_pool[at] == 0)
	{
		fr->info_len = at;
		return INFO_NONE;
	}
	return at;
}

/*
 * The number of a stack; one seen for the first time is put on the
 * pending list (*npending of them), to be named and decided.
 */
static uint32
stack_number(FunctionRange *fr, char *stack, int *npending)
{
	const struct varlena *v = (const struct varlena *) stack;
	uint32		n = profile_builder_add(fr->stacks, VARDATA_ANY(v),
										(int) (VARSIZE_ANY_EXHDR(v) / sizeof(uint64)), 0, 0);

	if (n < fr->nstack_info)
		return n;
	if (n >= fr->stack_info_cap)
	{
		fr->stack_info_cap *= 2;
		fr->stack_info = repalloc_huge(fr->stack_info, sizeof(int) * fr->stack_info_cap);
	}
	fr->stack_info[n] = INFO_UNDECIDED;
	fr->nstack_info = n + 1;
	if (*npending == fr->pending_cap)
	{
		fr->pending_cap *= 2;
		fr->pending = repalloc_huge(fr->pending, sizeof(char *) * fr->pending_cap);
		fr->pending_stack = repalloc_huge(fr->pending_stack, sizeof(uint32) * fr->pending_cap);
	}
	fr->pending[*npending] = stack;
	fr->pending_stack[(*npending)++] = n;
	return n;
}

/* The pending stacks named (one query for their new locations) and decided. */
static void
decide_pending(FunctionRange *fr, int npending)
{
	if (npending == 0)
		return;
	symbols_add_stacks(fr->syms, fr->pending, npending);
	for (int i = 0; i < npending; i++)
		fr->stack_info[fr->pending_stack[i]] =
			decide(fr, (const struct varlena *) fr->pending[i]);
}

/* Adds v of a stack with info to bucket k. */
static inline void
bucket_add(FunctionRange *fr, Bucket *k, int info, int64 v)
{
	const int  *p;

	profile_value_add(&k->total, v);
	if (info == INFO_NONE)
		return;
	if (k->cap < fr->nwanted)
	{
		int			n = grow_cap(k->cap, fr->nwanted, 0);

		k->flat = grow_array(fr->cxt, k->flat, sizeof(int64), k->cap, n, 0);
		k->cum = grow_array(fr->cxt, k->cum, sizeof(int64), k->cap, n, 0);
		k->present = grow_array(fr->cxt, k->present, sizeof(bool), k->cap, n, 0);
		k->cap = n;
	}
	p = &fr->info_pool[info];
	if (p[1] >= 0)
		profile_value_add(&k->flat[p[1]], v);
	for (int i = 0; i < p[0]; i++)
	{
		k->present[p[2 + i]] = true;
		profile_value_add(&k->cum[p[2 + i]], v);
	}
}

/* The bucket a row counts in, or -1; lists its bucket when raw rows do. */
static inline int
row_bucket(FunctionRange *fr, TimestampTz t)
{
	if (fr->parts == NULL)
	{
		/* raw rows */
		int			b = bucket_of(fr, t);
		Bucket	   *k = &fr->buckets[b];

		if (!k->listed && !in_sum_hour(fr, t))
			k->listed = true;
		if (!k->cut)
			return t >= k->lo && t <= k->hi ? b : -1;
		for (int i = 0; i < k->nraw; i++)
		{
			const Part *p = &fr->raw_parts[k->first_raw + i];

			if (t >= p->start && t <= p->stop)
				return b;
		}
		return -1;
	}
	else
	{
		/* rollup rows: those in one of the table's parts */
		const Part *c = &fr->parts[fr->cached_part];
		int			lo = 0,
					hi = fr->nparts - 1;

		if (t >= c->start && t <= c->stop)
			return c->bucket;
		while (lo <= hi)
		{
			int			mid = lo + (hi - lo) / 2;

			if (t < fr->parts[mid].start)
				hi = mid - 1;
			else if (t > fr->parts[mid].stop)
				lo = mid + 1;
			else
			{
				fr->cached_part = mid;
				return fr->parts[mid].bucket;
			}
		}
		return -1;
	}
}

/* MergeRowSink: a chunk group's rows into their buckets. */
static void
add_rows(MergeRowSink *sink, const Datum *time, const int *sel, const int64 *values, int n,
		 const int64 *entry, bool new_stripe, char **dict, int ndict, const Datum *stack)
{
	FunctionRange *fr = (FunctionRange *) sink;
	int			npending = 0;

	CHECK_FOR_INTERRUPTS();
	if (entry == NULL)
	{
		/* no dictionary: each row's stack looked up on its own */
		uint32	   *numbers = palloc(sizeof(uint32) * Max(n, 1));

		for (int i = 0; i < n; i++)
			numbers[i] = stack_number(fr, DatumGetPointer(stack[sel[i]]), &npending);
		decide_pending(fr, npending);
		for (int i = 0; i < n; i++)
		{
			int			b = row_bucket(fr, DatumGetTimestampTz(time[sel[i]]));

			if (b >= 0)
				bucket_add(fr, &fr->buckets[b], fr->stack_info[numbers[i]], values[i]);
		}
		pfree(numbers);
		return;
	}
	if (new_stripe)
	{
		/* a new dictionary: its entries are looked up as rows use them */
		if (ndict > fr->entry_stack_cap)
		{
			fr->entry_stack_cap = grow_cap(fr->entry_stack_cap, ndict, 0);
			fr->entry_stack = repalloc_huge(fr->entry_stack, sizeof(int) * fr->entry_stack_cap);
		}
		for (int i = 0; i < ndict; i++)
			fr->entry_stack[i] = -1;
	}
	for (int i = 0; i < n; i++)
	{
		int64		e = entry[sel[i]];

		if (fr->entry_stack[e] < 0)
			fr->entry_stack[e] = (int) stack_number(fr, dict[e], &npending);
	}
	/* (the pending stacks are the dictionary's, valid during this call) */
	decide_pending(fr, npending);
	for (int i = 0; i < n; i++)
	{
		int			r = sel[i];
		int			b = row_bucket(fr, DatumGetTimestampTz(time[r]));

		if (b >= 0)
			bucket_add(fr, &fr->buckets[b], fr->stack_info[fr->entry_stack[entry[r]]], values[i]);
	}
}

static int
cmp_time(const void *a, const void *b)
{
	TimestampTz x = *(const TimestampTz *) a;
	TimestampTz y = *(const TimestampTz *) b;

	return x < y ? -1 : x > y;
}

/* The timestamps of a 1-D array without NULLs, sorted. */
static TimestampTz *
sorted_times(ArrayType *a, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	TimestampTz *times;
	int			count = 0;

	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("an array of hours must have one dimension")));
	deconstruct_array(a, TIMESTAMPTZOID, sizeof(TimestampTz), true, TYPALIGN_DOUBLE,
					  &elems, &nulls, n);
	times = palloc(sizeof(TimestampTz) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
		if (!nulls[i])
			times[count++] = DatumGetTimestampTz(elems[i]);
	qsort(times, count, sizeof(TimestampTz), cmp_time);
	*n = count;
	return times;
}

PG_FUNCTION_INFO_V1(parca_function_range_scan);

/*
 * parca.function_range_scan(selector text, start timestamptz,
 *     stop timestamptz, step interval, origin timestamptz,
 *     function_name text, match text, sum_hours timestamptz[],
 *     listed_hours timestamptz[])
 *   RETURNS TABLE("time" timestamptz, function text, flat bigint,
 *                 cum bigint, total bigint)
 * parca_function_range's rows, in no order: per bucket that
 * parca_query_range lists (sum_hours: the hours it reads from
 * parca.profiles_hourly; listed_hours: those of them that hold sums of
 * the selector's series) and per matching function found in any of them,
 * its flat and cum there (0 where absent) and the bucket's total.  One
 * row of NULLs when the rows cannot be read directly.
 */
Datum
parca_function_range_scan(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext cxt = CurrentMemoryContext;
	text	   *sel_text = PG_GETARG_TEXT_PP(0);
	FunctionRange *fr;
	Selector   *sel;
	SeriesMatch *series;
	int64	   *series_ids;
	int			nseries;
	TimestampTz *listed_hours;
	int			nlisted;
	RollupTable *tables;
	int			ntables;
	Part	   *regions;
	int			nregions;
	MergePeriods periods = {0, false};
	bool		scale;
	bool		direct = true;
	bool	   *used;

	InitMaterializedSRF(fcinfo, 0);
	fr = palloc0(sizeof(FunctionRange));
	fr->sink.rows = add_rows;
	fr->cxt = cxt;
	fr->start = PG_GETARG_TIMESTAMPTZ(1);
	fr->stop = PG_GETARG_TIMESTAMPTZ(2);
	fr->step = PG_GETARG_INTERVAL_P(3);
	fr->origin = PG_GETARG_TIMESTAMPTZ(4);
	if (fr->step->month != 0 || fr->step->day < 0 || fr->step->time < 0 ||
		(int128) fr->step->day * USECS_PER_DAY + fr->step->time <= 0 ||
		(int128) fr->step->day * USECS_PER_DAY + fr->step->time > PG_INT64_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("step must be positive, without months or years")));
	fr->stride = fr->step->day * USECS_PER_DAY + fr->step->time;
	fr->filter = name_filter_create(CurrentMemoryContext,
									text_to_cstring(PG_GETARG_TEXT_PP(5)),
									text_to_cstring(PG_GETARG_TEXT_PP(6)));
	fr->sum_hours = sorted_times(PG_GETARG_ARRAYTYPE_P(7), &fr->nsum_hours);
	listed_hours = sorted_times(PG_GETARG_ARRAYTYPE_P(8), &nlisted);
	if (fr->start > fr->stop)
		PG_RETURN_VOID();

	sel = selector_parse_text(sel_text);
	selector_require_type(sel, sel_text);
	scale = profile_type_is_sample_count(&sel->type);

	fr->bucket_map = bucketmap_create(CurrentMemoryContext, 256, NULL);
	fr->bucket_cap = 256;
	fr->buckets = palloc(sizeof(Bucket) * fr->bucket_cap);
	fr->cached_from = fr->cached_until = 0;
	fr->raw_parts_cap = 16;
	fr->raw_parts = palloc(sizeof(Part) * fr->raw_parts_cap);
	fr->cached_hour = DT_NOBEGIN;
	fr->syms = symbols_create();
	fr->wanted_cap = 16;
	fr->wanted = palloc(sizeof(int) * fr->wanted_cap);
	fr->stamp = palloc(sizeof(int64) * fr->wanted_cap);
	fr->wanted_of_name_cap = 1024;
	fr->wanted_of_name = palloc(sizeof(int) * fr->wanted_of_name_cap);
	for (int i = 0; i < fr->wanted_of_name_cap; i++)
		fr->wanted_of_name[i] = -2;
	fr->stacks = profile_builder_create(cxt);
	fr->stack_info_cap = 1024;
	fr->stack_info = palloc(sizeof(int) * fr->stack_info_cap);
	fr->entry_stack_cap = 1024;
	fr->entry_stack = palloc(sizeof(int) * fr->entry_stack_cap);
	fr->info_cap = 1024;
	fr->info_pool = palloc(sizeof(int) * fr->info_cap);
	fr->info_pool[0] = 0;		/* INFO_NONE: no function, no flat */
	fr->info_pool[1] = -1;
	fr->info_len = 2;
	fr->pending_cap = 1024;
	fr->pending = palloc(sizeof(char *) * fr->pending_cap);
	fr->pending_stack = palloc(sizeof(uint32) * fr->pending_cap);

	SPI_connect();
	/* what is kept is made in the caller's context, not SPI's */
	MemoryContextSwitchTo(cxt);
	series = selector_find_series(sel, NIL, &nseries);
	if (nseries == 0)
	{
		SPI_finish();
		PG_RETURN_VOID();
	}
	series_ids = palloc(sizeof(int64) * nseries);
	for (int i = 0; i < nseries; i++)
		series_ids[i] = series[i].id;

	tables = function_range_cut_buckets(fr, &ntables);
	regions = function_range_raw_regions(fr, tables, ntables, &nregions);
	for (int i = 0; i < nregions && direct; i++)
		direct = merge_scan_rows(&fr->sink, samples_table_relid(), series_ids, nseries,
								 regions[i].start, regions[i].stop, scale, &periods);
	for (int i = 0; i < ntables && direct; i++)
	{
		fr->parts = tables[i].parts;
		fr->nparts = tables[i].nparts;
		fr->cached_part = 0;
		direct = merge_scan_rows(&fr->sink, tables[i].relid, series_ids, nseries,
								 tables[i].parts[0].start,
								 tables[i].parts[tables[i].nparts - 1].stop, scale, &periods);
	}
	SPI_finish();
	if (!direct)
	{
		Datum		values[5] = {0};
		bool		nulls[5] = {true, true, true, true, true};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		PG_RETURN_VOID();
	}
	if (scale && periods.min_known > 0 && periods.unknown_seen)
		ereport(NOTICE,
				(errmsg("parca_function_range: some samples of %s have no period (0); their counts were added unscaled",
						message_quote_cstring(sel->profile_type))));

	/* the hours parca_query_range reads from sums list their buckets */
	for (int i = 0; i < nlisted; i++)
		fr->buckets[bucket_of(fr, listed_hours[i])].listed = true;

	function_range_retention_notice(fr);

	/*
	 * Every function found in a bucket listed, in every bucket listed (0
	 * where it is absent), as the per-bucket merges' rows were joined.
	 */
	used = palloc0(sizeof(bool) * Max(fr->nwanted, 1));
	for (int b = 0; b < fr->nbuckets; b++)
		for (int w = 0; fr->buckets[b].listed && w < fr->buckets[b].cap; w++)
			used[w] |= fr->buckets[b].present[w];
	for (int w = 0; w < fr->nwanted; w++)
	{
		text	   *name;

		if (!used[w])
			continue;
		name = cstring_to_text(fr->syms->names.strings[fr->wanted[w]]);
		for (int b = 0; b < fr->nbuckets; b++)
		{
			Bucket	   *k = &fr->buckets[b];
			Datum		values[5];
			bool		nulls[5] = {false, false, false, false, false};
			bool		here = w < k->cap && k->present[w];

			if (!k->listed)
				continue;
			values[0] = TimestampTzGetDatum(k->time);
			values[1] = PointerGetDatum(name);
			values[2] = Int64GetDatum(here ? k->flat[w] : 0);
			values[3] = Int64GetDatum(here ? k->cum[w] : 0);
			values[4] = Int64GetDatum(k->total);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		CHECK_FOR_INTERRUPTS();
	}
	PG_RETURN_VOID();
}
