/*
 * columnar_customscan.c
 *		"Columnar Scan": the custom scan node that reads a parca_columnar
 *		table decoding only the columns the query uses and skipping chunk
 *		groups that the WHERE clause rules out by their min/max.
 *
 * A planner hook (set_rel_pathlist_hook) offers the node for every
 * columnar table, cheaper than a sequential scan.  Restriction clauses of
 * the form "column op expression" (or "expression op column"), where op
 * is a btree operator of the column type's default operator family and
 * the expression holds no columns and nothing volatile (constants,
 * parameters, now() - interval '1 hour'), become chunk predicates; the
 * expressions are evaluated when the scan starts.  Every clause is still
 * checked on every row returned, so skipping is only an optimization.
 * When every clause is a predicate, the other columns of a chunk group
 * are read only for the rows from the first to the last that pass
 * (columnar_read_row_window): the clauses drop the rows around them.
 *
 * EXPLAIN shows the columns read and the chunk predicates; EXPLAIN
 * ANALYZE adds the chunk groups read and skipped.  The hook also removes
 * parallel paths for columnar tables (parallel scans are not done yet).
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "access/table.h"
#include "catalog/pg_am.h"
#include "catalog/pg_opfamily.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/selfuncs.h"

#include "columnar/columnar_internal.h"

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook;

typedef struct ColumnarScanState
{
	CustomScanState css;
	Bitmapset  *attrs;
	List	   *preds;			/* ColumnarPredicate * */
	List	   *pred_exprs;		/* ExprState * of their values */
	bool		quals_are_preds;	/* every qual is one of preds */
	ColumnarReadState *rs;
	int64		groups_read;
	int64		groups_skipped;
	int64		blocks_read;
} ColumnarScanState;

static Plan *plan_columnar_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
								List *tlist, List *clauses, List *custom_plans);
