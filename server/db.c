/* db.c: storing batches through libpq (db.h) */
#include "db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "log.h"

#define BYTEAOID 17
#define TEXTOID 25
#define JSONBOID 3802

/* how long a client should wait before it sends again when the database is away */
#define RETRY_AFTER_DB 5

struct Db
{
	char	   *dsn;
	int			statement_timeout_s;
	PGconn	   *conn;
};

Db *
db_new(const char *dsn, int statement_timeout_s)
{
	Db		   *db = calloc(1, sizeof(Db));

	if (!db)
		return NULL;
	db->dsn = strdup(dsn ? dsn : "");
	db->statement_timeout_s = statement_timeout_s;
	if (!db->dsn)
	{
		free(db);
		return NULL;
	}
	return db;
}

void
db_free(Db *db)
{
	if (!db)
		return;
	if (db->conn)
		PQfinish(db->conn);
	free(db->dsn);
	free(db);
}

/* the first line of libpq's message, without its newline */
static void
conn_error(PGconn *conn, char *out, size_t outlen)
{
	const char *m = conn ? PQerrorMessage(conn) : "out of memory";
	size_t		n = strcspn(m, "\n");

	snprintf(out, outlen, "%.*s", (int) (n > 400 ? 400 : n), m);
}

/* a working connection, made anew when needed; false with err */
static bool
db_connect(Db *db, char *err, size_t errlen)
{
	/* the dsn's own settings win over these defaults (they come after them) */
	const char *keys[] = {"application_name", "connect_timeout", "dbname", NULL};
	const char *values[] = {"parca-server", "5", db->dsn, NULL};
	char		setup[256];
	PGresult   *res;

	if (db->conn && PQstatus(db->conn) == CONNECTION_OK)
		return true;
	if (db->conn)
		PQfinish(db->conn);
	db->conn = PQconnectdbParams(keys, values, 1);
	if (!db->conn || PQstatus(db->conn) != CONNECTION_OK)
	{
		conn_error(db->conn, err, errlen);
		if (db->conn)
			PQfinish(db->conn);
		db->conn = NULL;
		return false;
	}
	/*
	 * Statements name what they use with its schema, and no one's objects
	 * come before pg_catalog (docs/security.md, "search_path").
	 */
	snprintf(setup, sizeof(setup),
			 "SET search_path = pg_catalog, pg_temp; SET statement_timeout = '%ds'",
			 db->statement_timeout_s);
	res = PQexec(db->conn, setup);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		conn_error(db->conn, err, errlen);
		PQclear(res);
		PQfinish(db->conn);
		db->conn = NULL;
		return false;
	}
	PQclear(res);
	return true;
}

bool
db_sqlstate_transient(const char *s)
{
	return strncmp(s, "08", 2) == 0 ||	/* connection exception */
		strncmp(s, "53", 2) == 0 ||	/* insufficient resources */
		strncmp(s, "57P", 3) == 0 ||	/* shut down, cannot connect now */
		strcmp(s, "57014") == 0 ||	/* canceled: statement_timeout */
		strcmp(s, "40001") == 0 ||	/* serialization failure */
		strcmp(s, "40P01") == 0 ||	/* deadlock */
		strcmp(s, "55P03") == 0 ||	/* lock not available */
		strcmp(s, "25006") == 0 ||	/* read-only: a standby */
		strcmp(s, "55000") == 0;	/* extension not updated yet */
}

/* the failure of a statement, as an HTTP answer */
static void
fail_from_result(Db *db, PGresult *res, size_t item, size_t nitems, const char *name, const char *role,
				 Outcome *o)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	char		msg[600];
	char		where[128] = "";

	if (!state || !primary)
	{
		char		err[512];

		conn_error(db->conn, err, sizeof(err));
		outcome_fail(o, 503, "database_unavailable", "the database is not reachable: %s", err);
		o->retry_after = RETRY_AFTER_DB;
		return;
	}
	snprintf(msg, sizeof(msg), "%.500s", primary);
	if (nitems > 1 && name)
		snprintf(where, sizeof(where), "profile %zu of %zu (%s): ", item + 1, nitems, name);
	if (db_sqlstate_transient(state))
	{
		outcome_fail(o, 503, strcmp(state, "57014") == 0 ? "database_timeout" : "database_unavailable",
					 "the database cannot store profiles now (SQLSTATE %s): %s", state, msg);
		o->retry_after = RETRY_AFTER_DB;
	}
	else if (strcmp(state, "42501") == 0)
		outcome_fail(o, 403, "permission_denied", "role %s may not store profiles: %s",
					 role ? role : "(the server's login role)", msg);
	else if (strcmp(state, "54000") == 0)
		outcome_fail(o, 413, "profile_too_large", "%s%s", where, msg);
	else if (strncmp(state, "22", 2) == 0 || strcmp(state, "XX001") == 0)
		outcome_fail(o, 400, "invalid_profile", "%s%s", where, msg);
	else
	{
		outcome_fail(o, 500, "database_error", "storing failed (SQLSTATE %s): %s", state, msg);
		log_msg("error", "storing failed (SQLSTATE %s): %s", state, msg);
	}
}

/*
 * The request's statements sent at once (libpq's pipeline mode): BEGIN,
 * SET LOCAL ROLE, one parca_ingest_pprof a profile, COMMIT, and a sync:
 * one round trip, as a direct call takes.  After an error the server skips
 * the rest up to the sync, so nothing after it (COMMIT) runs.
 */
