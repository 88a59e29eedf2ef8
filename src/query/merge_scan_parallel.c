/*
 * merge_scan_parallel.c
 *		The direct merge (merge_scan.c) shared with parallel workers: the
 *		leader and its workers claim the stripes of the tables read from a
 *		shared counter, and the workers send their profiles to the leader.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/table.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "storage/shm_toc.h"
#include "utils/rel.h"

#include "query/merge_scan_internal.h"

/*
 * A parallel merge: the leader and its workers split the stripes of the
 * tables read between them (claim_share), each adding its share into
 * sums of its own; the workers send their stacks to the leader, by id and
 * where their frames are when a stripe with ids had them, without reading
 * those frames (merge_scan_share_out), and the leader adds them to its
 * own, reading the frames of only the ids it has not met itself
 * (merge_scan_add_unmet).  The leader counts each table's shares as the
 * workers start (merge_scan_count_shares), so that a worker passes over a
 * table whose shares are all others' without opening it.
 * A profile is its stacks sorted, so the answer is the same bytes however
 * the stripes were split.  What the leader and the workers share:
 */
typedef struct MergeShared
{
	pg_atomic_uint32 next_share;
	TimestampTz start;
	TimestampTz stop;
	bool		scale;
	int			ntables;
	int			nseries;
	pg_atomic_uint32 table_shares[FLEXIBLE_ARRAY_MEMBER];	/* [ntables] */
} MergeShared;

/* What a worker sends: this, then its merge (merge_scan_share_out). */
typedef struct MergeWorkerResult
{
	int64		known_min;
	bool		unknown_seen;
} MergeWorkerResult;

#define MERGE_KEY_SHARED	UINT64CONST(0x5041524341000001)
#define MERGE_KEY_RELIDS	UINT64CONST(0x5041524341000002)
#define MERGE_KEY_SERIES	UINT64CONST(0x5041524341000003)
#define MERGE_KEY_QUEUES	UINT64CONST(0x5041524341000004)
#define MERGE_QUEUE_SIZE	(1024 * 1024)

/*
 * How many workers to merge with: as many as a parallel scan would get
 * (max_parallel_workers_per_gather), for one profile (not for groups or a
 * sink of rows), when this backend may start them (not itself in a
 * parallel operation), and when the tables read hold a quarter as many
 * rows as min_parallel_table_scan_size has bytes (2 M rows by default;
 * pg_class's estimate, made by VACUUM and ANALYZE).  Rows, because they
 * are what a merge costs, and a columnar table's size says little of them
 * (bench/merge.sh's 2.45 M rows, pushed profile by profile, take 31 MB in
 * 30 day partitions).  On those rows a worker starts reading at 3-6 ms
 * and exits 2-3 ms after sending its stacks; queries sent in turn with and
 * without a worker took 11-13 ms
 * less with it in 30 day partitions (medians of differences, 30 pairs)
 * and 2.5-9 ms less in one partition.  On a random quarter of the same
 * rows in one partition (0.6 M), with the same 20,430 stacks, the worker
 * took 0-2 ms more; on half of them (1.2 M), 0.4-1.8 ms less.  So the
 * break-even lies between, and 2 M rows leaves a margin.
 */
int
merge_scan_parallel_workers(const MergeScan *m, List *tables)
{
	double		rows = 0;
	ListCell   *lc;

	if (m->sink || m->ngroups != 1 || max_parallel_workers_per_gather <= 0 ||
		IsInParallelMode() || !IsUnderPostmaster)
		return 0;
	foreach(lc, tables)
		rows += Max(((Relation) lfirst(lc))->rd_rel->reltuples, 0);
	if (rows < (double) min_parallel_table_scan_size * BLCKSZ / 4)
		return 0;
	return max_parallel_workers_per_gather;
}

PGDLLEXPORT void parca_merge_scan_worker(dsm_segment *seg, shm_toc *toc);

