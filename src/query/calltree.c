/*
 * calltree.c
 *		Building the call tree of a profile, ordering it, and
 *		parca_icicle(): the tree as Grafana's flame graph data frame
 *		(trimming it: calltree_trim.c).
 *
 * Stacks are stored leaf first; the tree is built root first, each
 * location expanded into its lines from the outermost caller to the
 * innermost inlined function.  Children are found through one hash
 * table keyed by (parent node, frame name).
 */
#include "postgres.h"

#include <math.h>

#include "common/hashfn.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "query/calltree_internal.h"

static int
add_node(CallTree *t, int parent, int name)
{
	CallNode   *n;

	if (t->nnodes == t->maxnodes)
	{
		t->maxnodes *= 2;
		t->nodes = repalloc_huge(t->nodes, sizeof(CallNode) * t->maxnodes);
	}
	n = &t->nodes[t->nnodes];
	memset(n, 0, sizeof(CallNode));
	n->name = name;
	n->parent = parent;
	n->depth = parent >= 0 ? t->nodes[parent].depth + 1 : 0;
	n->first_child = -1;
	n->next_sibling = -1;
	if (parent >= 0)
	{
		n->next_sibling = t->nodes[parent].first_child;
		t->nodes[parent].first_child = t->nnodes;
	}
	return t->nnodes++;
}

int
calltree_add_node(CallTree *t, int parent, int name)
{
	return add_node(t, parent, name);
}

static int
child_of(CallTree *t, int parent, int name)
{
	uint64		key = ((uint64) (uint32) parent << 32) | (uint32) name;
	bool		found;
	ChildEntry *e = childmap_insert(t->children, key, &found);

	if (!found)
		e->node = add_node(t, parent, name);
	return e->node;
}

CallTree *
calltree_create(Symbols *syms, const ProfileMeta *meta, int root_name)
{
	CallTree   *t = palloc0(sizeof(CallTree));

	t->syms = syms;
	t->meta = *meta;
	t->maxnodes = 1024;
	t->nodes = palloc(sizeof(CallNode) * t->maxnodes);
	t->children = childmap_create(CurrentMemoryContext, 4096, NULL);
	add_node(t, -1, root_name);
	return t;
}

int
calltree_sample_names(Symbols *syms, const ProfileSample *s, int **names, int *cap)
{
	int			n = 0;

	for (int i = s->nframes - 1; i >= 0; i--)
	{
		const SymLocation *loc = symbols_location(syms, profile_sample_frame(s, i));

		if (n + loc->nframes > *cap)
		{
			*cap = Max(*cap * 2, n + loc->nframes);
			*names = *names ? repalloc(*names, sizeof(int) * *cap) : palloc(sizeof(int) * *cap);
		}
		for (int k = loc->nframes - 1; k >= 0; k--)
			(*names)[n++] = loc->frames[k];
	}
	return n;
}

void
calltree_add_path(CallTree *t, const int *names, int n, int64 value, int64 value_right)
{
	int			cur = 0;

	/* sums that leave 64 bits are errors, as in the profile itself */
	profile_value_add(&t->nodes[0].value, value);
	profile_value_add(&t->nodes[0].value_right, value_right);
	for (int i = 0; i < n; i++)
	{
		cur = child_of(t, cur, names[i]);
		profile_value_add(&t->nodes[cur].value, value);
		profile_value_add(&t->nodes[cur].value_right, value_right);
	}
	profile_value_add(&t->nodes[cur].self, value);
	profile_value_add(&t->nodes[cur].self_right, value_right);
}

CallTree *
calltree_build(const struct varlena *profile)
{
	ProfileReader r;
	ProfileSample s;
	CallTree   *t;
	int		   *names = NULL;
	int			cap = 0;

	profile_reader_init(&r, profile);
	t = calltree_create(symbols_load(profile), &r.meta, CALLTREE_ROOT);
	while (profile_reader_next(&r, &s))
	{
		int			n;

		CHECK_FOR_INTERRUPTS();
		n = calltree_sample_names(t->syms, &s, &names, &cap);
		calltree_add_path(t, names, n, s.value, s.value_right);
	}
	return t;
}

bool
calltree_weighs(const CallTree *t)
{
	for (int i = 0; i < t->nnodes; i++)
		if (t->nodes[i].value != 0 || t->nodes[i].value_right != 0)
			return true;
	return false;
}

const char *
calltree_label(const CallTree *t, int node)
{
	int			name = t->nodes[node].name;

	if (name == CALLTREE_ROOT)
		return "total";
	if (name == CALLTREE_TRIMMED)
		return "[trimmed]";
	return t->syms->names.strings[name];
}

/*
 * Siblings in name order: each name's rank among the profile's names,
 * sorted once (the names are far fewer than the nodes), so that ordering
 * the children of a node compares integers.
 */
typedef struct NameOrder
{
	const CallTree *t;
	int		   *rank;			/* per name */
} NameOrder;

static const NameOrder *name_order;

static int
cmp_name_ids(const void *a, const void *b)
{
	return strcmp(name_order->t->syms->names.strings[*(const int *) a],
				  name_order->t->syms->names.strings[*(const int *) b]);
}

/* By name; a [trimmed] node beside a function of that name after it. */
static int
cmp_siblings(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;
	int			nx = name_order->t->nodes[x].name;
	int			ny = name_order->t->nodes[y].name;
	int			c;

	if (nx >= 0 && ny >= 0)
		c = name_order->rank[nx] - name_order->rank[ny];
	else
		c = strcmp(calltree_label(name_order->t, x), calltree_label(name_order->t, y));
	return c != 0 ? c : x - y;
}

