/*
 * columnar_agg.c
 *		"Columnar Aggregate": GROUP BY over one columnar table, done inside
 *		the scan.
 *
 * A query of the shape
 *		SELECT key, sum(x), count(*) ... FROM columnar_table
 *		[WHERE column op value AND ...] GROUP BY key
 * where key is a variable-length column (a stack, a label set), the sums
 * are over bigint columns and every WHERE clause is a chunk predicate (see
 * columnar_customscan.c), is planned as one custom scan node that reads the
 * key and summed columns only and adds up rows by the key's dictionary
 * entry: within a stripe equal keys share one decoded dictionary entry, so
 * a row costs a pointer hash instead of hashing and comparing its key's
 * bytes.  The entries are merged by value at the end.  The plan is offered
 * beside the ordinary ones (create_upper_paths_hook) and wins on cost;
 * parca.columnar_enable_aggregate = off turns it off.
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_aggregate.h"
#include "commands/explain.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planner.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "columnar/columnar_internal.h"

/* What each output column of the node is. */
#define AGG_KEY		0
#define AGG_SUM		1
#define AGG_COUNT	2
#define AGG_CONST	3			/* an output the planner found unused */

static create_upper_paths_hook_type prev_create_upper_paths_hook;

/* One group: its key and its running sums. */
typedef struct AggGroup
{
	const char *key;			/* payload bytes; NULL for the NULL group */
	uint32		keylen;
	int64		count;
	int128	   *sums;			/* [nouts] */
	int64	   *nonnull;		/* [nouts] */
} AggGroup;

typedef struct PtrEntry
{
	uintptr_t	ptr;
	AggGroup   *group;
	char		status;
} PtrEntry;

#define SH_PREFIX ptrmap
#define SH_ELEMENT_TYPE PtrEntry
#define SH_KEY_TYPE uintptr_t
#define SH_KEY ptr
#define SH_HASH_KEY(tb, k) murmurhash32((uint32) ((uint64) (k) ^ ((uint64) (k) >> 32)))
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

typedef struct BytesKey
{
	const char *ptr;
	uint32		len;
} BytesKey;

typedef struct BytesEntry
{
	BytesKey	key;
	AggGroup   *group;
} BytesEntry;

typedef struct ColumnarAggState
{
	CustomScanState css;
	Relation	rel;
	AttrNumber	key_attno;
	int			nouts;
	int		   *out_kind;		/* [nouts] AGG_* */
	AttrNumber *out_attno;		/* [nouts] summed column */
	Const	  **out_const;		/* [nouts] AGG_CONST values */
	Bitmapset  *attrs;
	List	   *preds;
	List	   *pred_exprs;
	/* results */
	bool		done;
	AggGroup  **groups;
	int64		ngroups;
	int64		next;
	int64		groups_read;
	int64		groups_skipped;
	int64		blocks_read;
} ColumnarAggState;

static Plan *plan_agg_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
						   List *tlist, List *clauses, List *custom_plans);
