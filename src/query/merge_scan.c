/*
 * merge_scan.c
 *		parca_query's merge, read straight from a parca_columnar samples table.
 *
 * An aggregate query hands every row to parca_merge() as a tuple, whose
 * stack is then hashed and compared: a few hundred nanoseconds a row.  A
 * parca_columnar table needs none of that.  Its chunk groups are read
 * whole (only the time, series_id, value, period and stack columns; groups
 * whose min/max exclude the time range or the series are skipped), and
 * within a stripe equal stacks share one dictionary entry, so a row costs
 * an addition into an array indexed by that entry.  Each stripe's sums
 * reach the profile builder once per distinct stack.
 *
 * The same rows as the SQL merge are counted: rows whose time is in
 * [start, stop] and whose series is one of those asked for; a NULL value,
 * period or stack adds nothing, as in SQL.  Row-level security, or a user
 * who may not read the table directly, sends the caller to SQL.
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "columnar/columnar.h"
#include "metastore.h"
#include "parca.h"
#include "query/merge_scan.h"

/* The columns read, in this order. */
enum
{
	COL_TIME, COL_SERIES, COL_VALUE, COL_PERIOD, COL_STACK, NCOLS
};

/* The attribute numbers of the columns read, or false if one is missing. */
static bool
find_columns(Relation rel, AttrNumber *attnos)
{
	static const char *const names[NCOLS] = {"time", "series_id", "value", "period", "stack"};
	Oid			types[NCOLS] = {TIMESTAMPTZOID, INT8OID, INT8OID, INT8OID,
	metastore_stacktrace_type(false)};
	TupleDesc	desc = RelationGetDescr(rel);

	for (int c = 0; c < NCOLS; c++)
	{
		attnos[c] = InvalidAttrNumber;
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute a = TupleDescAttr(desc, i);

			if (!a->attisdropped && strcmp(NameStr(a->attname), names[c]) == 0 &&
				a->atttypid == types[c])
				attnos[c] = a->attnum;
		}
		if (attnos[c] == InvalidAttrNumber)
			return false;
	}
	return true;
}

static ColumnarPredicate *
predicate(AttrNumber attno, int strategy, Oid cmpproc, Datum value)
{
	ColumnarPredicate *p = columnar_predicate_make(attno, strategy, cmpproc, InvalidOid);

	columnar_predicate_set_value(p, value, false);
	return p;
}

#define ST_SORT sort_series_ids
#define ST_ELEMENT_TYPE int64
#define ST_COMPARE(a, b) (*(a) < *(b) ? -1 : *(a) > *(b))
#define ST_SCOPE static
#define ST_DECLARE
#define ST_DEFINE
#include "lib/sort_template.h"

/* Whether id is in the sorted ids. */
static bool
series_member(const int64 *ids, int n, int64 id)
{
	int			lo = 0,
				hi = n - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (ids[mid] == id)
			return true;
		if (ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return false;
}

/* Sums of one stripe, by dictionary entry of the stack column. */
typedef struct StripeSums
{
	int64	   *sums;			/* [cap] */
	bool	   *seen;			/* [cap] */
	int		   *touched;		/* the entries seen, in order */
	int			ntouched;
	int			cap;
	char	  **dict;			/* the stripe's stacks */
} StripeSums;

static void
sums_flush(StripeSums *ss, ProfileBuilder *b)
{
	for (int i = 0; i < ss->ntouched; i++)
	{
		int			e = ss->touched[i];
		struct varlena *stack = (struct varlena *) ss->dict[e];

		profile_builder_add(b, VARDATA_ANY(stack),
							(int) (VARSIZE_ANY_EXHDR(stack) / sizeof(uint64)),
							ss->sums[e], 0);
		ss->sums[e] = 0;
		ss->seen[e] = false;
	}
	ss->ntouched = 0;
}

static void
sums_reserve(StripeSums *ss, int n)
{
	if (n <= ss->cap)
		return;
	ss->sums = repalloc_huge(ss->sums, sizeof(int64) * n);
	ss->seen = repalloc_huge(ss->seen, sizeof(bool) * n);
	ss->touched = repalloc_huge(ss->touched, sizeof(int) * n);
	memset(ss->sums + ss->cap, 0, sizeof(int64) * (n - ss->cap));
	memset(ss->seen + ss->cap, 0, sizeof(bool) * (n - ss->cap));
	ss->cap = n;
}

static inline void
sums_add(StripeSums *ss, int64 e, int64 value)
{
	if (!ss->seen[e])
	{
		ss->seen[e] = true;
		ss->touched[ss->ntouched++] = (int) e;
	}
	if (unlikely(pg_add_s64_overflow(ss->sums[e], value, &ss->sums[e])))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("profile value out of range: a stack's sum exceeds 64 bits")));
}

