/*
 * columnar_predicate.c
 *		Chunk skipping predicates (columnar.h): their values, evaluated at
 *		scan start ("= ANY" arrays sorted for a binary search), and the
 *		chunk groups that their min and max rule out.  Evaluating them on a
 *		value is inline in columnar_internal.h, for the scan's row filter.
 */
#include "postgres.h"

#include "utils/array.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "columnar/columnar_internal.h"

static int
element_sort_cmp(const void *a, const void *b, void *arg)
{
	ColumnarPredicate *p = arg;

	return DatumGetInt32(FunctionCall2Coll(&p->cmp, p->collation,
										   *(const Datum *) a, *(const Datum *) b));
}

/* A predicate whose value is set later (columnar_predicate_set_value). */
ColumnarPredicate *
columnar_predicate_make(AttrNumber attno, int strategy, Oid cmpproc, Oid collation)
{
	ColumnarPredicate *p = palloc0(sizeof(ColumnarPredicate));

	p->attno = attno;
	p->strategy = strategy;
	fmgr_info(cmpproc, &p->cmp);
	p->collation = collation;
	return p;
}

/*
 * Set a predicate's value, evaluated at scan start; for "= ANY" the
 * array's non-NULL elements are kept (in the predicate's memory), sorted
 * when the comparison is within one type, so that a row costs a binary
 * search.
 */
void
columnar_predicate_set_value(ColumnarPredicate *p, Datum value, bool isnull)
{
	MemoryContext old;
	ArrayType  *arr;
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	p->value = value;
	p->isnull = isnull;
	if (p->strategy != COLUMNAR_STRATEGY_ANY || isnull)
		return;
	old = MemoryContextSwitchTo(GetMemoryChunkContext(p));
	arr = DatumGetArrayTypeP(value);
	get_typlenbyvalalign(ARR_ELEMTYPE(arr), &elmlen, &elmbyval, &elmalign);
	deconstruct_array(arr, ARR_ELEMTYPE(arr), elmlen, elmbyval, elmalign, &elems, &nulls, &n);
	p->nelems = 0;
	p->elems = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
		if (!nulls[i])
			p->elems[p->nelems++] = datumCopy(elems[i], elmbyval, elmlen);
	p->cmp_unsorted = !(p->cmp.fn_oid == F_BTINT8CMP || p->cmp.fn_oid == F_BTINT4CMP ||
						p->cmp.fn_oid == F_BTINT2CMP || p->cmp.fn_oid == F_TIMESTAMP_CMP ||
						p->cmp.fn_oid == F_DATE_CMP || p->cmp.fn_oid == F_BTFLOAT8CMP ||
						p->cmp.fn_oid == F_BTOIDCMP);
	if (!p->cmp_unsorted)
		qsort_arg(p->elems, p->nelems, sizeof(Datum), element_sort_cmp, p);
	MemoryContextSwitchTo(old);
}

/* Not every row of the group shown to pass the predicates on column a. */
static inline void
not_all_pass(bool *all_pass, bool *att_pass, int a)
{
	*all_pass = false;
	if (att_pass)
		att_pass[a] = false;
}

bool
columnar_group_excluded(List *predicates, TupleDesc desc, ColumnarStripe *s, int g,
						bool *all_pass, bool *att_pass)
{
	ListCell   *lc;

	*all_pass = true;
	if (att_pass)
		memset(att_pass, true, sizeof(bool) * desc->natts);
	foreach(lc, predicates)
	{
		ColumnarPredicate *p = lfirst(lc);
		int			a = p->attno - 1;
		ColumnarChunk *ch;
		int16		typlen;
		Datum		min,
					max;

		if (p->isnull)
			return true;		/* strict operator, NULL constant */
		if (a >= s->natts)
		{
			not_all_pass(all_pass, att_pass, a);
			continue;
		}
		ch = COLUMNAR_CHUNK(s, a, g);
		if (ch->encoding == ENC_ALL_NULL)
			return true;
		if (!ch->has_minmax)
		{
			not_all_pass(all_pass, att_pass, a);
			continue;
		}
		typlen = TupleDescAttr(desc, a)->attlen;
		min = columnar_int_to_datum(ch->min, typlen);
		max = columnar_int_to_datum(ch->max, typlen);
		if (p->strategy == COLUMNAR_STRATEGY_ANY)
		{
			bool		some = false;
			bool		one_element = false;

			for (int i = 0; i < p->nelems && !some; i++)
			{
				some = columnar_element_cmp(p, min, i) <= 0 && columnar_element_cmp(p, max, i) >= 0;
				one_element = some && columnar_element_cmp(p, min, i) == 0 &&
					columnar_element_cmp(p, max, i) == 0;
			}
			if (!some)
				return true;
			/* a chunk whose every value is one of the elements passes whole */
			if (!one_element || ch->nnulls > 0)
				not_all_pass(all_pass, att_pass, a);
			continue;
		}
		if (!columnar_predicate_passes(p, min) && !columnar_predicate_passes(p, max) &&
			p->strategy != BTEqualStrategyNumber)
			return true;
		if (p->strategy == BTEqualStrategyNumber &&
			(columnar_predicate_cmp(p, min) > 0 || columnar_predicate_cmp(p, max) < 0))
			return true;
		if (ch->nnulls > 0 || !columnar_predicate_passes(p, min) || !columnar_predicate_passes(p, max))
			not_all_pass(all_pass, att_pass, a);
	}
	return false;
}
