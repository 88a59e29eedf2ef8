/*
 * postgres.h
 *		PostgreSQL backends: which processes are PostgreSQL servers whose
 *		backend status the agent can read, registering them with the BPF
 *		program once the layout is checked on the process, and the labels
 *		their samples get (pg_query_id, pg_database, pg_user,
 *		pg_backend_type, pg_wait_event, pg_parallel_worker).  See
 *		docs/postgres.md.
 */
#ifndef AGENT_POSTGRES_H
#define AGENT_POSTGRES_H

#include <stdbool.h>

#include "process.h"
#include "relabel.h"
#include "sample.h"
#include "sampler.h"

/*
 * Before the first sample, unless the agent runs with --no-postgres (then
 * no process is looked at): unless offline, ask the cluster at dsn (the
 * one the agent writes to) for the layout its extension publishes
 * (parca_postgres_layout) and for the names of its databases and roles.
 * PARCA_AGENT_TEST_PG_LAYOUT (tests only: "field=offset,...") replaces
 * offsets of every layout, to see the check refuse a wrong one.
 */
extern void postgres_init(const char *dsn, bool offline);

/*
 * A frame of the process's is in mapping m: if m is its executable and
 * the process has not been looked at (or its backend status did not exist
 * yet), find out whether it is a PostgreSQL backend whose layout is known
 * and checks out, and if so register it with the BPF program.
 */
extern void postgres_check(Sampler *sampler, Process *p, const ExecMapping *m);

/* Room for the labels' values that postgres_labels writes. */
typedef struct PgLabelText
{
	char		query_id[24];
	char		database[16];
	char		user[16];
	char		backend_type[16];
	char		wait_event[48];
} PgLabelText;

/*
 * Add the sample's PostgreSQL labels to set (nothing unless the BPF
 * program read a checked backend's status); numbers are written into
 * text, which must live as long as set.
 */
extern void postgres_labels(LabelSet *set, const struct parca_sample *s, PgLabelText *text);

/* Free what Process.postgres holds. */
extern void postgres_free(struct ProcessPostgres *pg);

#endif							/* AGENT_POSTGRES_H */
