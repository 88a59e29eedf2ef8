/*
 * The database side: one libpq connection per worker, a request's profiles
 * stored in one transaction as the request's role, and errors turned into
 * HTTP answers (docs/push.md, "Errors").
 */
#ifndef SERVER_DB_H
#define SERVER_DB_H

#include <stdbool.h>
#include <stddef.h>

#include "request.h"

typedef struct Db Db;

/* statement_timeout_s bounds every statement; nothing connects yet */
Db		   *db_new(const char *dsn, int statement_timeout_s);
void		db_free(Db *db);

/*
 * Stores every item of the batch with parca_ingest_pprof in one
 * transaction, after SET LOCAL ROLE role (unless NULL): all or nothing.
 * Sets o (status 200 and the rows written, or the failure).
 */
void		db_store(Db *db, const char *role, const StoreBatch *batch, Outcome *o);

/*
 * Whether the database answers and has the extension; *max_profile_size
 * gets its parca.max_profile_size.
 */
bool		db_check(Db *db, size_t *max_profile_size, char *err, size_t errlen);

/*
 * The worker's connection, made anew when needed (NULL with err), for
 * statements of its own (ui_api.c); db_reset drops it after a failure.
 */
struct pg_conn *db_connection(Db *db, char *err, size_t errlen);
void		db_reset(Db *db);

/* an SQLSTATE the client may retry later, as the database is away or busy */
bool		db_sqlstate_transient(const char *sqlstate);

#endif
