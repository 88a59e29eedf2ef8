/*
 * discovery.c
 *		parca_series_ids(): the series a selector matches; and what
 *		dashboards list: parca_profile_types(), parca_labels(),
 *		parca_label_values().
 *
 * parca_series_ids is the one entry point that SQL functions use to apply
 * a selector: parca_series() and parca_query_range() (sql/70_query.sql)
 * are written over it.
 *
 * Discovery reads the series index (series_index.h) where it can: the
 * label values of a profile type (parca.label_values), or those with
 * sample rows in the hours a time range meets (parca.label_hours), so
 * that listing a type's labels costs what the distinct names and values
 * cost, not its series.  A selector with matchers lists the labels of the
 * series it matches, and a time range keeps those with sample rows in the
 * hours it meets (parca.series_hours).  Without the rights to have the
 * index read for it (series_index_readable), the caller's own reads of
 * parca.series and parca.samples answer, as they always did: the series
 * with sample rows within the range itself.  On Citus, where the index
 * has no hours, a time range is answered so too, each shard sending the
 * distinct series of its rows in the range.
 *
 * People write `WHERE series_id = ANY (parca_series_ids('...'))` over the
 * samples table.  A STABLE function in a filter is evaluated for every
 * row (each time parsing the selector and querying parca.series), so its
 * planner support function turns such a call, when its argument does not
 * depend on the row, into a scalar subquery: the planner makes that an
 * InitPlan, evaluated once per execution.
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "nodes/makefuncs.h"
#include "nodes/pathnodes.h"
#include "nodes/supportnodes.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "query/selector.h"
#include "metastore/series_index.h"

PG_FUNCTION_INFO_V1(parca_series_ids);
PG_FUNCTION_INFO_V1(parca_series_ids_support);
PG_FUNCTION_INFO_V1(parca_profile_types);
PG_FUNCTION_INFO_V1(parca_labels);
PG_FUNCTION_INFO_V1(parca_label_values);

Datum
parca_series_ids(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = CurrentMemoryContext;
	Selector   *sel = selector_parse_text(PG_GETARG_TEXT_PP(0));
	SeriesMatch *series;
	int			n;
	Datum	   *ids;
	ArrayType  *result;


	SPI_connect();
	series = selector_find_series(sel, NIL, &n);
	ids = MemoryContextAlloc(cxt, sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
		ids[i] = Int64GetDatum(series[i].id);
	SPI_finish();
	result = construct_array(ids, n, INT8OID, 8, true, TYPALIGN_DOUBLE);
	PG_RETURN_ARRAYTYPE_P(result);
}

/*
 * Whether a query reads rows from anywhere (the planner gives a query
 * without FROM an RTE_RESULT entry, so look past those).
 */
static bool
reads_rows(Query *query)
{
	ListCell   *lc;

	foreach(lc, query->rtable)
		if (((RangeTblEntry *) lfirst(lc))->rtekind != RTE_RESULT)
			return true;
	return false;
}

/* Whether an argument is the same for every row: a constant or a parameter. */
static bool
row_independent(Node *arg)
{
	return IsA(arg, Const) ||
		(IsA(arg, Param) && ((Param *) arg)->paramkind == PARAM_EXTERN);
}

/*
 * Planner support for parca_series_ids: in a query that reads a table, a
 * call with a constant (or parameter) selector becomes (SELECT
 * parca_series_ids(...)).  The subquery reads no rows, so the call in it
 * is left alone.
 */
