/*
 * writer.h
 *		Writes batches to PostgreSQL from a thread of its own, so that a
 *		slow or absent server never stalls sampling.
 *
 * Batches wait in a queue bounded in bytes; when it overflows the oldest
 * batch is dropped and counted.  A failed write is retried with
 * exponential backoff (0.5 s doubling to 30 s).  Each batch is one
 * transaction that also records (node, batch id) in parca.agent_batches,
 * so a batch whose commit was acknowledged too late to be seen is
 * recognized on retry and not stored twice.
 */
#ifndef AGENT_WRITER_H
#define AGENT_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"

typedef struct WriterConfig
{
	const char *dsn;			/* libpq connection string; NULL: PG* variables */
	const char *node;			/* this machine's name, for agent_batches */
	/* By kind of sample, SAMPLE_ON_CPU and SAMPLE_OFF_CPU: */
	const char *profile_type[2];
	int64_t		period[2];
	size_t		max_bytes;		/* backlog bound */
} WriterConfig;

typedef struct WriterStats
{
	uint64_t	batches_written;
	uint64_t	samples_written;	/* sample rows (distinct stacks) */
	uint64_t	values_written; /* sum of their values */
	uint64_t	batches_dropped;
	uint64_t	values_dropped;
	uint64_t	failures;
	uint64_t	uploads;		/* debug information files uploaded */
	size_t		backlog_bytes;
	int			backlog_batches;
} WriterStats;

extern void writer_start(const WriterConfig *config);

/*
 * Queue the upload of a file's debug information (parca_debuginfo_upload)
 * for the build id; the writer owns fd now.  Done when no batch waits,
 * once: the file is not uploaded if the database has debug information
 * for the build id or if it is larger than parca.max_debuginfo_size, and
 * a failure is logged, not retried.  At most WRITER_MAX_UPLOADS wait:
 * false (fd closed) beyond.
 */
#define WRITER_MAX_UPLOADS 64
extern bool writer_upload(const char *build_id, int fd);

/* Queue a batch (the writer owns it now). */
extern void writer_submit(Batch *batch);

/*
 * Batches committed since the last call, linked through next; the caller
 * marks their rows persisted and frees them.
 */
extern Batch *writer_take_committed(void);

/*
 * Batches given back because the database's metastore was collected
 * (generation, parca_metastore_generation()) after their rows were
 * chosen, in queue order, linked through next; the caller notes the
 * generation (batch_note_generation), rebuilds them (batch_rebuild) and
 * submits them again.
 */
extern Batch *writer_take_returned(int64_t *generation);

extern void writer_stats(WriterStats *out);

/*
 * Stop: keep trying to write what is queued for up to drain_seconds, then
 * end the thread.  Returns the number of batches left unwritten.
 */
extern int	writer_stop(int drain_seconds);

#endif							/* AGENT_WRITER_H */
