/*
 * function_range_internal.h
 *		What parca_function_range's files share (function_range.c: the
 *		pass over the rows and the SQL function; function_range_parts.c:
 *		which parts of each bucket are read from rollups and which raw):
 *		the state of the pass, its buckets and their parts.
 */
#ifndef PARCA_QUERY_FUNCTION_RANGE_INTERNAL_H
#define PARCA_QUERY_FUNCTION_RANGE_INTERNAL_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "utils/timestamp.h"

#include "types/profile.h"
#include "query/merge_scan.h"
#include "query/name_filter.h"
#include "query/symbols.h"

/* One step bucket: what parca_query over it would merge, and its sums. */
typedef struct Bucket
{
	TimestampTz time;			/* date_bin(step, t, origin) of its rows */
	TimestampTz lo;				/* its part of [start, stop], inclusive */
	TimestampTz hi;
	bool		listed;			/* parca_query_range lists it */
	bool		cut;			/* rollup_ranges cut it: raw rows count only in raw_parts */
	int			first_raw;		/* its raw parts: raw_parts[first_raw ..] */
	int			nraw;
	int64		total;
	int			cap;			/* of the arrays below, by wanted name */
	int64	   *flat;
	int64	   *cum;
	bool	   *present;		/* a stack with the name had rows here */
} Bucket;

/* A part of the range read from one table, for one bucket. */
typedef struct Part
{
	TimestampTz start;
	TimestampTz stop;
	int			bucket;
} Part;

/* bucket time -> index into FunctionRange.buckets */
typedef struct BucketSlot
{
	TimestampTz time;
	int			index;
	char		status;
} BucketSlot;

#define SH_PREFIX bucketmap
#define SH_ELEMENT_TYPE BucketSlot
#define SH_KEY_TYPE TimestampTz
#define SH_KEY time
#define SH_HASH_KEY(tb, key) ((uint32) (((uint64) (key) / 1000) ^ ((uint64) (key) >> 32)) * 0x9E3779B1U)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/*
 * What a stack adds to: its matching functions (indexes into wanted),
 * in info_pool at an offset: [count, flat or -1, function...].  Offset 0
 * is the stack without any.
 */
#define INFO_NONE 0
#define INFO_UNDECIDED -1

typedef struct FunctionRange
{
	MergeRowSink sink;			/* first: the sink is the whole */
	MemoryContext cxt;			/* what is kept (rows arrive in the scan's) */
	TimestampTz start;
	TimestampTz stop;
	Interval   *step;
	int64		stride;			/* step in microseconds */
	TimestampTz origin;

	bucketmap_hash *bucket_map;
	Bucket	   *buckets;
	int			nbuckets;
	int			bucket_cap;
	TimestampTz cached_from;	/* rows in [cached_from, cached_until) go to cached */
	TimestampTz cached_until;
	int			cached;

	Part	   *raw_parts;		/* of the buckets rollup_ranges cut */
	int			nraw_parts;
	int			raw_parts_cap;

	const TimestampTz *sum_hours;	/* sorted: raw rows there list no bucket */
	int			nsum_hours;
	TimestampTz cached_hour;	/* the last hour looked up, and the answer */
	bool		cached_hour_summed;

	/* while a rollup table is read: its parts, sorted */
	const Part *parts;
	int			nparts;
	int			cached_part;

	Symbols    *syms;
	NameFilter *filter;
	int		   *wanted;			/* wanted name number -> syms name number */
	int			nwanted;
	int			wanted_cap;
	int		   *wanted_of_name; /* syms name number -> wanted index, -1 not, -2 undecided */
	int			wanted_of_name_cap;
	int64	   *stamp;			/* per wanted name: the last stack that listed it */
	int64		stack_no;

	ProfileBuilder *stacks;		/* every distinct stack seen, numbered */
	int		   *stack_info;		/* per stack number: an offset into info_pool */
	uint32		nstack_info;
	uint32		stack_info_cap;
	int		   *info_pool;
	int			info_len;
	int			info_cap;
	int		   *entry_stack;	/* per entry of the stripe's dictionary: its stack number */
	int			entry_stack_cap;
	char	  **pending;		/* stacks to name before deciding */
	uint32	   *pending_stack;	/* and their numbers */
	int			pending_cap;
} FunctionRange;

/* A table read from rollups and its parts. */
typedef struct RollupTable
{
	Oid			relid;
	Part	   *parts;
	int			nparts;
	int			cap;
} RollupTable;

/* The index of bucket time b, made if new. */
extern int	function_range_bucket_index(FunctionRange *fr, TimestampTz b);

/* ---- function_range_parts.c ---- */

/*
 * Cuts the buckets that hold whole rolled-up periods as parca_query would
 * (rollup_ranges): their raw parts kept with them, their rollup parts
 * added to the tables read (*ntables of them).  The caller is connected
 * to SPI.
 */
extern RollupTable *function_range_cut_buckets(FunctionRange *fr, int *ntables);

/*
 * The raw rows to read: [start, stop] but where a part read from rollups
 * lies within an hour whose sums parca_query_range reads.  Sorted,
 * disjoint, inclusive; *nregions of them.
 */
extern Part *function_range_raw_regions(FunctionRange *fr, RollupTable *tables, int ntables,
										int *nregions);

/*
 * parca_query's NOTICE when a bucket listed reads raw rows from before
 * parca.retention, once for the call.
 */
extern void function_range_retention_notice(FunctionRange *fr);

#endif							/* PARCA_QUERY_FUNCTION_RANGE_INTERNAL_H */
