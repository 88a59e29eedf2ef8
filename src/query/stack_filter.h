/*
 * stack_filter.h
 *		Keeping or dropping the stacks of a profile by their frames.
 *
 * A filter names what of a frame it looks at (function name, source
 * file, binary, address) and how it compares (metastore_read.h); the
 * locations of the profile that match are found in the metastore in one
 * query per filter, then each distinct stack is kept when it has such a
 * frame (keep) or has none (not keep).  Several filters all apply.
 */
#ifndef PARCA_QUERY_STACK_FILTER_H
#define PARCA_QUERY_STACK_FILTER_H

#include "postgres.h"

#include "metastore/metastore_read.h"

/* At most this many filters at once: each is a query of the metastore. */
#define STACK_FILTER_MAX 64

typedef struct StackFilter
{
	LocationField field;
	NameMatch	match;
	const char *text;
	bool		keep;			/* keep stacks with a matching frame, else drop them */
	uint64	   *set;			/* the matching locations, filled in by the apply */
	int			n;
} StackFilter;

/*
 * The profile without the stacks the filters reject, allocated in cxt.
 * The caller is connected to SPI (whose calls switch to its own context).
 */
extern struct varlena *stack_filter_apply(struct varlena *profile, StackFilter *filters,
										  int nfilters, MemoryContext cxt);

#endif							/* PARCA_QUERY_STACK_FILTER_H */