/* A worker of merge_scan_parallel: its share of the stripes, to the leader. */
void
parca_merge_scan_worker(dsm_segment *seg, shm_toc *toc)
{
	MergeShared *sh = shm_toc_lookup(toc, MERGE_KEY_SHARED, false);
	Oid		   *relids = shm_toc_lookup(toc, MERGE_KEY_RELIDS, false);
	int64	   *series_ids = shm_toc_lookup(toc, MERGE_KEY_SERIES, false);
	char	   *queues = shm_toc_lookup(toc, MERGE_KEY_QUEUES, false);
	shm_mq	   *mq = (shm_mq *) (queues + (Size) ParallelWorkerNumber * MERGE_QUEUE_SIZE);
	shm_mq_handle *mqh;
	ProfileBuilder *b = profile_builder_create(CurrentMemoryContext);
	MergeScan	m;
	MergeWorkerResult result;
	StringInfoData share;
	shm_mq_iovec iov[2];
	int			passed = 0;

	shm_mq_set_sender(mq, MyProc);
	mqh = shm_mq_attach(mq, seg, NULL);
	/* out of SPI's memory, which its end frees */
	initStringInfo(&share);
	/* the columns are found by type, which the metastore looks up in SQL */
	SPI_connect();
	memset(&m, 0, sizeof(m));
	m.builders = &b;
	m.ngroups = 1;
	m.worker = true;
	merge_scan_setup(&m, series_ids, NULL, sh->nseries, sh->start, sh->stop, sh->scale);
	m.next_share = &sh->next_share;
	m.share_claimed = pg_atomic_fetch_add_u32(m.next_share, 1);
	m.table_shares = sh->table_shares;
	for (int i = 0; i < sh->ntables; i++)
	{
		Relation	rel;

		m.table = i;
		if (merge_scan_table_skipped(&m))
		{
			passed++;
			continue;
		}
		/* locked by the leader, whose locks a worker shares */
		rel = table_open(relids[i], AccessShareLock);
		merge_scan_table(&m, rel);
		table_close(rel, AccessShareLock);
	}
	elog(DEBUG1, "parallel merge worker: %d of %d tables passed unopened, their shares others'",
		 passed, sh->ntables);
	merge_scan_share_out(&m, &share);
	SPI_finish();
	result.known_min = m.known_min;
	result.unknown_seen = m.unknown_seen;
	iov[0].data = (const char *) &result;
	iov[0].len = sizeof(result);
	iov[1].data = share.data;
	iov[1].len = share.len;
	(void) shm_mq_sendv(mqh, iov, 2, false, true);
}

