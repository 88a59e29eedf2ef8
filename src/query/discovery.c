/*
 * discovery.c
 *		parca_series_ids(): the series a selector matches.
 *
 * This is the one entry point that SQL functions use to apply a selector:
 * parca_series(), parca_labels(), parca_label_values() and
 * parca_query_range() (sql/70_query.sql) are written over it.
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
#include "nodes/makefuncs.h"
#include "nodes/pathnodes.h"
#include "nodes/supportnodes.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "query/selector.h"

PG_FUNCTION_INFO_V1(parca_series_ids);
PG_FUNCTION_INFO_V1(parca_series_ids_support);

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