static Node *create_columnar_state(CustomScan *cscan);
static void begin_columnar_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_columnar_scan(CustomScanState *node);
static void end_columnar_scan(CustomScanState *node);
static void rescan_columnar_scan(CustomScanState *node);
static void explain_columnar_scan(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomPathMethods path_methods = {
	.CustomName = "ParcaColumnarScan",
	.PlanCustomPath = plan_columnar_path,
};

static const CustomScanMethods scan_methods = {
	.CustomName = "ParcaColumnarScan",
	.CreateCustomScanState = create_columnar_state,
};

static const CustomExecMethods exec_methods = {
	.CustomName = "ParcaColumnarScan",
	.BeginCustomScan = begin_columnar_scan,
	.ExecCustomScan = exec_columnar_scan,
	.EndCustomScan = end_columnar_scan,
	.ReScanCustomScan = rescan_columnar_scan,
	.ExplainCustomScan = explain_columnar_scan,
};

/*
 * A chunk predicate from a clause, or false: "column op value", "value op
 * column" (op a btree operator of the column type's default operator
 * family) or "column = ANY (array)".  Sets the column, strategy, comparison
 * function, the value expression and the collation.
 */
bool
columnar_clause_predicate(Expr *clause, Index relid, AttrNumber *attno, int *strategy,
						  Oid *cmpproc, Expr **value, Oid *collation)
{
	List	   *clause_args;
	Oid			clause_op;
	bool		any = false;
	Node	   *args[2];
	Oid			opclass;
	Oid			opfamily;
	Oid			lefttype;
	Oid			righttype;

	if (IsA(clause, OpExpr))
	{
		clause_args = ((OpExpr *) clause)->args;
		clause_op = ((OpExpr *) clause)->opno;
		*collation = ((OpExpr *) clause)->inputcollid;
	}
	else if (IsA(clause, ScalarArrayOpExpr) && ((ScalarArrayOpExpr *) clause)->useOr)
	{
		clause_args = ((ScalarArrayOpExpr *) clause)->args;
		clause_op = ((ScalarArrayOpExpr *) clause)->opno;
		*collation = ((ScalarArrayOpExpr *) clause)->inputcollid;
		any = true;
	}
	else
		return false;
	if (list_length(clause_args) != 2)
		return false;
	args[0] = linitial(clause_args);
	args[1] = lsecond(clause_args);
	/* the column on the left, or (not for ANY) on the right */
	for (int i = 0; i < (any ? 1 : 2); i++)
	{
		Node	   *other = args[1 - i];
		Var		   *var;
		Oid			opno;

		if (!IsA(args[i], Var))
			continue;
		var = (Var *) args[i];
		if (var->varno != relid || var->varattno <= 0 || var->varlevelsup != 0 ||
			!get_typbyval(var->vartype))
			continue;
		if (contain_var_clause(other) || contain_volatile_functions(other) ||
			contain_subplans(other))
			continue;
		opno = i == 0 ? clause_op : get_commutator(clause_op);
		if (!OidIsValid(opno))
			continue;
		opclass = GetDefaultOpClass(var->vartype, BTREE_AM_OID);
		if (!OidIsValid(opclass))
			continue;
		opfamily = get_opclass_family(opclass);
		if (!op_in_opfamily(opno, opfamily))
			continue;
		get_op_opfamily_properties(opno, opfamily, false, strategy, &lefttype, &righttype);
		if (any)
		{
			if (*strategy != BTEqualStrategyNumber)
				continue;
			*strategy = COLUMNAR_STRATEGY_ANY;
		}
		*cmpproc = get_opfamily_proc(opfamily, lefttype, righttype, BTORDER_PROC);
		if (!OidIsValid(*cmpproc))
			continue;
		*attno = var->varattno;
		*value = (Expr *) other;
		return true;
	}
	return false;
}

/* A chunk predicate as a plan keeps it (custom_private): its value goes to custom_exprs. */
List *
columnar_predicate_to_plan(AttrNumber attno, int strategy, Oid cmpproc, Oid collation)
{
	return list_make4(makeInteger(attno), makeInteger(strategy),
					  makeInteger((int) cmpproc), makeInteger((int) collation));
}

/* The predicate a plan kept, its value not yet set. */
ColumnarPredicate *
columnar_predicate_from_plan(List *info)
{
	return columnar_predicate_make(intVal(linitial(info)), intVal(lsecond(info)),
								   (Oid) intVal(lthird(info)), (Oid) intVal(lfourth(info)));
}

/* Evaluate each predicate's value expression and set it, at scan start. */
void
columnar_predicates_set_values(List *preds, List *pred_exprs, ExprContext *econtext)
{
	ListCell   *lc;
	ListCell   *lc2;

	forboth(lc, preds, lc2, pred_exprs)
	{
		bool		isnull;
		Datum		value = ExecEvalExprSwitchContext(lfirst(lc2), econtext, &isnull);

		columnar_predicate_set_value(lfirst(lc), value, isnull);
	}
}

static void
columnar_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	Relation	relation;
	bool		columnar;
	CustomPath *cpath;
	Path	   *seqpath = NULL;
	Bitmapset  *attrs = NULL;
	List	   *preds = NIL;
	ListCell   *lc;
	int			natts;
	double		colfrac;
	Selectivity sel;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
	if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_RELATION ||
		rte->inh || rel->reloptkind == RELOPT_UPPER_REL)
		return;
	relation = table_open(rte->relid, NoLock);
	columnar = columnar_is_columnar(relation);
	natts = RelationGetDescr(relation)->natts;
	table_close(relation, NoLock);
	if (!columnar)
		return;

	rel->partial_pathlist = NIL;
	if (!columnar_enable_custom_scan)
		return;

	foreach(lc, rel->pathlist)
		if (((Path *) lfirst(lc))->pathtype == T_SeqScan)
			seqpath = lfirst(lc);
	if (seqpath == NULL)
		return;

	pull_varattnos((Node *) rel->reltarget->exprs, rel->relid, &attrs);
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst(lc);
		AttrNumber	attno;
		int			strategy;
		Oid			cmpproc;
		Expr	   *value;
		Oid			collation;

		pull_varattnos((Node *) ri->clause, rel->relid, &attrs);
		if (columnar_clause_predicate(ri->clause, rel->relid, &attno, &strategy, &cmpproc,
									  &value, &collation))
			preds = lappend(preds, ri);
	}

	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = rel->reltarget;
	cpath->path.param_info = seqpath->param_info;
	cpath->path.rows = seqpath->rows;
	cpath->flags = 0;
	cpath->methods = &path_methods;
	cpath->custom_private = preds;

	/* cheaper than a sequential scan by the columns left out and skipping */
	if (bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, attrs))
		colfrac = 1.0;
	else
		colfrac = Max(1, bms_num_members(attrs)) / (double) Max(natts, 1);
	sel = preds ? clauselist_selectivity(root, extract_actual_clauses(preds, false),
										 rel->relid, JOIN_INNER, NULL) : 1.0;
	cpath->path.startup_cost = seqpath->startup_cost;
	cpath->path.total_cost = seqpath->startup_cost +
		(seqpath->total_cost - seqpath->startup_cost) *
		(COLUMNAR_SCAN_FIXED_COST + COLUMNAR_SCAN_COLUMNS_COST * colfrac +
		 COLUMNAR_SCAN_SELECTIVITY_COST * sel);
	add_path(rel, &cpath->path);
}