/* merge_scan_table() of every table, shared with up to nworkers workers. */
void
merge_scan_parallel(MergeScan *m, List *tables, int nworkers)
{
	ParallelContext *pcxt;
	MergeShared *sh;
	Oid		   *relids;
	int64	   *series_ids;
	char	   *queues;
	shm_mq_handle **mqh;
	int			ntables = list_length(tables);
	int			nlaunched;
	bool		leads;
	ListCell   *lc;
	int			i;

	EnterParallelMode();
	pcxt = CreateParallelContext("parca", "parca_merge_scan_worker", nworkers);
	shm_toc_estimate_chunk(&pcxt->estimator, offsetof(MergeShared, table_shares) +
						   sizeof(pg_atomic_uint32) * ntables);
	shm_toc_estimate_chunk(&pcxt->estimator, sizeof(Oid) * ntables);
	shm_toc_estimate_chunk(&pcxt->estimator, sizeof(int64) * Max(m->nseries, 1));
	shm_toc_estimate_chunk(&pcxt->estimator, (Size) MERGE_QUEUE_SIZE * nworkers);
	shm_toc_estimate_keys(&pcxt->estimator, 4);
	/* without a dynamic shared memory segment, no workers: all read here */
	InitializeParallelDSM(pcxt);

	sh = shm_toc_allocate(pcxt->toc, offsetof(MergeShared, table_shares) +
						  sizeof(pg_atomic_uint32) * ntables);
	pg_atomic_init_u32(&sh->next_share, 0);
	for (i = 0; i < ntables; i++)
		pg_atomic_init_u32(&sh->table_shares[i], 0);
	sh->start = m->start;
	sh->stop = m->stop;
	sh->scale = m->scale;
	sh->ntables = ntables;
	sh->nseries = m->nseries;
	shm_toc_insert(pcxt->toc, MERGE_KEY_SHARED, sh);
	relids = shm_toc_allocate(pcxt->toc, sizeof(Oid) * ntables);
	i = 0;
	foreach(lc, tables)
		relids[i++] = RelationGetRelid((Relation) lfirst(lc));
	shm_toc_insert(pcxt->toc, MERGE_KEY_RELIDS, relids);
	series_ids = shm_toc_allocate(pcxt->toc, sizeof(int64) * Max(m->nseries, 1));
	for (i = 0; i < m->nseries; i++)
		series_ids[i] = m->series[i].id;
	shm_toc_insert(pcxt->toc, MERGE_KEY_SERIES, series_ids);
	queues = shm_toc_allocate(pcxt->toc, (Size) MERGE_QUEUE_SIZE * nworkers);
	shm_toc_insert(pcxt->toc, MERGE_KEY_QUEUES, queues);
	mqh = palloc0(sizeof(shm_mq_handle *) * nworkers);
	for (i = 0; i < pcxt->nworkers; i++)
	{
		shm_mq	   *mq = shm_mq_create(queues + (Size) i * MERGE_QUEUE_SIZE, MERGE_QUEUE_SIZE);

		shm_mq_set_receiver(mq, MyProc);
		mqh[i] = shm_mq_attach(mq, pcxt->seg, NULL);
	}
	LaunchParallelWorkers(pcxt);
	nlaunched = pcxt->nworkers_launched;
	leads = parallel_leader_participation || nlaunched == 0;
	elog(DEBUG1, "parallel merge of %d tables: %d of %d workers launched%s", ntables, nlaunched,
		 nworkers, leads ? "" : ", the leader reading only its own buffered rows");
	for (i = 0; i < nlaunched; i++)
		shm_mq_set_handle(mqh[i], pcxt->worker[i].bgwhandle);

	/*
	 * The leader's share, with its own buffered rows, which only it sees.
	 * Without parallel_leader_participation it leaves every stripe to the
	 * workers (a share it never reaches), as a Gather's leader does, unless
	 * none started.
	 */
	m->next_share = &sh->next_share;
	m->table_shares = sh->table_shares;
	m->leader = true;
	m->share_claimed = leads ? pg_atomic_fetch_add_u32(m->next_share, 1) : PG_UINT32_MAX;
	if (nlaunched > 0)
		merge_scan_count_shares(m, tables);
	m->table = 0;
	foreach(lc, tables)
	{
		merge_scan_table(m, lfirst(lc));
		m->table++;
	}
	merge_scan_sums_to_builders(m);

	/*
	 * The workers, done at about the same time, now write and send their
	 * stacks (about 1 ms for 20,000), then exit (2-3 ms more).  Ordering
	 * the profile's stacks fills that wait, and the caller's writing of
	 * the profile the rest (m->exiting): the leader has met most of their
	 * stacks in its own stripes, and adding their values leaves the order
	 * as it is; a stack it had not met is placed into that order below.
	 */
	profile_builder_sort(m->builders[0]);
	for (i = 0; i < nlaunched; i++)
	{
		Size		nbytes;
		void	   *data;
		MergeWorkerResult result;

		if (shm_mq_receive(mqh[i], &nbytes, &data, false) != SHM_MQ_SUCCESS ||
			nbytes < sizeof(result))
		{
			/* its error, if it raised one, then ours */
			WaitForParallelWorkersToFinish(pcxt);
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("parallel merge worker exited without its share")));
		}
		memcpy(&result, data, sizeof(result));
		merge_scan_add_share(m, (const char *) data + sizeof(result), nbytes - sizeof(result));
		m->known_min = Min(m->known_min, result.known_min);
		m->unknown_seen |= result.unknown_seen;
	}
	merge_scan_add_unmet(m, tables);
	/* its finish then has only the bytes to write */
	profile_builder_sort(m->builders[0]);
	/* their errors, if any, raised here */
	WaitForParallelWorkersToFinish(pcxt);
	m->next_share = NULL;
	m->table_shares = NULL;
	if (m->exiting)
		*m->exiting = pcxt;
	else
		merge_scan_end_parallel(&pcxt);
}

void
merge_scan_end_parallel(ParallelContext **exiting)
{
	if (*exiting == NULL)
		return;
	DestroyParallelContext(*exiting);
	ExitParallelMode();
	*exiting = NULL;
}
