/*
 * calltree.c
 *		Building the call tree of a profile, trimming it, and
 *		parca_icicle(): the tree as Grafana's flame graph data frame.
 *
 * Stacks are stored leaf first; the tree is built root first, each
 * location expanded into its lines from the outermost caller to the
 * innermost inlined function.  Children are found through one hash
 * table keyed by (parent node, frame name).
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "query/calltree.h"

typedef struct ChildEntry
{
	uint64		key;			/* parent << 32 | name */
	int			node;
	char		status;
} ChildEntry;

#define SH_PREFIX childmap
#define SH_ELEMENT_TYPE ChildEntry
#define SH_KEY_TYPE uint64
#define SH_KEY key
#define SH_HASH_KEY(tb, key) ((uint32) hash_bytes_uint32((uint32) (key)) ^ murmurhash32((uint32) ((key) >> 32)))
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

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
calltree_build(const struct varlena *profile)
{
	CallTree   *t = palloc0(sizeof(CallTree));
	ProfileReader r;
	ProfileSample s;

	t->syms = symbols_load(profile);
	t->maxnodes = 1024;
	t->nodes = palloc(sizeof(CallNode) * t->maxnodes);
	t->children = childmap_create(CurrentMemoryContext, 4096, NULL);
	add_node(t, -1, -1);

	profile_reader_init(&r, profile);
	t->meta = r.meta;
	while (profile_reader_next(&r, &s))
	{
		int			cur = 0;

		CHECK_FOR_INTERRUPTS();
		t->nodes[0].value += s.value;
		t->nodes[0].value_right += s.value_right;
		for (int i = s.nframes - 1; i >= 0; i--)
		{
			const SymLocation *loc = symbols_location(t->syms, profile_sample_frame(&s, i));

			for (int k = loc->nframes - 1; k >= 0; k--)
			{
				cur = child_of(t, cur, loc->frames[k]);
				t->nodes[cur].value += s.value;
				t->nodes[cur].value_right += s.value_right;
			}
		}
		t->nodes[cur].self += s.value;
		t->nodes[cur].self_right += s.value_right;
	}
	return t;
}

const char *
calltree_label(const CallTree *t, int node)
{
	int			name = t->nodes[node].name;

	return name < 0 ? "total" : t->syms->name[name];
}

static const CallTree *sort_tree;

static int
cmp_by_name(const void *a, const void *b)
{
	return strcmp(calltree_label(sort_tree, *(const int *) a),
				  calltree_label(sort_tree, *(const int *) b));
}

void
calltree_sort(CallTree *t)
{
	int		   *kids = palloc(sizeof(int) * t->nnodes);

	sort_tree = t;
	for (int p = 0; p < t->nnodes; p++)
	{
		int			n = 0;

		for (int c = t->nodes[p].first_child; c >= 0; c = t->nodes[c].next_sibling)
			kids[n++] = c;
		if (n < 2)
			continue;
		qsort(kids, n, sizeof(int), cmp_by_name);
		t->nodes[p].first_child = kids[0];
		for (int i = 0; i < n; i++)
			t->nodes[kids[i]].next_sibling = i + 1 < n ? kids[i + 1] : -1;
	}
	pfree(kids);
}

/* A node's rank for trimming, compact so that sorting stays in cache. */
typedef struct TrimKey
{
	int64		weight;			/* |value| + |value_right| */
	int32		depth;
	int32		node;
} TrimKey;

/* Heaviest first; parents before equally heavy children; then by index. */
static int
cmp_trim_keys(const void *a, const void *b)
{
	const TrimKey *x = a;
	const TrimKey *y = b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->node - y->node;
}

