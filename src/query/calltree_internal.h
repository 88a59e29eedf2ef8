/*
 * calltree_internal.h
 *		What the call tree's files (calltree.c: building, ordering,
 *		parca_icicle(); calltree_trim.c: trimming) share: the hash table
 *		keyed by (node, name), of children in building and of regions'
 *		names in trimming.
 */
#ifndef PARCA_QUERY_CALLTREE_INTERNAL_H
#define PARCA_QUERY_CALLTREE_INTERNAL_H

#include "postgres.h"

#include "common/hashfn.h"

#include "query/calltree.h"

typedef struct ChildEntry
{
	uint64		key;			/* node << 32 | name */
	int			node;			/* the child; in trimming, an index of sums */
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

/* A new node of t, a child of parent (-1: the root) named name. */
extern int	calltree_add_node(CallTree *t, int parent, int name);

#endif							/* PARCA_QUERY_CALLTREE_INTERNAL_H */