static void
name_order_init(NameOrder *o, const CallTree *t)
{
	int			n = t->syms->names.n;
	int		   *ids = palloc(sizeof(int) * Max(n, 1));

	o->t = t;
	o->rank = palloc(sizeof(int) * Max(n, 1));
	for (int i = 0; i < n; i++)
		ids[i] = i;
	name_order = o;
	qsort(ids, n, sizeof(int), cmp_name_ids);
	for (int i = 0; i < n; i++)
		o->rank[ids[i]] = i;
	pfree(ids);
}

int *
calltree_preorder(const CallTree *t, int *n)
{
	int		   *out = palloc(sizeof(int) * t->nnodes);
	int		   *stack = palloc(sizeof(int) * t->nnodes);
	int		   *kids = palloc(sizeof(int) * t->nnodes);
	int			top = 0;
	int			count = 0;
	NameOrder	order;

	name_order_init(&order, t);
	stack[top++] = 0;
	while (top > 0)
	{
		int			node = stack[--top];
		int			nk = 0;

		CHECK_FOR_INTERRUPTS();
		out[count++] = node;
		for (int c = t->nodes[node].first_child; c >= 0; c = t->nodes[c].next_sibling)
			if (!t->nodes[c].folded)
				kids[nk++] = c;
		name_order = &order;
		if (nk > 1)
			qsort(kids, nk, sizeof(int), cmp_siblings);
		/* pushed in reverse so that the first child comes out first */
		while (nk > 0)
			stack[top++] = kids[--nk];
	}
	pfree(stack);
	pfree(kids);
	pfree(order.rank);
	*n = count;
	return out;
}

PG_FUNCTION_INFO_V1(parca_icicle);
PG_FUNCTION_INFO_V1(parca_icicle_diff);

void
calltree_icicle_rows(FunctionCallInfo fcinfo, CallTree *t, const char *fname, int max_nodes,
					 double node_trim_threshold)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		diff = t->meta.is_diff;
	int		   *order;
	int			n;
	double		folded_value;
	int			nfolded;
	int			nnodes;

	if (!calltree_weighs(t))
		return;
	nnodes = t->nnodes;
	nfolded = calltree_trim(t, max_nodes, node_trim_threshold / 100.0, &folded_value);
	if (nfolded > 0)
		ereport(NOTICE,
				(errmsg("%s: trimmed %d of %d nodes (weight %.0f of %.0f); every function shown keeps its exact self value",
						fname, nfolded, nnodes, folded_value,
						fabs((double) t->nodes[0].value) + fabs((double) t->nodes[0].value_right))));
	order = calltree_preorder(t, &n);
	for (int i = 0; i < n; i++)
	{
		const CallNode *node = &t->nodes[order[i]];
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};
		int			col = 0;

		values[col++] = Int32GetDatum(node->depth);
		values[col++] = Int64GetDatum(node->value);
		values[col++] = Int64GetDatum(node->self);
		if (diff)
		{
			values[col++] = Int64GetDatum(node->value_right);
			values[col++] = Int64GetDatum(node->self_right);
		}
		values[col++] = CStringGetTextDatum(calltree_label(t, order[i]));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * The rows of both icicle functions: Grafana's flame graph panel reads
 * value/self as one profile, or in a diff as the base side only, and adds
 * valueRight itself (@grafana/flamegraph, FlameGraph/dataTransform), so
 * the compared side goes only into the right columns.  The panel draws a
 * diff whenever those columns exist, so a plain profile has none.  An
 * empty profile gives no rows: nothing to draw.
 */
static void
icicle_rows(FunctionCallInfo fcinfo, bool diff)
{
	const char *fname = diff ? "parca_icicle_diff" : "parca_icicle";
	int			max_nodes = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1);
	double		threshold = PG_ARGISNULL(2) ? 0 : PG_GETARG_FLOAT8(2);
	CallTree   *t;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0))
		return;
	calltree_check_trim(max_nodes, threshold);
	t = calltree_build(PG_GETARG_PROFILE_P(0));
	if (t->meta.is_diff != diff)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 diff ? errmsg("parca_icicle_diff takes a diff profile (from parca_diff)") :
				 errmsg("parca_icicle takes a plain profile, not a diff"),
				 diff ? errhint("For one profile use parca_icicle.") :
				 errhint("For a diff use parca_icicle_diff, which adds the compared side as \"valueRight\" and \"selfRight\".")));
	calltree_icicle_rows(fcinfo, t, fname, max_nodes, threshold);
}

/*
 * parca_icicle(profile, max_nodes int DEFAULT 0, node_trim_threshold float8 DEFAULT 0)
 *   RETURNS TABLE(level, value, self, label)
 */
Datum
parca_icicle(PG_FUNCTION_ARGS)
{
	icicle_rows(fcinfo, false);
	PG_RETURN_VOID();
}

/*
 * parca_icicle_diff(profile, max_nodes int DEFAULT 0, node_trim_threshold float8 DEFAULT 0)
 *   RETURNS TABLE(level, value, self, "valueRight", "selfRight", label)
 */
Datum
parca_icicle_diff(PG_FUNCTION_ARGS)
{
	icicle_rows(fcinfo, true);
	PG_RETURN_VOID();
}