bool
merge_scan_samples(ProfileBuilder *b, const int64 *series_ids, int nseries,
				   TimestampTz start, TimestampTz stop, bool scale, int64 *min_period)
{
	Oid			relid = parca_samples_relid();
	Relation	rel = table_open(relid, AccessShareLock);
	AttrNumber	att[NCOLS];
	int64	   *ids;
	Datum	   *id_datums;
	List	   *preds;
	Bitmapset  *attrs = NULL;
	ColumnarReadState *rs;
	ColumnarGroup g;
	StripeSums	ss;
	int			stripe = -1;
	int64		last_series = 0;
	bool		last_member = false;
	int64		period_min = PG_INT64_MAX;

	if (!columnar_is_columnar(rel) ||
		pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK ||
		check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED ||
		!find_columns(rel, att))
	{
		table_close(rel, AccessShareLock);
		return false;
	}

	/* the series, sorted for lookups; as an array for chunk skipping */
	ids = palloc(sizeof(int64) * Max(nseries, 1));
	memcpy(ids, series_ids, sizeof(int64) * nseries);
	sort_series_ids(ids, nseries);
	id_datums = palloc(sizeof(Datum) * Max(nseries, 1));
	for (int i = 0; i < nseries; i++)
		id_datums[i] = Int64GetDatum(ids[i]);
	preds = list_make3(predicate(att[COL_TIME], BTGreaterEqualStrategyNumber, F_TIMESTAMP_CMP,
								 TimestampTzGetDatum(start)),
					   predicate(att[COL_TIME], BTLessEqualStrategyNumber, F_TIMESTAMP_CMP,
								 TimestampTzGetDatum(stop)),
					   predicate(att[COL_SERIES], COLUMNAR_STRATEGY_ANY, F_BTINT8CMP,
								 PointerGetDatum(construct_array(id_datums, nseries, INT8OID, 8,
																 FLOAT8PASSBYVAL,
																 TYPALIGN_DOUBLE))));
	for (int c = 0; c < NCOLS; c++)
		attrs = bms_add_member(attrs, att[c]);

	memset(&ss, 0, sizeof(ss));
	ss.cap = 1024;
	ss.sums = palloc0(sizeof(int64) * ss.cap);
	ss.seen = palloc0(sizeof(bool) * ss.cap);
	ss.touched = palloc(sizeof(int) * ss.cap);

	rs = columnar_read_begin(rel, GetActiveSnapshot(), attrs, preds);
	while (columnar_read_next_group(rs, &g))
	{
		const Datum *time = g.values[att[COL_TIME] - 1];
		const Datum *series = g.values[att[COL_SERIES] - 1];
		const Datum *value = g.values[att[COL_VALUE] - 1];
		const Datum *period = g.values[att[COL_PERIOD] - 1];
		const Datum *stack = g.values[att[COL_STACK] - 1];
		const bool *time_null = g.nulls[att[COL_TIME] - 1];
		const bool *series_null = g.nulls[att[COL_SERIES] - 1];
		const bool *value_null = g.nulls[att[COL_VALUE] - 1];
		const bool *period_null = g.nulls[att[COL_PERIOD] - 1];
		const bool *stack_null = g.nulls[att[COL_STACK] - 1];
		const int64 *entry = g.dict_index[att[COL_STACK] - 1];

		/* the previous stripe's dictionaries are still valid (columnar.h) */
		if (g.stripe != stripe)
		{
			sums_flush(&ss, b);
			stripe = g.stripe;
		}
		if (entry)
		{
			sums_reserve(&ss, g.dict_sizes[att[COL_STACK] - 1]);
			ss.dict = g.dicts[att[COL_STACK] - 1];
		}
		for (int r = 0; r < g.nrows; r++)
		{
			int64		v;
			int64		p;

			if (!g.all_pass)
			{
				int64		sid;

				if (time_null[r] || DatumGetTimestampTz(time[r]) < start ||
					DatumGetTimestampTz(time[r]) > stop || series_null[r])
					continue;
				sid = DatumGetInt64(series[r]);
				if (sid != last_series)
				{
					last_series = sid;
					last_member = series_member(ids, nseries, sid);
				}
				if (!last_member)
					continue;
			}
			if (!period_null[r] && DatumGetInt64(period[r]) < period_min)
				period_min = DatumGetInt64(period[r]);
			if (value_null[r] || (scale && period_null[r]))
				continue;
			v = DatumGetInt64(value[r]);
			if (scale)
			{
				p = DatumGetInt64(period[r]);
				if (unlikely(pg_mul_s64_overflow(v, p, &v)))
					ereport(ERROR,
							(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
							 errmsg("bigint out of range")));
			}
			if (entry)
				sums_add(&ss, entry[r], v);
			else if (!stack_null[r])
			{
				struct varlena *st = (struct varlena *) DatumGetPointer(stack[r]);

				profile_builder_add(b, VARDATA_ANY(st),
									(int) (VARSIZE_ANY_EXHDR(st) / sizeof(uint64)), v, 0);
			}
		}
	}
	sums_flush(&ss, b);
	columnar_read_end(rs);
	table_close(rel, AccessShareLock);
	if (period_min != PG_INT64_MAX)
		*min_period = period_min;
	return true;
}