static Node *create_agg_state(CustomScan *cscan);
static void begin_agg(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_agg(CustomScanState *node);
static void end_agg(CustomScanState *node);
static void rescan_agg(CustomScanState *node);
static void explain_agg(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomPathMethods agg_path_methods = {
	.CustomName = "ColumnarAggregate",
	.PlanCustomPath = plan_agg_path,
};

static const CustomScanMethods agg_scan_methods = {
	.CustomName = "ColumnarAggregate",
	.CreateCustomScanState = create_agg_state,
};

static const CustomExecMethods agg_exec_methods = {
	.CustomName = "ColumnarAggregate",
	.BeginCustomScan = begin_agg,
	.ExecCustomScan = exec_agg,
	.EndCustomScan = end_agg,
	.ReScanCustomScan = rescan_agg,
	.ExplainCustomScan = explain_agg,
};

/* A column of the relation at relid, or NULL. */
static Var *
rel_column(Node *node, Index relid)
{
	Var		   *var = (Var *) node;

	if (!IsA(node, Var) || var->varno != relid || var->varattno <= 0 || var->varlevelsup != 0)
		return NULL;
	return var;
}

/* Output column kind of expr, or -1 if the node cannot compute it. */
static int
output_kind(Expr *expr, Var *key, Index relid, AttrNumber *attno)
{
	Aggref	   *agg;

	*attno = InvalidAttrNumber;
	if (equal(expr, key))
		return AGG_KEY;
	if (IsA(expr, Const))
		return AGG_CONST;
	if (!IsA(expr, Aggref))
		return -1;
	agg = (Aggref *) expr;
	if (agg->aggfilter || agg->aggdistinct || agg->aggorder || agg->agglevelsup != 0 ||
		agg->aggkind != AGGKIND_NORMAL || agg->aggsplit != AGGSPLIT_SIMPLE)
		return -1;
	if (agg->aggfnoid == F_COUNT_ && agg->aggstar)
		return AGG_COUNT;
	if (agg->aggfnoid == F_SUM_INT8 && list_length(agg->args) == 1)
	{
		Var		   *v = rel_column((Node *) ((TargetEntry *) linitial(agg->args))->expr, relid);

		if (v && v->vartype == INT8OID)
		{
			*attno = v->varattno;
			return AGG_SUM;
		}
	}
	return -1;
}

static void
columnar_create_upper_paths(PlannerInfo *root, UpperRelationKind stage,
							RelOptInfo *input_rel, RelOptInfo *output_rel, void *extra)
{
	Query	   *parse = root->parse;
	RangeTblEntry *rte;
	Relation	rel;
	bool		columnar;
	Var		   *key;
	PathTarget *target;
	ListCell   *lc;
	List	   *outs = NIL;
	CustomPath *cpath;
	Path	   *cheapest;

	if (prev_create_upper_paths_hook)
		prev_create_upper_paths_hook(root, stage, input_rel, output_rel, extra);
	if (stage != UPPERREL_GROUP_AGG || !columnar_enable_aggregate ||
		input_rel->reloptkind != RELOPT_BASEREL || output_rel->pathlist == NIL)
		return;
	if (parse->groupingSets || parse->havingQual || parse->hasWindowFuncs ||
		parse->hasTargetSRFs || list_length(parse->groupClause) != 1)
		return;
	rte = planner_rt_fetch(input_rel->relid, root);
	/* not an inheritance parent: its children are other tables */
	if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_RELATION || rte->inh)
		return;
	rel = table_open(rte->relid, NoLock);
	columnar = columnar_is_columnar(rel);
	table_close(rel, NoLock);
	if (!columnar)
		return;

	key = rel_column((Node *) get_sortgroupclause_expr(linitial(parse->groupClause),
													   parse->targetList),
					 input_rel->relid);
	if (key == NULL || get_typlen(key->vartype) != -1)
		return;
	target = root->upper_targets[UPPERREL_GROUP_AGG];
	foreach(lc, target->exprs)
	{
		AttrNumber	attno;
		int			kind = output_kind(lfirst(lc), key, input_rel->relid, &attno);

		if (kind < 0)
			return;
		outs = lappend(outs, list_make2(makeInteger(kind), makeInteger(attno)));
	}
	foreach(lc, input_rel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst(lc);
		AttrNumber	attno;
		int			strategy;
		Oid			cmpproc;
		Expr	   *value;
		Oid			collation;

		if (!columnar_clause_predicate(ri->clause, input_rel->relid, &attno, &strategy,
									   &cmpproc, &value, &collation))
			return;
	}

	cheapest = linitial(output_rel->pathlist);
	foreach(lc, output_rel->pathlist)
		if (((Path *) lfirst(lc))->total_cost < cheapest->total_cost)
			cheapest = lfirst(lc);

	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = output_rel;
	cpath->path.pathtarget = target;
	cpath->path.rows = cheapest->rows;
	/* one pass, no hashing of keys per row: below the cheapest plan */
	cpath->path.startup_cost = cheapest->startup_cost * COLUMNAR_AGG_COST;
	cpath->path.total_cost = cheapest->total_cost * COLUMNAR_AGG_COST;
	cpath->methods = &agg_path_methods;
	cpath->custom_private = list_make4(makeInteger(rte->relid), makeInteger(key->varattno),
									   outs, input_rel->baserestrictinfo);
	cpath->custom_private = lappend(cpath->custom_private, makeInteger(input_rel->relid));
	add_path(output_rel, &cpath->path);
}

static Plan *
plan_agg_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			  List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *restrictinfo = lfourth(best_path->custom_private);
	Index		relid = intVal(list_nth(best_path->custom_private, 4));
	List	   *pred_info = NIL;
	List	   *pred_values = NIL;
	List	   *scan_tlist = NIL;
	ListCell   *lc;
	int			i = 1;

	foreach(lc, best_path->path.pathtarget->exprs)
		scan_tlist = lappend(scan_tlist, makeTargetEntry(copyObject(lfirst(lc)), i++, NULL, false));
	foreach(lc, restrictinfo)
	{
		RestrictInfo *ri = lfirst(lc);
		AttrNumber	attno;
		int			strategy;
		Oid			cmpproc;
		Expr	   *value;
		Oid			collation;

		columnar_clause_predicate(ri->clause, relid, &attno, &strategy, &cmpproc, &value,
								  &collation);
		pred_info = lappend(pred_info,
							columnar_predicate_to_plan(attno, strategy, cmpproc, collation));
		pred_values = lappend(pred_values, value);
	}
	cscan->scan.scanrelid = 0;
	cscan->scan.plan.targetlist = tlist;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_exprs = pred_values;
	cscan->custom_private = list_make4(linitial(best_path->custom_private),
									   lsecond(best_path->custom_private),
									   lthird(best_path->custom_private), pred_info);
	cscan->methods = &agg_scan_methods;
	return &cscan->scan.plan;
}