static Plan *
plan_columnar_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				   List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	Bitmapset  *attrs = NULL;
	List	   *pred_clauses = NIL;
	List	   *pred_values = NIL;
	List	   *pred_info = NIL;
	List	   *attr_list = NIL;
	ListCell   *lc;
	int			a;

	cscan->scan.scanrelid = rel->relid;
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(clauses, false);
	cscan->methods = &scan_methods;
	cscan->flags = best_path->flags;

	pull_varattnos((Node *) tlist, rel->relid, &attrs);
	pull_varattnos((Node *) cscan->scan.plan.qual, rel->relid, &attrs);
	if (bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, attrs))
		for (a = 1; a <= list_length(root->simple_rte_array[rel->relid]->eref->colnames); a++)
			attr_list = lappend_int(attr_list, a);
	else
	{
		a = -1;
		while ((a = bms_next_member(attrs, a)) >= 0)
			if (a + FirstLowInvalidHeapAttributeNumber > 0)
				attr_list = lappend_int(attr_list, a + FirstLowInvalidHeapAttributeNumber);
	}

	foreach(lc, best_path->custom_private)
	{
		RestrictInfo *ri = lfirst(lc);
		AttrNumber	attno;
		int			strategy;
		Oid			cmpproc;
		Expr	   *value;
		Oid			collation;

		if (!list_member_ptr(clauses, ri) ||
			!columnar_clause_predicate(ri->clause, rel->relid, &attno, &strategy, &cmpproc,
									   &value, &collation))
			continue;
		pred_clauses = lappend(pred_clauses, ri->clause);
		pred_values = lappend(pred_values, value);
		pred_info = lappend(pred_info,
							columnar_predicate_to_plan(attno, strategy, cmpproc, collation));
	}
	/* the clauses (for EXPLAIN), then their values */
	cscan->custom_exprs = list_concat(pred_clauses, pred_values);
	cscan->custom_private = list_make2(attr_list, pred_info);
	return &cscan->scan.plan;
}

static Node *
create_columnar_state(CustomScan *cscan)
{
	ColumnarScanState *state = (ColumnarScanState *) newNode(sizeof(ColumnarScanState),
															 T_CustomScanState);

	state->css.methods = &exec_methods;
	return (Node *) state;
}

