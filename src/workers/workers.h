/*
 * workers.h
 *		The background workers: one launcher for the cluster starts, for
 *		every database where the extension is installed, that database's
 *		workers (docs/workers.md).
 *
 *	launcher.c	the launcher: finds the databases, starts, restarts and
 *				stops their workers within max_worker_processes
 *	registry.c	shared memory: one entry per database's worker, what the
 *				workers and backends tell the launcher; parca.workers
 *	events.c	what the launcher must hear from other sessions: the
 *				extension created or dropped, a database about to be
 *				dropped, renamed, moved or copied
 *
 * A worker's main (maintenance/partitions.c, scrape/scrape_worker.c) calls
 * workers_begin() first and lives by the functions below; its settings
 * stay with it.
 */
#ifndef PARCA_WORKERS_H
#define PARCA_WORKERS_H

#include "postgres.h"

#include "fmgr.h"

/* The workers of one database. */
typedef enum WorkerKind
{
	WORKER_MAINTENANCE,			/* partitions, retention, rollups, GC,
								 * symbolization; the first one started */
	WORKER_SCRAPE,				/* where an enabled scrape job exists */
	WORKER_KINDS
} WorkerKind;

/* Why a worker ends by itself: the launcher does not start it again. */
typedef enum WorkerExit
{
	WORKER_EXIT_NONE = 0,		/* (it died: the launcher restarts it) */
	WORKER_EXIT_NO_EXTENSION,	/* the database has no extension parca */
	WORKER_EXIT_DISABLED,		/* parca.workers is off in the database */
	WORKER_EXIT_IDLE			/* nothing to do: no enabled scrape job */
} WorkerExit;

/* From _PG_init: parca.workers; when preloaded, the launcher and its hooks. */
extern void workers_init(void);

/*
 * From _PG_init, by the module of a kind of worker that runs only where it
 * has work (the scrape worker): how a database's maintenance worker tells
 * whether it has, connected to SPI.  A kind without one is never wanted.
 */
extern void workers_set_wanted(WorkerKind kind, bool (*wanted) (void));

/*
 * First thing in a worker's main: its signals, its connection to the
 * database the launcher gave it, search_path = pg_catalog, pg_temp.
 * Returns only if parca.workers is on in that database and the extension
 * is installed there; otherwise the worker ends.
 */
extern void workers_begin(Datum main_arg);

/* The worker ends, for this reason. */
extern void workers_exit(WorkerExit why) pg_attribute_noreturn();

/*
 * How many times workers_wake() was called for this worker: read before
 * loading what the wake-ups announce.
 */
extern uint64 workers_wakeups(void);

/*
 * The worker ends, idle, unless it was woken since it read loaded_wakeups
 * (then it returns, to load again).
 */
extern void workers_exit_idle(uint64 loaded_wakeups);

/*
 * From any session, at the commit of a change that the current database's
 * worker of this kind reads (the scrape configuration): wakes it, or has
 * the launcher start it.
 */
extern void workers_wake(WorkerKind kind);

#endif							/* PARCA_WORKERS_H */
