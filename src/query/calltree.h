/*
 * calltree.h
 *		The call tree of a profile: stacks merged root first, frame by frame.
 *
 * Node 0 is the root ("total").  A node's value is inclusive (its own
 * samples and its callees'), self is exclusive; a diff profile carries
 * both sides (value = base, value_right = compared).  Siblings come out
 * in name order (calltree_preorder).
 */
#ifndef PARCA_QUERY_CALLTREE_H
#define PARCA_QUERY_CALLTREE_H

#include "postgres.h"

#include "fmgr.h"

#include "types/profile.h"
#include "query/symbols.h"

/* Names of the nodes that are no frame: the root, and trimmed subtrees. */
#define CALLTREE_ROOT		(-1)
#define CALLTREE_TRIMMED	(-2)

typedef struct CallNode
{
	int			name;			/* index into the symbols' names, or one of the above */
	int			parent;			/* -1 at the root */
	int			depth;
	int			first_child;	/* -1 when none */
	int			next_sibling;	/* -1 when none */
	bool		folded;			/* trimmed away: counted in a [trimmed] node */
	int64		value;
	int64		self;
	int64		value_right;
	int64		self_right;
} CallNode;

typedef struct CallTree
{
	Symbols    *syms;
	ProfileMeta meta;
	CallNode   *nodes;
	int			nnodes;
	int			maxnodes;
	struct childmap_hash *children; /* (parent, name) -> node */
} CallTree;

/* Builds the tree of a serialized profile (detoasted). */
extern CallTree *calltree_build(const struct varlena *profile);

/*
 * An empty tree whose root is named root_name (CALLTREE_ROOT, or a frame
 * name of syms when the tree is re-rooted at a function).
 */
extern CallTree *calltree_create(Symbols *syms, const ProfileMeta *meta, int root_name);

/*
 * The frame names of a sample, root first, inlined functions expanded
 * (outermost first), into *names (grown as needed, *cap its size).
 * Returns how many.
 */
extern int	calltree_sample_names(Symbols *syms, const ProfileSample *s, int **names, int *cap);

/* Adds a path of frame names below the root with its values. */
extern void calltree_add_path(CallTree *t, const int *names, int n, int64 value, int64 value_right);

/* Whether any node has a value other than 0 (else there is nothing to draw). */
extern bool calltree_weighs(const CallTree *t);

/*
 * Trims the tree to at most max_nodes nodes (the root included) without
 * changing any function's self value: the lightest subtrees are folded
 * into a "[trimmed]" child of their nearest kept ancestor, and under it
 * the folded self value of each function that the trimmed tree names
 * anywhere (plus as many of the hottest other functions as fit) becomes
 * a child of that function's name; the rest stays in [trimmed]'s self.
 * So the self value summed per name over the trimmed tree is exact for
 * every name it shows, and every inclusive value of a kept node stays
 * exact.  With max_nodes 1 only the root remains.  Returns how many
 * nodes were folded and sets *folded_value to the weight they carried
 * (|value| + |value_right|).  With min_fraction > 0 the nodes that weigh less than
 * that fraction of the root are folded too (Parca's node_trim_threshold),
 * max_nodes 0 then meaning no limit on the count.
 */
extern int	calltree_trim(CallTree *t, int max_nodes, double min_fraction, double *folded_value);

/* The unfolded nodes in depth-first pre-order, siblings in name order. */
extern int *calltree_preorder(const CallTree *t, int *n);

/* A node's label: its frame name, "total" at the root. */
extern const char *calltree_label(const CallTree *t, int node);

/*
 * The trimming arguments of the icicle functions: an error unless
 * max_nodes >= 0 and 0 <= node_trim_threshold (a percentage) <= 100.
 */
extern void calltree_check_trim(int max_nodes, double node_trim_threshold);

/*
 * The rows of Grafana's flame graph data frame for t (level, value, self,
 * then for a diff "valueRight", "selfRight", then label) into fcinfo's
 * materialized result (InitMaterializedSRF done): sorted, trimmed to
 * max_nodes and node_trim_threshold (percent of the total) with a NOTICE
 * naming fname, none when nothing weighs.
 */
extern void calltree_icicle_rows(FunctionCallInfo fcinfo, CallTree *t, const char *fname,
								 int max_nodes, double node_trim_threshold);

#endif							/* PARCA_QUERY_CALLTREE_H */
