/*
 * workers_internal.h
 *		What the files of src/workers/ share among themselves: the shared
 *		memory of registry.c.
 */
#ifndef PARCA_WORKERS_INTERNAL_H
#define PARCA_WORKERS_INTERNAL_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

#include "workers/workers.h"

/* parca.workers (launcher.c) */
extern bool workers_enabled;

/* What the launcher says of an entry, for parca.workers. */
typedef enum EntryState
{
	ENTRY_FREE = 0,
	ENTRY_STARTING,				/* registered with the postmaster */
	ENTRY_WAITING,				/* no background worker slot: tried again */
	ENTRY_RESTARTING,			/* it died: started again after a pause */
	ENTRY_STOPPING				/* asked to stop */
} EntryState;

#define ENTRY_NOTE_LEN 160

/*
 * One worker of one database that the launcher wants running.  The
 * launcher allocates it before starting the worker and frees it after the
 * worker ended; the worker attaches to it (bgw_main_arg is its index,
 * bgw_extra a WorkerStart that must match).
 */
typedef struct WorkerEntry
{
	/* the launcher's */
	Oid			dboid;			/* InvalidOid: free */
	WorkerKind	kind;
	uint32		generation;		/* counts allocations of this entry */
	NameData	dbname;
	EntryState	state;
	TimestampTz since;			/* of the state, or of serving */
	char		note[ENTRY_NOTE_LEN];	/* why it waits, or how it ended */

	/* the worker's, while it lives */
	pid_t		pid;
	Latch	   *latch;
	bool		serving;		/* the database has the extension */
	bool		wants_scrape;	/* (maintenance) a scrape job is enabled */
	WorkerExit	exit;			/* why it ended by itself */
	uint64		wakeups_seen;	/* workers_wakeups() its last load read */

	/* any session's */
	uint64		wakeups;		/* workers_wake() calls */
	bool		stop_requested; /* signalled to stop: no failure if it dies */
} WorkerEntry;

/* What a worker gets in bgw_extra, to check the entry is still its own. */
typedef struct WorkerStart
{
	Oid			dboid;
	WorkerKind	kind;
	uint32		generation;
} WorkerStart;

/*
 * A database the launcher must look at again: restart its workers, or
 * start its scrape worker.
 */
typedef struct WorkerRequest
{
	Oid			dboid;
	bool		restart;
	bool		scrape;
} WorkerRequest;

#define WORKER_REQUESTS 32

typedef struct WorkersShared
{
	LWLock	   *lock;			/* protects everything below */
	Latch	   *launcher_latch; /* NULL while no launcher runs */
	int			nrequests;
	bool		requests_lost;	/* more came: look at every database */
	WorkerRequest requests[WORKER_REQUESTS];
	Oid		   *paused;			/* [MaxBackends]: the database a session's
								 * DROP, RENAME, ... DATABASE waits for */
	int			nentries;
	WorkerEntry entries[FLEXIBLE_ARRAY_MEMBER];
} WorkersShared;

/* launcher.c: what each kind of worker is */
typedef struct WorkerKindInfo
{
	const char *name;			/* in parca.workers */
	const char *type;			/* bgw_type, and in messages */
	const char *function;		/* its main, in this library */
} WorkerKindInfo;

extern const WorkerKindInfo worker_kinds[WORKER_KINDS];

/* registry.c: NULL unless the library was preloaded */
extern WorkersShared *workers_shared;

extern void registry_init(void);
/* the launcher's: an entry (locked by the caller), -1 if none is free */
extern int	registry_entry_alloc(Oid dboid, const char *dbname, WorkerKind kind);
extern bool registry_paused(Oid dboid);
/* any session's */
extern void registry_request(Oid dboid, bool restart);	/* (not scrape) */
extern void registry_wake_database(Oid dboid);
extern void registry_pause(Oid dboid);
extern void registry_resume(void);

/* events.c: the hooks, from workers_init */
extern void events_init(void);

#endif							/* PARCA_WORKERS_INTERNAL_H */