Datum
parca_series_ids_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);
	SupportRequestSimplify *req;
	PlannerInfo *root;
	ListCell   *lc;
	Query	   *sub;
	SubLink    *sublink;

	if (!IsA(rawreq, SupportRequestSimplify))
		PG_RETURN_POINTER(NULL);
	req = (SupportRequestSimplify *) rawreq;
	root = req->root;
	if (root == NULL || root->parse == NULL || !reads_rows(root->parse))
		PG_RETURN_POINTER(NULL);
	foreach(lc, req->fcall->args)
		if (!row_independent(lfirst(lc)))
			PG_RETURN_POINTER(NULL);

	sub = makeNode(Query);
	sub->commandType = CMD_SELECT;
	sub->querySource = QSRC_ORIGINAL;
	sub->canSetTag = true;
	sub->jointree = makeFromExpr(NIL, NULL);
	sub->targetList = list_make1(makeTargetEntry((Expr *) copyObject(req->fcall), 1,
												 pstrdup("parca_series_ids"), false));
	sublink = makeNode(SubLink);
	sublink->subLinkType = EXPR_SUBLINK;
	sublink->subLinkId = 0;
	sublink->testexpr = NULL;
	sublink->operName = NIL;
	sublink->subselect = (Node *) sub;
	sublink->location = req->fcall->location;
	/* the planner turns sublinks into subplans only in queries marked so */
	root->parse->hasSubLinks = true;
	PG_RETURN_POINTER(sublink);
}

/* --- discovery ------------------------------------------------------- */

/* The time range of a discovery call: none unless both ends are given. */
typedef struct Range
{
	bool		given;
	TimestampTz start;
	TimestampTz stop;
} Range;

static Range
range_arg(FunctionCallInfo fcinfo, int start_arg)
{
	Range		r = {false, 0, 0};

	if (!PG_ARGISNULL(start_arg) && !PG_ARGISNULL(start_arg + 1))
	{
		r.given = true;
		r.start = PG_GETARG_TIMESTAMPTZ(start_arg);
		r.stop = PG_GETARG_TIMESTAMPTZ(start_arg + 1);
	}
	return r;
}

typedef struct Args
{
	Oid			types[4];
	Datum		values[4];
	int			n;
} Args;

static int
param(Args *q, Oid type, Datum value)
{
	Assert(q->n < lengthof(q->types));
	q->types[q->n] = type;
	q->values[q->n] = value;
	return ++q->n;
}

/* The range as parameters: its start, or the start of its first hour, and its stop. */
static void
range_params(Args *q, Range r, bool by_hour)
{
	param(q, TIMESTAMPTZOID, TimestampTzGetDatum(by_hour ? series_index_hour(r.start) : r.start));
	param(q, TIMESTAMPTZOID, TimestampTzGetDatum(r.stop));
}

static void
run(const char *sql, Args *q)
{
	int			ret = SPI_execute_with_args(sql, q->n, q->types, q->values, NULL, true, 0);

	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(ret));
}

/* run, as the index tables' owner */
static void
run_on_index(const char *sql, Args *q)
{
	SeriesIndexAccess access;

	series_index_access_begin(&access);
	run(sql, q);
	series_index_access_end(&access);
}

/* The first column of SPI's result, in order, into the function's result. */
static void
emit_result(ReturnSetInfo *rsinfo)
{
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		value = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
	}
}

/*
 * Of the series ids, those with sample rows in the range: through
 * parca.series_hours, in the hours the range meets, or the caller's read
 * of parca.samples.
 */