static bool
send_pipeline(Db *db, const char *role_sql, const StoreBatch *batch)
{
	bool		ok = PQenterPipelineMode(db->conn) &&
		PQsendQueryParams(db->conn, "BEGIN", 0, NULL, NULL, NULL, NULL, 0) &&
		(!role_sql || PQsendQueryParams(db->conn, role_sql, 0, NULL, NULL, NULL, NULL, 0));

	for (size_t i = 0; ok && i < batch->n; i++)
	{
		const StoreItem *it = &batch->items[i];
		const Oid	types[3] = {BYTEAOID, TEXTOID, JSONBOID};
		const char *values[3] = {(const char *) it->data, it->name, it->labels_json};
		const int	lengths[3] = {(int) it->len, 0, 0};
		const int	formats[3] = {1, 0, 0};

		ok = PQsendQueryParams(db->conn, "SELECT public.parca_ingest_pprof($1, $2, $3)",
							   3, types, values, lengths, formats, 0);
	}
	return ok && PQsendQueryParams(db->conn, "COMMIT", 0, NULL, NULL, NULL, NULL, 0) &&
		PQpipelineSync(db->conn);
}

void
db_store(Db *db, const char *role, const StoreBatch *batch, Outcome *o)
{
	char		err[512];

	for (int attempt = 0; attempt < 2; attempt++)
	{
		char		role_sql[256];
		PGresult   *failed = NULL;	/* the first error's result */
		size_t		failed_item = 0;
		bool		failed_in_commit = false;
		bool		lost;
		long long	rows = 0;
		size_t		nqueries = batch->n + 2 + (role ? 1 : 0);

		if (!db_connect(db, err, sizeof(err)))
		{
			outcome_fail(o, 503, "database_unavailable", "the database is not reachable: %s", err);
			o->retry_after = RETRY_AFTER_DB;
			return;
		}
		if (role)
		{
			char	   *quoted = PQescapeIdentifier(db->conn, role, strlen(role));

			if (!quoted)
			{
				outcome_fail(o, 500, "bad_role", "role name %.64s cannot be quoted", role);
				return;
			}
			snprintf(role_sql, sizeof(role_sql), "SET LOCAL ROLE %s", quoted);
			PQfreemem(quoted);
		}
		if (send_pipeline(db, role ? role_sql : NULL, batch))
		{
			/* each query's result, then the sync's */
			for (size_t q = 0; q <= nqueries; q++)
			{
				PGresult   *res = PQgetResult(db->conn);
				ExecStatusType st;

				if (!res)
					break;		/* the connection is gone */
				st = PQresultStatus(res);
				if (st == PGRES_PIPELINE_SYNC)
				{
					PQclear(res);
					break;
				}
				if (st == PGRES_FATAL_ERROR && !failed)
				{
					failed = res;
					failed_in_commit = q == nqueries - 1;
					failed_item = q >= nqueries - 1 - batch->n ? q - (nqueries - 1 - batch->n) : 0;
					res = NULL;
				}
				else if (st == PGRES_TUPLES_OK && PQntuples(res) == 1 && PQnfields(res) == 1)
					rows += strtoll(PQgetvalue(res, 0, 0), NULL, 10);
				PQclear(res);
				/* the NULL that ends each query's results */
				while ((res = PQgetResult(db->conn)) != NULL)
					PQclear(res);
			}
		}
		lost = PQstatus(db->conn) != CONNECTION_OK;
		if (!lost)
			PQexitPipelineMode(db->conn);
		if (!failed && !lost && PQtransactionStatus(db->conn) == PQTRANS_IDLE)
		{
			o->status = 200;
			o->reason = NULL;
			o->profiles = batch->n;
			o->rows = rows;
			return;
		}
		/*
		 * A connection lost before any answer stored nothing: a connection
		 * made anew tries once more (a restarted database leaves every
		 * pooled connection broken).
		 */
		if (lost && !failed && rows == 0 && attempt == 0)
		{
			PQfinish(db->conn);
			db->conn = NULL;
			continue;
		}
		fail_from_result(db, failed, failed_item < batch->n ? failed_item : 0, batch->n,
						 failed_item < batch->n ? batch->items[failed_item].name : NULL, role, o);
		if (lost || failed_in_commit)
			snprintf(o->message + strlen(o->message), sizeof(o->message) - strlen(o->message),
					 lost ? " (the connection was lost: if COMMIT had been sent, the profiles may have been stored)" : "");
		PQclear(failed);
		if (!lost && PQtransactionStatus(db->conn) != PQTRANS_IDLE)
			PQclear(PQexec(db->conn, "ROLLBACK"));
		if (lost)
		{
			PQfinish(db->conn);
			db->conn = NULL;
		}
		return;
	}
}

PGconn *
db_connection(Db *db, char *err, size_t errlen)
{
	return db_connect(db, err, errlen) ? db->conn : NULL;
}

void
db_reset(Db *db)
{
	if (db->conn)
		PQfinish(db->conn);
	db->conn = NULL;
}

bool
db_check(Db *db, size_t *max_profile_size, char *err, size_t errlen)
{
	PGresult   *res;
	bool		ok;

	if (!db_connect(db, err, errlen))
		return false;
	/*
	 * parca_write_protocol() loads the library, which defines the setting
	 * (pg_settings reports its value in bytes).
	 */
	res = PQexec(db->conn,
				 "SELECT public.parca_write_protocol(), "
				 "(SELECT setting FROM pg_catalog.pg_settings WHERE name = 'parca.max_profile_size')");
	ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
	if (ok)
	{
		if (!PQgetisnull(res, 0, 1))
			*max_profile_size = (size_t) strtoull(PQgetvalue(res, 0, 1), NULL, 10);
	}
	else
	{
		const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

		if (primary)
			snprintf(err, errlen, "%.400s", primary);
		else
			conn_error(db->conn, err, errlen);
	}
	PQclear(res);
	return ok;
}
