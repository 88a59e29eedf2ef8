/*
 * citus.h
 *		Whether a table is distributed by Citus, and where this server is in
 *		a Citus cluster (docs/scale-out.md).
 */
#ifndef PARCA_CITUS_H
#define PARCA_CITUS_H

#include "postgres.h"

/*
 * Whether relid is a Citus table (distributed or reference) in this
 * database: its rows live in shards, so on the coordinator the table
 * itself holds none and must be read through SQL that Citus plans.
 * False, without reading anything, where Citus is not installed.
 */
extern bool citus_table(Oid relid);

/*
 * Whether this server is a Citus worker node (not the coordinator, nor a
 * server without Citus): the statements it runs for the coordinator
 * touch shards, and must not start distributed queries of their own.
 */
extern bool citus_worker_node(void);

/*
 * Whether a background worker must write relid as its session's user, not
 * as role: relid is a Citus table, whose rows Citus writes on the worker
 * nodes over connections it opens as the current user, and role may not
 * log in (docs/security.md, docs/scale-out.md).
 */
extern bool citus_refuses_role(Oid relid, Oid role);

#endif							/* PARCA_CITUS_H */