static Datum
ids_in_range(Datum ids, Range r)
{
	Args		q = {0};
	Datum	   *d;

	param(&q, INT8ARRAYOID, ids);
	if (series_index_readable(true))
	{
		range_params(&q, r, true);
		run_on_index("SELECT DISTINCT a.series_id FROM parca.series_hours a"
					 " WHERE a.series_id OPERATOR(pg_catalog.=) ANY ($1)"
					 "   AND a.hour OPERATOR(pg_catalog.>=) $2 AND a.hour OPERATOR(pg_catalog.<=) $3", &q);
	}
	else
	{
		range_params(&q, r, false);
		/* (distinct per series: on Citus each shard sends its series, not its rows') */
		run("SELECT DISTINCT x.series_id FROM parca.samples x"
			" WHERE x.series_id OPERATOR(pg_catalog.=) ANY ($1)"
			"   AND x.time OPERATOR(pg_catalog.>=) $2 AND x.time OPERATOR(pg_catalog.<=) $3", &q);
	}
	d = palloc(Max(SPI_processed, 1) * sizeof(Datum));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		d[i] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
	}
	return PointerGetDatum(construct_array(d, (int) SPI_processed, INT8OID, 8, FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

/*
 * The label names (label NULL) or the values of label, sorted, among the
 * series selector (NULL: every series) matches (with sample rows in the
 * range, if given).
 */
static void
discover(FunctionCallInfo fcinfo, const text *selector, const char *label, Range r)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Selector   *sel = selector ? selector_parse_text(selector) : selector_parse("{}");
	Args		q = {0};

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (r.given && r.start > r.stop)
		return;
	SPI_connect();
	if (sel->matchers == NIL && series_index_readable(r.given))
	{
		/* a type's (or every type's) labels: their distinct names and values */
		param(&q, TEXTARRAYOID, selector_list_array(selector_types(sel), TEXTOID));
		if (r.given)
		{
			range_params(&q, r, true);
		}
		if (label)
			param(&q, TEXTOID, CStringGetTextDatum(label));
		if (label && !r.given)
			run_on_index("SELECT DISTINCT d.value FROM parca.label_values d"
						 " WHERE d.profile_type OPERATOR(pg_catalog.=) ANY ($1)"
						 "   AND d.name OPERATOR(pg_catalog.=) $2 ORDER BY 1", &q);
		else if (label)
			run_on_index("SELECT DISTINCT b.value FROM parca.label_hours b"
						 " WHERE b.profile_type OPERATOR(pg_catalog.=) ANY ($1)"
						 "   AND b.name OPERATOR(pg_catalog.=) $4"
						 "   AND b.hour OPERATOR(pg_catalog.>=) $2 AND b.hour OPERATOR(pg_catalog.<=) $3"
						 " ORDER BY 1", &q);
		else if (!r.given)
			/* per type, one index probe per name */
			run_on_index("WITH RECURSIVE n AS ("
						 " SELECT t.t, (SELECT min(d.name) FROM parca.label_values d"
						 "              WHERE d.profile_type OPERATOR(pg_catalog.=) t.t) AS name"
						 " FROM pg_catalog.unnest($1) t(t)"
						 " UNION ALL"
						 " SELECT n.t, (SELECT min(d.name) FROM parca.label_values d"
						 "              WHERE d.profile_type OPERATOR(pg_catalog.=) n.t"
						 "                AND d.name OPERATOR(pg_catalog.>) n.name)"
						 " FROM n WHERE n.name IS NOT NULL)"
						 " SELECT DISTINCT n.name FROM n WHERE n.name IS NOT NULL ORDER BY 1", &q);
		else
			/* per type, per name: one probe for the next name, one for the range */
			run_on_index("WITH RECURSIVE n AS ("
						 " SELECT t.t, (SELECT min(b.name) FROM parca.label_hours b"
						 "              WHERE b.profile_type OPERATOR(pg_catalog.=) t.t) AS name"
						 " FROM pg_catalog.unnest($1) t(t)"
						 " UNION ALL"
						 " SELECT n.t, (SELECT min(b.name) FROM parca.label_hours b"
						 "              WHERE b.profile_type OPERATOR(pg_catalog.=) n.t"
						 "                AND b.name OPERATOR(pg_catalog.>) n.name)"
						 " FROM n WHERE n.name IS NOT NULL)"
						 " SELECT DISTINCT n.name FROM n WHERE n.name IS NOT NULL"
						 "   AND EXISTS (SELECT FROM parca.label_hours b"
						 "     WHERE b.profile_type OPERATOR(pg_catalog.=) n.t AND b.name OPERATOR(pg_catalog.=) n.name"
						 "       AND b.hour OPERATOR(pg_catalog.>=) $2 AND b.hour OPERATOR(pg_catalog.<=) $3)"
						 " ORDER BY 1", &q);
	}
	else
	{
		/* the labels of the series matched */
		int			n;
		SeriesMatch *series = selector_find_series(sel, NIL, &n);
		Datum	   *d = palloc(Max(n, 1) * sizeof(Datum));
		Datum		ids;

		for (int i = 0; i < n; i++)
			d[i] = Int64GetDatum(series[i].id);
		ids = PointerGetDatum(construct_array(d, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		if (r.given)
			ids = ids_in_range(ids, r);
		param(&q, INT8ARRAYOID, ids);
		if (label)
		{
			param(&q, TEXTOID, CStringGetTextDatum(label));
			run("SELECT DISTINCT s.labels OPERATOR(pg_catalog.->>) $2 FROM parca.series s"
				" WHERE s.id OPERATOR(pg_catalog.=) ANY ($1) AND s.labels OPERATOR(pg_catalog.?) $2"
				" ORDER BY 1", &q);
		}
		else
			run("SELECT DISTINCT k FROM parca.series s, pg_catalog.jsonb_object_keys(s.labels) k"
				" WHERE s.id OPERATOR(pg_catalog.=) ANY ($1) ORDER BY 1", &q);
	}
	emit_result(rsinfo);
	SPI_finish();
}

/* parca_labels(selector DEFAULT '{}', start DEFAULT NULL, stop DEFAULT NULL) */
Datum
parca_labels(PG_FUNCTION_ARGS)
{
	discover(fcinfo, PG_ARGISNULL(0) ? NULL : PG_GETARG_TEXT_PP(0), NULL,
			 range_arg(fcinfo, 1));
	return (Datum) 0;
}

/* parca_label_values(label, selector DEFAULT '{}', start DEFAULT NULL, stop DEFAULT NULL) */
Datum
parca_label_values(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
	{
		/* no label: nothing has it */
		InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
		return (Datum) 0;
	}
	discover(fcinfo, PG_ARGISNULL(1) ? NULL : PG_GETARG_TEXT_PP(1),
			 text_to_cstring(PG_GETARG_TEXT_PP(0)), range_arg(fcinfo, 2));
	return (Datum) 0;
}

/* parca_profile_types(start DEFAULT NULL, stop DEFAULT NULL) */
Datum
parca_profile_types(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Range		r = range_arg(fcinfo, 0);
	Selector	all = {0};
	List	   *types;
	Args		q = {0};

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (r.given && r.start > r.stop)
		return (Datum) 0;
	SPI_connect();
	types = selector_types(&all);
	param(&q, TEXTARRAYOID, selector_list_array(types, TEXTOID));
	if (!r.given)
		run("SELECT t FROM pg_catalog.unnest($1) t ORDER BY 1", &q);
	else if (series_index_readable(true))
	{
		range_params(&q, r, true);
		run_on_index("SELECT t FROM pg_catalog.unnest($1) t"
					 " WHERE EXISTS (SELECT FROM parca.label_hours b"
					 "   WHERE b.profile_type OPERATOR(pg_catalog.=) t AND b.name IS NULL"
					 "     AND b.hour OPERATOR(pg_catalog.>=) $2 AND b.hour OPERATOR(pg_catalog.<=) $3) ORDER BY 1", &q);
	}
	else
	{
		range_params(&q, r, false);
		run("SELECT DISTINCT s.profile_type FROM parca.series s"
			" WHERE s.id OPERATOR(pg_catalog.=) ANY (SELECT DISTINCT x.series_id FROM parca.samples x"
			"   WHERE x.time OPERATOR(pg_catalog.>=) $2 AND x.time OPERATOR(pg_catalog.<=) $3)"
			" ORDER BY 1", &q);
	}
	emit_result(rsinfo);
	SPI_finish();
	return (Datum) 0;
}