static void
begin_columnar_scan(CustomScanState *node, EState *estate, int eflags)
{
	ColumnarScanState *state = (ColumnarScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *attr_list = linitial(cscan->custom_private);
	List	   *pred_info = lsecond(cscan->custom_private);
	ListCell   *lc;
	int			i;

	foreach(lc, attr_list)
		state->attrs = bms_add_member(state->attrs, lfirst_int(lc));
	i = 0;
	foreach(lc, pred_info)
	{
		Expr	   *value = list_nth(cscan->custom_exprs, list_length(pred_info) + i++);

		state->preds = lappend(state->preds, columnar_predicate_from_plan(lfirst(lc)));
		state->pred_exprs = lappend(state->pred_exprs, ExecInitExpr(value, &node->ss.ps));
	}
	state->quals_are_preds = list_length(pred_info) == list_length(cscan->scan.plan.qual);
}

static void
collect_stats(ColumnarScanState *state)
{
	int64		r,
				s,
				b;

	if (state->rs == NULL)
		return;
	columnar_read_stats(state->rs, &r, &s, &b);
	state->groups_read += r;
	state->groups_skipped += s;
	state->blocks_read += b;
	columnar_read_end(state->rs);
	state->rs = NULL;
}

static TupleTableSlot *
columnar_next(ScanState *ss)
{
	ColumnarScanState *state = (ColumnarScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	int64		row;

	if (state->rs == NULL)
	{
		MemoryContext old;

		/* the predicates' values, now that parameters are known */
		columnar_predicates_set_values(state->preds, state->pred_exprs, ss->ps.ps_ExprContext);
		old = MemoryContextSwitchTo(ss->ps.state->es_query_cxt);
		state->rs = columnar_read_begin(ss->ss_currentRelation, ss->ps.state->es_snapshot,
										state->attrs, state->preds);
		/* the quals drop the rows that a predicate fails, whatever else they hold */
		if (state->quals_are_preds)
			columnar_read_row_window(state->rs, InvalidAttrNumber);
		MemoryContextSwitchTo(old);
	}
	ExecClearTuple(slot);
	if (!columnar_read_next(state->rs, slot->tts_values, slot->tts_isnull, &row))
		return slot;
	ExecStoreVirtualTuple(slot);
	columnar_row_to_tid(row, &slot->tts_tid);
	slot->tts_tableOid = RelationGetRelid(ss->ss_currentRelation);
	return slot;
}

static bool
columnar_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_columnar_scan(CustomScanState *node)
{
	return ExecScan(&node->ss, columnar_next, columnar_recheck);
}

static void
end_columnar_scan(CustomScanState *node)
{
	collect_stats((ColumnarScanState *) node);
}

static void
rescan_columnar_scan(CustomScanState *node)
{
	/* parameters may have changed: start over */
	collect_stats((ColumnarScanState *) node);
	ExecScanReScan(&node->ss);
}

static void
explain_columnar_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	ColumnarScanState *state = (ColumnarScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	TupleDesc	desc = RelationGetDescr(node->ss.ss_currentRelation);
	StringInfoData cols;
	int			a = -1;

	initStringInfo(&cols);
	while ((a = bms_next_member(state->attrs, a)) >= 0)
		appendStringInfo(&cols, "%s%s", cols.len ? ", " : "",
						 quote_identifier(NameStr(TupleDescAttr(desc, a - 1)->attname)));
	ExplainPropertyText("Columns", cols.len ? cols.data : "(none)", es);
	if (cscan->custom_exprs)
	{
		List	   *context = set_deparse_context_plan(es->deparse_cxt,
													   &cscan->scan.plan, ancestors);
		List	   *clauses = list_copy_head(cscan->custom_exprs,
											   list_length(cscan->custom_exprs) / 2);
		Node	   *expr = (Node *) make_ands_explicit(clauses);

		ExplainPropertyText("Chunk Filter",
							deparse_expression(expr, context, es->verbose, false), es);
	}
	if (es->analyze)
	{
		int64		r = state->groups_read,
					s = state->groups_skipped,
					b = state->blocks_read;

		if (state->rs)
		{
			int64		r2,
						s2,
						b2;

			columnar_read_stats(state->rs, &r2, &s2, &b2);
			r += r2;
			s += s2;
			b += b2;
		}
		ExplainPropertyInteger("Chunk Groups Read", NULL, r, es);
		ExplainPropertyInteger("Chunk Groups Skipped", NULL, s, es);
		ExplainPropertyInteger("Data Blocks Read", NULL, b, es);
	}
}

void
columnar_customscan_init(void)
{
	RegisterCustomScanMethods(&scan_methods);
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = columnar_set_rel_pathlist;
}
