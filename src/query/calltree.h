/*
 * calltree.h
 *		The call tree of a profile: stacks merged root first, frame by frame.
 *
 * Node 0 is the root ("total").  A node's value is inclusive (its own
 * samples and its callees'), self is exclusive; a diff profile carries
 * both sides (value = base, value_right = compared).  Siblings are kept
 * in name order once calltree_sort() has run.
 */
#ifndef PARCA_QUERY_CALLTREE_H
#define PARCA_QUERY_CALLTREE_H

#include "postgres.h"

#include "profile.h"
#include "query/symbols.h"

typedef struct CallNode
{
	int			name;			/* index into the symbols' names; -1 at the root */
	int			parent;			/* -1 at the root */
	int			depth;
	int			first_child;	/* -1 when none */
	int			next_sibling;	/* -1 when none */
	bool		folded;			/* trimmed away: counted in its parent's self */
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

/* Orders every node's children by name. */
extern void calltree_sort(CallTree *t);

/*
 * Folds the smallest nodes into their parents' self until at most
 * max_nodes remain (the root included).  Returns how many nodes were
 * folded and sets *folded_value to the inclusive value they carried.
 */
extern int	calltree_trim(CallTree *t, int max_nodes, int64 *folded_value);

/* The unfolded nodes in depth-first pre-order. */
extern int *calltree_preorder(const CallTree *t, int *n);

/* A node's label: its frame name, "total" at the root. */
extern const char *calltree_label(const CallTree *t, int node);

#endif							/* PARCA_QUERY_CALLTREE_H */
