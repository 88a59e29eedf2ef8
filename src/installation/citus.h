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

#endif							/* PARCA_CITUS_H */
