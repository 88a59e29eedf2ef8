/*
 * merge_scan_internal.h
 *		What the direct merge's files share (merge_scan.c: reading a
 *		table's chunk groups into sums; merge_scan_parallel.c: sharing
 *		the stripes out with parallel workers): the state of a merge.
 */
#ifndef PARCA_QUERY_MERGE_SCAN_INTERNAL_H
#define PARCA_QUERY_MERGE_SCAN_INTERNAL_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "port/atomics.h"
#include "utils/array.h"
#include "utils/relcache.h"

#include "query/merge_scan.h"

/* A series asked for, and the group its rows go to. */
typedef struct SeriesGroup
{
	int64		id;
	int32		group;
} SeriesGroup;

/* What merge_scan_samples reads, the same for every partition. */
typedef struct MergeScan
{
	ProfileBuilder **builders;	/* per group */
	int			ngroups;
	const SeriesGroup *series;	/* the series, sorted by id */
	int			nseries;
	ArrayType  *id_array;		/* their ids, for chunk skipping */
	TimestampTz start;
	TimestampTz stop;
	bool		scale;
	struct StripeSums *ss;		/* per group */
	struct ColumnarReadState *rs;	/* the table being read, and its stack */
	AttrNumber	stack_att;		/* column (merge_scan_table) */
	int64		known_min;
	bool		unknown_seen;
	int		   *sel;			/* a chunk group's rows that count */
	int32	   *sel_group;		/* and their groups */
	int			sel_cap;
	MergeRowSink *sink;			/* rows go there instead (merge_scan_rows) */
	int64	   *values;			/* [sel_cap]: their values, for the sink */
	Datum	   *periods;		/* [sel_cap]: a chunk group's one period in
								 * every row, for the loops that read rows */
	/* a parallel merge: the stripes are shared out by a counter */
	pg_atomic_uint32 *next_share;	/* NULL: every row is read here */
	uint32		share_seen;		/* ordinal of the next share met */
	uint32		share_claimed;	/* the ordinal of the share claimed next */
	pg_atomic_uint32 *table_shares; /* [tables]: how many shares each table
									 * makes, plus 1; 0 until the leader has
									 * counted them */
	bool		leader;			/* reads its own buffered rows */
	struct ParallelContext **exiting;	/* where the leader leaves its
										 * workers' exit, or NULL */
	/* a worker numbers its stacks itself (merge_scan.c, WorkerStack) */
	bool		worker;
	int			table;			/* the position in the merge of the table read */
	struct WorkerStack *wstacks;	/* [nwstacks]: by the numbers rows add into */
	int			nwstacks;
	int			wstacks_cap;
	uint32	   *wnumber;		/* [wnumber_cap]: those numbers, by the
								 * builder's */
	int			wnumber_cap;
	/* the leader: stacks workers sent by id that it had not met */
	struct StackById *unmet;	/* [nunmet] */
	int			nunmet;
	int			unmet_cap;
} MergeScan;

/*
 * Whether the share of a stripe met now is this process's, in a parallel
 * merge: every process meets the same shares in the same order, and each
 * reads the ones whose ordinal it took from the shared counter, taking the
 * next ordinal when it reaches the one it holds.  A share is a stripe (of
 * the default 1,000,000 rows or fewer), or MERGE_SHARE_ROWS rows or more
 * of a larger one: each process that reads part of a stripe decodes its
 * dictionary and adds its sums once per distinct stack, which costs about
 * as much as adding the rows (20,430 stacks against a million rows of
 * large.cpu's: splitting such stripes doubled the CPU of a merge).
 */
#define MERGE_SHARE_ROWS 1000000

/* m's series, time range and sums, for reading rows of those series. */
extern void merge_scan_setup(MergeScan *m, const int64 *series_ids, const int32 *groups,
							 int nseries, TimestampTz start, TimestampTz stop, bool scale);

/* The rows of rel that m asks for, into m's sums or sink. */
extern void merge_scan_table(MergeScan *m, Relation rel);
extern void merge_scan_count_shares(MergeScan *m, List *tables);
extern bool merge_scan_table_skipped(MergeScan *m);
extern void merge_scan_sums_to_builders(MergeScan *m);
extern void merge_scan_share_out(MergeScan *m, StringInfo out);
extern void merge_scan_add_share(MergeScan *m, const char *data, Size len);
extern void merge_scan_add_unmet(MergeScan *m, List *tables);

/* ---- merge_scan_parallel.c ---- */

/* How many workers to merge tables with; 0: none. */
extern int	merge_scan_parallel_workers(const MergeScan *m, List *tables);

/* merge_scan_table() of every table, shared with up to nworkers workers. */
extern void merge_scan_parallel(MergeScan *m, List *tables, int nworkers);

#endif							/* PARCA_QUERY_MERGE_SCAN_INTERNAL_H */
