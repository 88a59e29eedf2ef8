/*
 * calltree_trim.c
 *		Trimming a call tree to a number of nodes (calltree.h): the
 *		heaviest nodes kept, each folded region one [trimmed] node naming
 *		its hottest functions.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"

#include "query/calltree_internal.h"

/*
 * Trimming.  Which nodes stay is decided by inclusive weight (|value| +
 * |value_right|): the heaviest K nodes, parents before their equally
 * heavy children, so the picture keeps its widest frames.  A folded node
 * belongs to the region of its nearest kept ancestor (its anchor); each
 * region becomes one [trimmed] node, and the folded self of a "shown"
 * function in it one child of [trimmed] with that function's name.
 * Every name of a kept node must be shown (else its self would be
 * partial), so K is the largest that leaves room for those children and
 * a quarter of the budget for naming the hottest other functions.
 */

/* A node's rank for trimming, compact so that sorting stays in cache. */
typedef struct TrimKey
{
	double		weight;			/* |value| + |value_right| */
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

/* The folded self of one name in one region. */
typedef struct RegionSelf
{
	int64		self;
	int64		self_right;
} RegionSelf;

/* A ranked node and its rank, in the orders a trial reads them in. */
typedef struct RankedNode
{
	int			node;
	int			rank;
} RankedNode;

typedef struct Trim
{
	CallTree   *t;
	TrimKey    *ranked;			/* nodes 1.. by rank */
	bool	   *keep;			/* per node */
	bool	   *has_region;		/* per kept node: folded nodes hang below it */
	int		   *tin;			/* per node: its place in a depth-first walk */
	int		   *tout;			/* per node: the last place of its subtree */
	int		   *self_nodes;		/* the nodes with a self value, in walk order */
	int			nself;
	RankedNode *by_index;		/* the ranked nodes in node order */
	RankedNode *by_place;		/* the ranked nodes in walk order */
	int			nranked;
	int		   *kept;			/* this trial's kept nodes (room for every rank) */
	bool	   *shown;			/* per name: has exact self in the trimmed tree */
	int			nkept;
	int			nregions;
	childmap_hash *pairs;		/* (anchor << 32 | name) -> index in sums */
	RegionSelf *sums;
	int			nsums;
	int			maxsums;
} Trim;

static inline uint64
region_key(int anchor, int name)
{
	return ((uint64) (uint32) anchor << 32) | (uint32) name;
}

static inline bool
weighs(int64 a, int64 b)
{
	return a != 0 || b != 0;
}

/*
 * One depth-first walk of the tree: each node's interval [tin, tout] of
 * places holds exactly its subtree, so a node's nearest kept ancestor is
 * found by a sweep over places; and the nodes with a self value in walk
 * order.
 */
static void
trim_walk(Trim *tr)
{
	const CallTree *t = tr->t;
	int			node = 0;
	int			clock = 0;

	tr->tin = palloc(sizeof(int) * t->nnodes);
	tr->tout = palloc(sizeof(int) * t->nnodes);
	tr->self_nodes = palloc(sizeof(int) * t->nnodes);
	tr->nself = 0;
	tr->tin[0] = clock++;
	for (;;)
	{
		const CallNode *n = &t->nodes[node];

		if (node > 0 && weighs(n->self, n->self_right))
			tr->self_nodes[tr->nself++] = node;
		if (n->first_child >= 0)
		{
			node = n->first_child;
			tr->tin[node] = clock++;
			continue;
		}
		/* up to the first ancestor-or-self with a next sibling */
		for (;;)
		{
			tr->tout[node] = clock - 1;
			if (node == 0)
				return;
			if (t->nodes[node].next_sibling >= 0)
			{
				node = t->nodes[node].next_sibling;
				tr->tin[node] = clock++;
				break;
			}
			node = t->nodes[node].parent;
		}
	}
}

static const Trim *sort_trim;

static int
cmp_by_index(const void *a, const void *b)
{
	int			x = ((const RankedNode *) a)->node;
	int			y = ((const RankedNode *) b)->node;

	return x < y ? -1 : x > y;
}

static int
cmp_by_place(const void *a, const void *b)
{
	int			x = sort_trim->tin[((const RankedNode *) a)->node];
	int			y = sort_trim->tin[((const RankedNode *) b)->node];

	return x < y ? -1 : x > y;
}

/*
 * The first n of tr->ranked in node order and in walk order, once for
 * every trial: a trial keeps those of rank below its count.
 */
static void
trim_order_ranked(Trim *tr, int n)
{
	tr->nranked = n;
	tr->by_index = palloc(sizeof(RankedNode) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		tr->by_index[i].node = tr->ranked[i].node;
		tr->by_index[i].rank = i;
	}
	tr->by_place = palloc(sizeof(RankedNode) * Max(n, 1));
	memcpy(tr->by_place, tr->by_index, sizeof(RankedNode) * n);
	qsort(tr->by_index, n, sizeof(RankedNode), cmp_by_index);
	sort_trim = tr;
	qsort(tr->by_place, n, sizeof(RankedNode), cmp_by_place);
	tr->kept = palloc(sizeof(int) * (n + 1));
}

/* Adds a folded node's self to its region's sum for its name. */
static void
region_add_self(Trim *tr, int anchor, const CallNode *n, int *count)
{
	bool		found;
	ChildEntry *e = childmap_insert(tr->pairs, region_key(anchor, n->name), &found);
	RegionSelf *sum;

	if (!found)
	{
		if (tr->nsums == tr->maxsums)
		{
			tr->maxsums *= 2;
			tr->sums = repalloc_huge(tr->sums, sizeof(RegionSelf) * tr->maxsums);
		}
		e->node = tr->nsums++;
		tr->sums[e->node].self = tr->sums[e->node].self_right = 0;
		if (tr->shown[n->name])
			(*count)++;
	}
	sum = &tr->sums[e->node];
	profile_value_add(&sum->self, n->self);
	profile_value_add(&sum->self_right, n->self_right);
}

static void
region_mark(Trim *tr, int anchor)
{
	if (!tr->has_region[anchor])
	{
		tr->has_region[anchor] = true;
		tr->nregions++;
	}
}

/*
 * Keeps the root and the k - 1 heaviest nodes (and drops any whose parent
 * is dropped), finds the regions and the folded self per (region, name);
 * marks the names of kept nodes shown.  Returns the node count the
 * trimmed tree would have with only those names shown.  Besides clearing
 * two flags a node, its work is the ranked nodes, the kept ones'
 * children and the nodes with a self value (at most one a stack), not a
 * walk of the whole tree: a folded node's region is its nearest kept
 * ancestor's, found by a sweep in walk order.
 */
static int
trim_evaluate(Trim *tr, int k)
{
	CallTree   *t = tr->t;
	int			count = 0;
	int		   *stack;
	int			top = 0;
	int			next_kept = 0;

	memset(tr->keep, 0, sizeof(bool) * t->nnodes);
	memset(tr->has_region, 0, sizeof(bool) * t->nnodes);
	memset(tr->shown, 0, sizeof(bool) * Max(t->syms->names.n, 1));
	childmap_reset(tr->pairs);
	tr->nsums = 0;
	tr->nregions = 0;

	/* kept: in node order, parents before children (they are made first) */
	tr->keep[0] = true;
	tr->kept[0] = 0;
	tr->nkept = 1;
	for (int i = 0; i < tr->nranked; i++)
	{
		int			node = tr->by_index[i].node;

		if (tr->by_index[i].rank >= k - 1 || !tr->keep[t->nodes[node].parent])
			continue;
		tr->keep[node] = true;
		tr->shown[t->nodes[node].name] = true;
		tr->kept[tr->nkept++] = node;
	}

	/* the folded children of kept nodes that weigh make regions */
	for (int i = 0; i < tr->nkept; i++)
		for (int c = t->nodes[tr->kept[i]].first_child; c >= 0; c = t->nodes[c].next_sibling)
			if (!tr->keep[c] && weighs(t->nodes[c].value, t->nodes[c].value_right))
				region_mark(tr, tr->kept[i]);

	/* folded self: by walk order, each under the innermost kept interval holding it */
	stack = tr->kept;			/* done with: it becomes the sweep's stack */
	stack[top++] = 0;
	for (int i = 0; i < tr->nself; i++)
	{
		int			s = tr->self_nodes[i];

		for (; next_kept < tr->nranked && tr->tin[tr->by_place[next_kept].node] <= tr->tin[s]; next_kept++)
		{
			int			kn = tr->by_place[next_kept].node;

			if (!tr->keep[kn])
				continue;
			while (tr->tout[stack[top - 1]] < tr->tin[kn])
				top--;
			stack[top++] = kn;
		}
		if (tr->keep[s])
			continue;
		while (tr->tout[stack[top - 1]] < tr->tin[s])
			top--;
		region_mark(tr, stack[top - 1]);
		region_add_self(tr, stack[top - 1], &t->nodes[s], &count);
	}
	return count + tr->nkept + tr->nregions;
}

static const CallTree *sort_names_tree;
static const double *sort_names_weight;

/* Names by their self weight over the whole tree, heaviest first, then by name. */
static int
cmp_names(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	if (sort_names_weight[x] != sort_names_weight[y])
		return sort_names_weight[x] > sort_names_weight[y] ? -1 : 1;
	return strcmp(sort_names_tree->syms->names.strings[x], sort_names_tree->syms->names.strings[y]);
}

static inline double
node_weight(const CallNode *n)
{
	return fabs((double) n->value) + fabs((double) n->value_right);
}

static inline TrimKey
trim_key(const CallTree *t, int node)
{
	TrimKey		k;

	k.weight = node_weight(&t->nodes[node]);
	k.depth = t->nodes[node].depth;
	k.node = node;
	return k;
}

/* Moves heap[at] down a heap whose top is the last in rank. */
static void
heap_sift_down(TrimKey *heap, int n, int at)
{
	for (;;)
	{
		int			worst = at;
		int			l = 2 * at + 1;
		int			r = l + 1;
		TrimKey		swap;

		if (l < n && cmp_trim_keys(&heap[l], &heap[worst]) > 0)
			worst = l;
		if (r < n && cmp_trim_keys(&heap[r], &heap[worst]) > 0)
			worst = r;
		if (worst == at)
			return;
		swap = heap[at];
		heap[at] = heap[worst];
		heap[worst] = swap;
		at = worst;
	}
}

/*
 * The m first nodes (the root aside) in the order of cmp_trim_keys: a
 * heap of the m best seen so far, its last in rank on top, so that a
 * node is compared once with the top and most go no further; then those
 * m sorted.  O(n log m), never a sort of every node.
 */
static TrimKey *
rank_heaviest(const CallTree *t, int m)
{
	TrimKey    *heap = palloc(sizeof(TrimKey) * Max(m, 1));
	int			n = 0;

	for (int i = 1; i < t->nnodes && m > 0; i++)
	{
		TrimKey		k = trim_key(t, i);

		if (n < m)
		{
			/* sift up */
			int			at = n++;

			heap[at] = k;
			while (at > 0 && cmp_trim_keys(&heap[at], &heap[(at - 1) / 2]) > 0)
			{
				TrimKey		swap = heap[at];

				heap[at] = heap[(at - 1) / 2];
				heap[(at - 1) / 2] = swap;
				at = (at - 1) / 2;
			}
		}
		else if (cmp_trim_keys(&k, &heap[0]) < 0)
		{
			heap[0] = k;
			heap_sift_down(heap, n, 0);
		}
	}
	qsort(heap, n, sizeof(TrimKey), cmp_trim_keys);
	return heap;
}

/* Only the root remains: everything is its self. */
static int
trim_to_root(CallTree *t, double *folded_value)
{
	CallNode   *root = &t->nodes[0];

	for (int i = 1; i < t->nnodes; i++)
		t->nodes[i].folded = true;
	root->self = root->value;
	root->self_right = root->value_right;
	*folded_value = fabs((double) root->value) + fabs((double) root->value_right);
	return t->nnodes - 1;
}

int
calltree_trim(CallTree *t, int max_nodes, double min_fraction, double *folded_value)
{
	Trim		tr;
	int			nnames = Max(t->syms->names.n, 1);
	int			budget;
	int			lo,
				hi,
				count;
	double	   *name_weight;
	int		   *names;
	int		   *pairs_of_name;
	int		   *trimmed_of;
	int			nfolded = 0;
	int			original = t->nnodes;
	int			above_floor;
	int			ranked = 0;
	int			trials = 0;
	int			name_limit = max_nodes > 0 ? max_nodes : PG_INT32_MAX;
	double		floor;
	childmap_iterator it;
	ChildEntry *e;

	*folded_value = 0;
	if ((max_nodes <= 0 || t->nnodes <= max_nodes) && min_fraction <= 0)
		return 0;
	if (max_nodes == 1)
		return trim_to_root(t, folded_value);

	memset(&tr, 0, sizeof(tr));
	tr.t = t;
	tr.keep = palloc(sizeof(bool) * t->nnodes);
	tr.has_region = palloc(sizeof(bool) * t->nnodes);
	tr.shown = palloc(sizeof(bool) * nnames);
	tr.pairs = childmap_create(CurrentMemoryContext, 1024, NULL);
	tr.maxsums = 1024;
	tr.sums = palloc(sizeof(RegionSelf) * tr.maxsums);

	/*
	 * The nodes that weigh at least min_fraction of the root: a prefix of
	 * the ranking (a parent weighs at least as much as its child, and
	 * comes first when equal), so K = 1 + their number keeps them all.
	 */
	floor = min_fraction * (fabs((double) t->nodes[0].value) + fabs((double) t->nodes[0].value_right));
	above_floor = 0;
	for (int i = 1; i < t->nnodes; i++)
		if (node_weight(&t->nodes[i]) >= floor)
			above_floor++;
	lo = 1 + above_floor;

	/*
	 * Within max_nodes: the largest K that fits three quarters of the
	 * budget (the count grows with K, so a binary search finds it; K = 1
	 * always fits: root and one [trimmed] node).  Only the first K - 1
	 * of the ranking are ever kept, so only they are ranked.
	 */
	if (max_nodes > 0 && t->nnodes > max_nodes)
	{
		budget = max_nodes - max_nodes / 4;
		hi = Min(lo, max_nodes);
		tr.ranked = rank_heaviest(t, hi - 1);
		trim_walk(&tr);
		trim_order_ranked(&tr, hi - 1);
		ranked = hi - 1;
		lo = 1;
		while (lo < hi)
		{
			int			mid = lo + (hi - lo + 1) / 2;

			CHECK_FOR_INTERRUPTS();
			trials++;
			if (trim_evaluate(&tr, mid) <= budget)
				lo = mid;
			else
				hi = mid - 1;
		}
	}
	else
	{
		/* only the threshold: the nodes above it, in any order */
		int			n = 0;

		if (lo >= t->nnodes)
			return 0;			/* every node is above the threshold */
		tr.ranked = palloc(sizeof(TrimKey) * Max(above_floor, 1));
		trim_walk(&tr);
		for (int i = 1; i < t->nnodes; i++)
			if (node_weight(&t->nodes[i]) >= floor)
				tr.ranked[n++].node = i;
		trim_order_ranked(&tr, n);
	}
	count = trim_evaluate(&tr, lo);
	/* the work, for tests: what was ordered, and how often the tree was walked */
	ereport(DEBUG1,
			(errmsg_internal("calltree_trim: %d nodes, %d of them ranked in order, %d trial trims",
							 original, ranked, trials)));

	/* Then show the hottest other functions, in order, while they fit. */
	name_weight = palloc0(sizeof(double) * nnames);
	pairs_of_name = palloc0(sizeof(int) * nnames);
	for (int i = 1; i < t->nnodes; i++)
		name_weight[t->nodes[i].name] += fabs((double) t->nodes[i].self) +
			fabs((double) t->nodes[i].self_right);
	childmap_start_iterate(tr.pairs, &it);
	while ((e = childmap_iterate(tr.pairs, &it)) != NULL)
		pairs_of_name[(int) (uint32) e->key]++;
	names = palloc(sizeof(int) * nnames);
	for (int i = 0; i < nnames; i++)
		names[i] = i;
	sort_names_tree = t;
	sort_names_weight = name_weight;
	qsort(names, t->syms->names.n, sizeof(int), cmp_names);
	for (int i = 0; i < t->syms->names.n && name_weight[names[i]] > 0; i++)
	{
		if (tr.shown[names[i]])
			continue;
		if (count + pairs_of_name[names[i]] > name_limit)
			break;
		tr.shown[names[i]] = true;
		count += pairs_of_name[names[i]];
	}

	/* Fold, and make each region's [trimmed] node with its shown names. */
	trimmed_of = palloc(sizeof(int) * t->nnodes);
	for (int i = 0; i < original; i++)
	{
		trimmed_of[i] = -1;
		if (!tr.keep[i])
		{
			t->nodes[i].folded = true;
			nfolded++;
		}
	}
	/* calltree_add_node may move the array: index it, never keep pointers */
	for (int i = 0; i < original; i++)
		if (tr.has_region[i])
			trimmed_of[i] = calltree_add_node(t, i, CALLTREE_TRIMMED);
	for (int i = 1; i < original; i++)
	{
		int			p = t->nodes[i].parent;

		if (tr.keep[i] || !tr.keep[p] || trimmed_of[p] < 0)
			continue;			/* kept, deeper, or weighing nothing */
		profile_value_add(&t->nodes[trimmed_of[p]].value, t->nodes[i].value);
		profile_value_add(&t->nodes[trimmed_of[p]].value_right, t->nodes[i].value_right);
		*folded_value += fabs((double) t->nodes[i].value) + fabs((double) t->nodes[i].value_right);
	}
	for (int i = 0; i < original; i++)
		if (trimmed_of[i] >= 0)
		{
			t->nodes[trimmed_of[i]].self = t->nodes[trimmed_of[i]].value;
			t->nodes[trimmed_of[i]].self_right = t->nodes[trimmed_of[i]].value_right;
		}
	childmap_start_iterate(tr.pairs, &it);
	while ((e = childmap_iterate(tr.pairs, &it)) != NULL)
	{
		int			anchor = (int) (e->key >> 32);
		int			name = (int) (uint32) e->key;
		int			trimmed = trimmed_of[anchor];
		RegionSelf *sum = &tr.sums[e->node];
		int			child;

		if (!tr.shown[name])
			continue;
		Assert(trimmed >= 0);
		child = calltree_add_node(t, trimmed, name);
		t->nodes[child].value = t->nodes[child].self = sum->self;
		t->nodes[child].value_right = t->nodes[child].self_right = sum->self_right;
		/* what the named child holds is no longer [trimmed]'s own */
		t->nodes[trimmed].self -= sum->self;
		t->nodes[trimmed].self_right -= sum->self_right;
	}
	return nfolded;
}
void
calltree_check_trim(int max_nodes, double node_trim_threshold)
{
	if (max_nodes < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_nodes must not be negative")));
	/* written so that NaN fails too */
	if (!(node_trim_threshold >= 0 && node_trim_threshold <= 100))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("node_trim_threshold is a percentage of the total, from 0 to 100")));
}