int
calltree_trim(CallTree *t, int max_nodes, int64 *folded_value)
{
	TrimKey    *keys;
	bool	   *keep;
	int			nfolded = 0;

	*folded_value = 0;
	if (max_nodes <= 0 || t->nnodes <= max_nodes)
		return 0;

	/* The heaviest max_nodes nodes, the root first whatever its weight. */
	keys = palloc(sizeof(TrimKey) * (t->nnodes - 1));
	for (int i = 1; i < t->nnodes; i++)
	{
		keys[i - 1].weight = Abs(t->nodes[i].value) + Abs(t->nodes[i].value_right);
		keys[i - 1].depth = t->nodes[i].depth;
		keys[i - 1].node = i;
	}
	qsort(keys, t->nnodes - 1, sizeof(TrimKey), cmp_trim_keys);
	keep = palloc0(sizeof(bool) * t->nnodes);
	keep[0] = true;
	for (int i = 0; i < max_nodes - 1; i++)
		keep[keys[i].node] = true;

	/*
	 * Nodes are created after their parents, so one pass in index order
	 * sees every parent's fate first.  A node whose parent stays but which
	 * does not carries its whole subtree into the parent's self.
	 */
	for (int i = 1; i < t->nnodes; i++)
	{
		CallNode   *n = &t->nodes[i];
		CallNode   *p = &t->nodes[n->parent];

		if (p->folded)
		{
			n->folded = true;
			nfolded++;
		}
		else if (!keep[i])
		{
			n->folded = true;
			nfolded++;
			p->self += n->value;
			p->self_right += n->value_right;
			*folded_value += n->value + n->value_right;
		}
	}
	pfree(keys);
	pfree(keep);
	return nfolded;
}

int *
calltree_preorder(const CallTree *t, int *n)
{
	int		   *out = palloc(sizeof(int) * t->nnodes);
	int		   *stack = palloc(sizeof(int) * t->nnodes);
	int		   *kids = palloc(sizeof(int) * t->nnodes);
	int			top = 0;
	int			count = 0;

	stack[top++] = 0;
	while (top > 0)
	{
		int			node = stack[--top];
		int			nk = 0;

		out[count++] = node;
		for (int c = t->nodes[node].first_child; c >= 0; c = t->nodes[c].next_sibling)
			if (!t->nodes[c].folded)
				kids[nk++] = c;
		/* pushed in reverse so that the first child comes out first */
		while (nk > 0)
			stack[top++] = kids[--nk];
	}
	pfree(stack);
	pfree(kids);
	*n = count;
	return out;
}

PG_FUNCTION_INFO_V1(parca_icicle);

/*
 * parca_icicle(profile, max_nodes int DEFAULT 0)
 *   RETURNS TABLE(level, value, self, "valueRight", "selfRight", label)
 *
 * For a diff profile, value and self are the sums of both sides and
 * valueRight/selfRight the compared side, which is how Grafana's flame
 * graph panel reads a diff; otherwise the right columns are NULL.
 */
Datum
parca_icicle(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	struct varlena *profile;
	int			max_nodes = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1);
	CallTree   *t;
	int		   *order;
	int			n;
	int64		folded_value;
	int			nfolded;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0))
		PG_RETURN_VOID();
	if (max_nodes < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_nodes must not be negative")));
	profile = PG_GETARG_PROFILE_P(0);
	t = calltree_build(profile);
	calltree_sort(t);
	nfolded = calltree_trim(t, max_nodes, &folded_value);
	if (nfolded > 0)
		ereport(NOTICE,
				(errmsg("parca_icicle: folded %d of %d nodes into their parents' self (value %lld of %lld)",
						nfolded, t->nnodes, (long long) folded_value,
						(long long) (t->nodes[0].value + t->nodes[0].value_right))));
	order = calltree_preorder(t, &n);
	for (int i = 0; i < n; i++)
	{
		const CallNode *node = &t->nodes[order[i]];
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};

		values[0] = Int32GetDatum(node->depth);
		values[1] = Int64GetDatum(node->value + node->value_right);
		values[2] = Int64GetDatum(node->self + node->self_right);
		values[3] = Int64GetDatum(node->value_right);
		values[4] = Int64GetDatum(node->self_right);
		nulls[3] = nulls[4] = !t->meta.is_diff;
		values[5] = CStringGetTextDatum(calltree_label(t, order[i]));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_VOID();
}