static Node *
create_agg_state(CustomScan *cscan)
{
	ColumnarAggState *state = (ColumnarAggState *) newNode(sizeof(ColumnarAggState),
														   T_CustomScanState);

	state->css.methods = &agg_exec_methods;
	return (Node *) state;
}

static void
begin_agg(CustomScanState *node, EState *estate, int eflags)
{
	ColumnarAggState *state = (ColumnarAggState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *outs = lthird(cscan->custom_private);
	List	   *pred_info = lfourth(cscan->custom_private);
	ListCell   *lc;
	ListCell   *lc2;
	int			i = 0;

	state->rel = table_open((Oid) intVal(linitial(cscan->custom_private)), NoLock);
	state->key_attno = intVal(lsecond(cscan->custom_private));
	state->attrs = bms_make_singleton(state->key_attno);
	state->nouts = list_length(outs);
	state->out_kind = palloc(sizeof(int) * state->nouts);
	state->out_attno = palloc(sizeof(AttrNumber) * state->nouts);
	state->out_const = palloc0(sizeof(Const *) * state->nouts);
	foreach(lc, outs)
	{
		state->out_kind[i] = intVal(linitial(lfirst(lc)));
		state->out_attno[i] = intVal(lsecond(lfirst(lc)));
		if (state->out_kind[i] == AGG_CONST)
			state->out_const[i] = (Const *) ((TargetEntry *) list_nth(cscan->custom_scan_tlist, i))->expr;
		if (state->out_kind[i] == AGG_SUM)
			state->attrs = bms_add_member(state->attrs, state->out_attno[i]);
		i++;
	}
	forboth(lc, pred_info, lc2, cscan->custom_exprs)
	{
		state->preds = lappend(state->preds, columnar_predicate_from_plan(lfirst(lc)));
		state->pred_exprs = lappend(state->pred_exprs, ExecInitExpr(lfirst(lc2), &node->ss.ps));
	}
}

static uint32
bytes_hash(const void *key, Size keysize)
{
	const BytesKey *k = key;

	return hash_bytes((const unsigned char *) k->ptr, (int) k->len);
}

static int
bytes_match(const void *a, const void *b, Size keysize)
{
	const BytesKey *x = a;
	const BytesKey *y = b;

	return x->len == y->len && memcmp(x->ptr, y->ptr, x->len) == 0 ? 0 : 1;
}

static AggGroup *
new_group(ColumnarAggState *state)
{
	AggGroup   *g = palloc0(sizeof(AggGroup));

	g->sums = palloc0(sizeof(int128) * state->nouts);
	g->nonnull = palloc0(sizeof(int64) * state->nouts);
	return g;
}

static void
add_into(ColumnarAggState *state, AggGroup *to, AggGroup *from)
{
	to->count += from->count;
	for (int i = 0; i < state->nouts; i++)
	{
		to->sums[i] += from->sums[i];
		to->nonnull[i] += from->nonnull[i];
	}
}

/* The group of key bytes in the by-value table, made if new. */
static AggGroup *
bytes_group(ColumnarAggState *state, HTAB *bytes, const char *ptr, uint32 len)
{
	BytesKey	k = {ptr, len};
	bool		found;
	BytesEntry *e = hash_search(bytes, &k, HASH_ENTER, &found);

	if (!found)
	{
		char	   *copy = palloc(len + 1);

		memcpy(copy, ptr, len);
		e->key.ptr = copy;
		e->group = new_group(state);
		e->group->key = copy;
		e->group->keylen = len;
	}
	return e->group;
}

static void
aggregate(ColumnarAggState *state)
{
	ScanState  *ss = &state->css.ss;
	ExprContext *econtext = ss->ps.ps_ExprContext;
	ColumnarReadState *rs;
	MemoryContext old;
	ptrmap_hash *ptrs;
	HTAB	   *bytes;
	HASHCTL		ctl;
	AggGroup   *null_group = NULL;
	int			natts = RelationGetDescr(state->rel)->natts;
	Datum	   *values;
	bool	   *isnull;
	int64		row;
	ptrmap_iterator it;
	PtrEntry   *pe;
	HASH_SEQ_STATUS seq;
	BytesEntry *be;

	columnar_predicates_set_values(state->preds, state->pred_exprs, econtext);
	old = MemoryContextSwitchTo(ss->ps.state->es_query_cxt);
	values = palloc(sizeof(Datum) * natts);
	isnull = palloc(sizeof(bool) * natts);
	rs = columnar_read_begin(state->rel, ss->ps.state->es_snapshot, state->attrs, state->preds);
	columnar_read_keep_dicts(rs);
	columnar_read_filter_rows(rs);
	ptrs = ptrmap_create(CurrentMemoryContext, 4096, NULL);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(BytesKey);
	ctl.entrysize = sizeof(BytesEntry);
	ctl.hash = bytes_hash;
	ctl.match = bytes_match;
	ctl.hcxt = CurrentMemoryContext;
	bytes = hash_create("columnar aggregate", 4096, &ctl,
						HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);

	while (columnar_read_next(rs, values, isnull, &row))
	{
		AggGroup   *g;
		Datum		key = values[state->key_attno - 1];

		if (isnull[state->key_attno - 1])
		{
			if (null_group == NULL)
				null_group = new_group(state);
			g = null_group;
		}
		else if (columnar_read_value_is_dict(rs, state->key_attno))
		{
			bool		found;

			pe = ptrmap_insert(ptrs, (uintptr_t) DatumGetPointer(key), &found);
			if (!found)
				pe->group = new_group(state);
			g = pe->group;
		}
		else
		{
			struct varlena *v = (struct varlena *) DatumGetPointer(key);

			g = bytes_group(state, bytes, VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
		}
		g->count++;
		for (int i = 0; i < state->nouts; i++)
		{
			if (state->out_kind[i] != AGG_SUM || isnull[state->out_attno[i] - 1])
				continue;
			g->sums[i] += DatumGetInt64(values[state->out_attno[i] - 1]);
			g->nonnull[i]++;
		}
	}

	/* dictionary entries by value */
	ptrmap_start_iterate(ptrs, &it);
	while ((pe = ptrmap_iterate(ptrs, &it)) != NULL)
	{
		struct varlena *v = (struct varlena *) pe->ptr;

		add_into(state, bytes_group(state, bytes, VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v)),
				 pe->group);
	}
	state->ngroups = hash_get_num_entries(bytes) + (null_group ? 1 : 0);
	state->groups = palloc(sizeof(AggGroup *) * Max(state->ngroups, 1));
	state->ngroups = 0;
	hash_seq_init(&seq, bytes);
	while ((be = hash_seq_search(&seq)) != NULL)
		state->groups[state->ngroups++] = be->group;
	if (null_group)
		state->groups[state->ngroups++] = null_group;
	columnar_read_stats(rs, &state->groups_read, &state->groups_skipped, &state->blocks_read);
	columnar_read_end(rs);
	MemoryContextSwitchTo(old);
	state->done = true;
}

static Datum
int128_numeric(int128 v)
{
	int64		hi;
	uint64		lo;
	Datum		d;

	if (v >= PG_INT64_MIN && v <= PG_INT64_MAX)
		return NumericGetDatum(int64_to_numeric((int64) v));
	/* hi * 2^32 * 2^32 + lo */
	hi = (int64) (v >> 64);
	lo = (uint64) v;
	d = DirectFunctionCall2(numeric_mul, NumericGetDatum(int64_to_numeric(hi)),
							NumericGetDatum(int64_to_numeric(INT64CONST(1) << 32)));
	d = DirectFunctionCall2(numeric_mul, d, NumericGetDatum(int64_to_numeric(INT64CONST(1) << 32)));
	d = DirectFunctionCall2(numeric_add, d, NumericGetDatum(int64_to_numeric((int64) (lo >> 1))));
	d = DirectFunctionCall2(numeric_add, d, NumericGetDatum(int64_to_numeric((int64) (lo >> 1))));
	return DirectFunctionCall2(numeric_add, d, NumericGetDatum(int64_to_numeric((int64) (lo & 1))));
}

static TupleTableSlot *
agg_next(ScanState *ss)
{
	ColumnarAggState *state = (ColumnarAggState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	AggGroup   *g;

	if (!state->done)
		aggregate(state);
	ExecClearTuple(slot);
	if (state->next >= state->ngroups)
		return slot;
	g = state->groups[state->next++];
	for (int i = 0; i < state->nouts; i++)
	{
		slot->tts_isnull[i] = false;
		switch (state->out_kind[i])
		{
			case AGG_KEY:
				if (g->key == NULL)
					slot->tts_isnull[i] = true;
				else
				{
					struct varlena *v = palloc(VARHDRSZ + g->keylen);

					SET_VARSIZE(v, VARHDRSZ + g->keylen);
					memcpy(VARDATA(v), g->key, g->keylen);
					slot->tts_values[i] = PointerGetDatum(v);
				}
				break;
			case AGG_SUM:
				if (g->nonnull[i] == 0)
					slot->tts_isnull[i] = true;
				else
					slot->tts_values[i] = int128_numeric(g->sums[i]);
				break;
			case AGG_COUNT:
				slot->tts_values[i] = Int64GetDatum(g->count);
				break;
			case AGG_CONST:
				slot->tts_values[i] = state->out_const[i]->constvalue;
				slot->tts_isnull[i] = state->out_const[i]->constisnull;
				break;
		}
	}
	return ExecStoreVirtualTuple(slot);
}

static bool
agg_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_agg(CustomScanState *node)
{
	return ExecScan(&node->ss, agg_next, agg_recheck);
}

static void
end_agg(CustomScanState *node)
{
	table_close(((ColumnarAggState *) node)->rel, NoLock);
}

static void
rescan_agg(CustomScanState *node)
{
	ColumnarAggState *state = (ColumnarAggState *) node;

	/* parameters may have changed: aggregate again */
	state->done = false;
	state->next = 0;
	state->ngroups = 0;
	ExecScanReScan(&node->ss);
}

static void
explain_agg(CustomScanState *node, List *ancestors, ExplainState *es)
{
	ColumnarAggState *state = (ColumnarAggState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	TupleDesc	desc = RelationGetDescr(state->rel);
	List	   *context = set_deparse_context_plan(es->deparse_cxt, &cscan->scan.plan, ancestors);
	StringInfoData buf;
	ListCell   *lc;
	ListCell   *lc2;
	static const char *const ops[] = {"", "<", "<=", "=", ">=", ">", "= ANY"};

	ExplainPropertyText("Table", RelationGetRelationName(state->rel), es);
	ExplainPropertyText("Group Key",
						quote_identifier(NameStr(TupleDescAttr(desc, state->key_attno - 1)->attname)),
						es);
	initStringInfo(&buf);
	forboth(lc, state->preds, lc2, cscan->custom_exprs)
	{
		ColumnarPredicate *p = lfirst(lc);

		appendStringInfo(&buf, p->strategy == COLUMNAR_STRATEGY_ANY ? "%s(%s %s (%s))" : "%s(%s %s %s)",
						 buf.len ? " AND " : "",
						 quote_identifier(NameStr(TupleDescAttr(desc, p->attno - 1)->attname)),
						 ops[p->strategy],
						 deparse_expression(lfirst(lc2), context, false, false));
	}
	if (buf.len)
		ExplainPropertyText("Chunk Filter", buf.data, es);
	if (es->analyze)
	{
		ExplainPropertyInteger("Chunk Groups Read", NULL, state->groups_read, es);
		ExplainPropertyInteger("Chunk Groups Skipped", NULL, state->groups_skipped, es);
		ExplainPropertyInteger("Data Blocks Read", NULL, state->blocks_read, es);
	}
}

void
columnar_agg_init(void)
{
	RegisterCustomScanMethods(&agg_scan_methods);
	prev_create_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = columnar_create_upper_paths;
}
