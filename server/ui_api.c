/* ui_api.c: the web UI's API over the query functions (ui_api.h) */
#include "ui_api.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "buf.h"
#include "log.h"

#define MAX_PARAMS 16
#define SQL_MAX 2048
#define DEFAULT_MAX_NODES 4096
#define MAX_MAX_NODES 100000
#define LIST_LIMIT 10000		/* label names or values, profile ids */
#define RANGE_POINTS_LIMIT 200000	/* points of the metric graph, all series */
#define RETRY_AFTER_DB 5

/* the statement's parameters, all text, bound as $1, $2, ... */
typedef struct Params
{
	const char *values[MAX_PARAMS];
	int			n;
} Params;

static int
param(Params *p, const char *value)
{
	p->values[p->n] = value;
	return ++p->n;
}

/* a time parameter: milliseconds since 1970, an optional sign and up to 15 digits */
static bool
valid_millis(const char *s)
{
	size_t		n = 0;

	if (*s == '-')
		s++;
	while (isdigit((unsigned char) s[n]))
		n++;
	return n > 0 && n <= 15 && s[n] == 0;
}

/* a whole number in [min, max] */
static bool
int_arg(const RequestInfo *r, const char *key, long dflt, long min, long max, long *out, Outcome *o)
{
	const char *s = request_arg(r, key);
	char	   *end;

	if (!s || !*s)
	{
		*out = dflt;
		return true;
	}
	*out = strtol(s, &end, 10);
	if (*end || end == s || *out < min || *out > max)
	{
		outcome_fail(o, 400, "bad_parameter", "%s must be a whole number from %ld to %ld", key, min, max);
		return false;
	}
	return true;
}

static const char *
required(const RequestInfo *r, const char *key, Outcome *o)
{
	const char *v = request_arg(r, key);

	if (!v || !*v)
		outcome_fail(o, 400, "missing_parameter", "the parameter %s is required", key);
	return v && *v ? v : NULL;
}

/* SQL of a time parameter (NULL when absent and optional) into out */
static bool
time_sql(const RequestInfo *r, const char *key, bool optional, Params *p, char *out, size_t outlen,
		 Outcome *o)
{
	const char *v = request_arg(r, key);

	if ((!v || !*v) && optional)
	{
		snprintf(out, outlen, "NULL::timestamptz");
		return true;
	}
	if (!v || !valid_millis(v))
	{
		outcome_fail(o, 400, "bad_time", "%s must be milliseconds since 1970 (a whole number)", key);
		return false;
	}
	snprintf(out, outlen, "pg_catalog.to_timestamp($%d::pg_catalog.float8 / 1000)", param(p, v));
	return true;
}

/*
 * The profile a request names, as SQL: PREFIXprofile (an id of
 * parca_profiles), or PREFIXselector with PREFIXstart and PREFIXstop, and
 * the stack filters PREFIXkeep_function and PREFIXdrop_function.
 */
static bool
profile_sql(const RequestInfo *r, const char *prefix, Params *p, char *out, size_t outlen, Outcome *o)
{
	char		key[32];
	const char *id;
	const char *selector;
	char		start[96];
	char		stop[96];

	snprintf(key, sizeof(key), "%sprofile", prefix);
	id = request_arg(r, key);
	if (id && *id)
	{
		snprintf(out, outlen, "public.parca_profile($%d)", param(p, id));
		return true;
	}
	snprintf(key, sizeof(key), "%sselector", prefix);
	if (!(selector = required(r, key, o)))
		return false;
	snprintf(key, sizeof(key), "%sstart", prefix);
	if (!time_sql(r, key, false, p, start, sizeof(start), o))
		return false;
	snprintf(key, sizeof(key), "%sstop", prefix);
	if (!time_sql(r, key, false, p, stop, sizeof(stop), o))
		return false;
	{
		int			selector_param = param(p, selector);
		const char *keep;
		const char *drop;

		snprintf(key, sizeof(key), "%skeep_function", prefix);
		keep = request_arg(r, key);
		snprintf(key, sizeof(key), "%sdrop_function", prefix);
		drop = request_arg(r, key);
		snprintf(out, outlen, "public.parca_query($%d, %s, %s, NULL, $%d, $%d)", selector_param, start, stop,
				 param(p, keep && *keep ? keep : NULL), param(p, drop && *drop ? drop : NULL));
	}
	return true;
}

/* a number column as JSON: doubles that JSON cannot hold are null */
static void
put_number(Buf *b, const PGresult *res, int row, int col)
{
	const char *v = PQgetvalue(res, row, col);

	if (PQgetisnull(res, row, col) || !*v || isalpha((unsigned char) v[v[0] == '-']))
		buf_puts(b, "null");
	else
		buf_puts(b, v);
}

static void
put_text(Buf *b, const PGresult *res, int row, int col)
{
	if (PQgetisnull(res, row, col))
		buf_puts(b, "null");
	else
		buf_json_string(b, PQgetvalue(res, row, col), (size_t) PQgetlength(res, row, col));
}

#define TEXTOID 25

/*
 * Columns first, first + 1, ... of every row as JSON arrays named names
 * (NULL-terminated): "name":[v1,v2,...], comma-separated; text columns as
 * strings, the others as numbers.
 */
static void
put_columns(Buf *b, const PGresult *res, int first, const char *const *names)
{
	for (int c = 0; names[c]; c++)
	{
		bool		text = PQftype(res, first + c) == TEXTOID;

		buf_printf(b, "%s\"%s\":[", c ? "," : "", names[c]);
		for (int i = 0; i < PQntuples(res); i++)
		{
			if (i)
				buf_puts(b, ",");
			if (text)
				put_text(b, res, i, first + c);
			else
				put_number(b, res, i, first + c);
		}
		buf_puts(b, "]");
	}
}

/* a failed statement as an answer */
static void
fail_from_result(PGconn *conn, PGresult *res, const char *role, Outcome *o)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

	if (!state || !primary || PQstatus(conn) != CONNECTION_OK)
	{
		const char *m = PQerrorMessage(conn);

		outcome_fail(o, 503, "database_unavailable", "the database is not reachable: %.*s",
					 (int) strcspn(m, "\n"), m);
		o->retry_after = RETRY_AFTER_DB;
	}
	else if (strcmp(state, "57014") == 0)
		outcome_fail(o, 503, "database_timeout", "the query took longer than the server's statement timeout: "
					 "choose a shorter range or fewer series");
	else if (db_sqlstate_transient(state))
	{
		outcome_fail(o, 503, "database_unavailable", "the database cannot answer now (SQLSTATE %s): %.500s",
					 state, primary);
		o->retry_after = RETRY_AFTER_DB;
	}
	else if (strcmp(state, "42501") == 0)
		outcome_fail(o, 403, "permission_denied", "role %s may not read this: %.500s",
					 role ? role : "(the server's login role)", primary);
	else if (strncmp(state, "22", 2) == 0 || strncmp(state, "42", 2) == 0 || strcmp(state, "54000") == 0)
		outcome_fail(o, 400, "bad_query", "%.500s", primary);
	else
	{
		outcome_fail(o, 500, "database_error", "the query failed (SQLSTATE %s): %.500s", state, primary);
		log_msg("error", "UI query failed (SQLSTATE %s): %.500s", state, primary);
	}
}

static bool
exec_simple(PGconn *conn, const char *sql, const char *role, Outcome *o)
{
	PGresult   *res = PQexec(conn, sql);
	bool		ok = PQresultStatus(res) == PGRES_COMMAND_OK;

	if (!ok)
		fail_from_result(conn, res, role, o);
	PQclear(res);
	return ok;
}

/*
 * Runs sql in a read-only transaction as role (unless NULL); the result, or
 * NULL with o set.  binary: the result's columns in binary form.
 */
static PGresult *
run(Db *db, const char *role, const char *sql, const Params *p, bool binary, Outcome *o)
{
	char		err[512];
	PGconn	   *conn = NULL;
	PGresult   *res = NULL;

	for (int attempt = 0; attempt < 2 && !res; attempt++)
	{
		char		role_sql[256];

		if (!(conn = db_connection(db, err, sizeof(err))))
		{
			outcome_fail(o, 503, "database_unavailable", "the database is not reachable: %s", err);
			o->retry_after = RETRY_AFTER_DB;
			return NULL;
		}
		if (!exec_simple(conn, "BEGIN READ ONLY", role, o))
		{
			/* a connection broken since its last use (a restart): once more, anew */
			db_reset(db);
			continue;
		}
		memset(o, 0, sizeof(*o));
		if (role)
		{
			char	   *quoted = PQescapeIdentifier(conn, role, strlen(role));

			if (!quoted)
			{
				outcome_fail(o, 500, "bad_role", "role name %.64s cannot be quoted", role);
				break;
			}
			snprintf(role_sql, sizeof(role_sql), "SET LOCAL ROLE %s", quoted);
			PQfreemem(quoted);
			if (!exec_simple(conn, role_sql, role, o))
				break;
		}
		res = PQexecParams(conn, sql, p->n, NULL, p->values, NULL, NULL, binary ? 1 : 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			fail_from_result(conn, res, role, o);
			PQclear(res);
			res = NULL;
			break;
		}
	}
	if (conn && PQstatus(conn) == CONNECTION_OK && PQtransactionStatus(conn) != PQTRANS_IDLE)
		PQclear(PQexec(conn, "ROLLBACK"));
	if (conn && PQstatus(conn) != CONNECTION_OK)
		db_reset(db);
	return res;
}

/* one text column as a JSON array (profile types, label names and values) */
static void
answer_list(Db *db, const RequestInfo *r, const char *sql, const Params *p, Buf *b, Outcome *o)
{
	PGresult   *res = run(db, r->role, sql, p, false, o);

	if (!res)
		return;
	buf_puts(b, "{");
	put_columns(b, res, 0, (const char *const[]) {"values", NULL});
	buf_printf(b, ",\"truncated\":%s}", PQntuples(res) >= LIST_LIMIT ? "true" : "false");
	PQclear(res);
}

static void
api_profile_types(Db *db, const RequestInfo *r, Buf *b, Outcome *o)
{
	Params		p = {0};
	char		start[96];
	char		stop[96];
	char		sql[SQL_MAX];

	if (!time_sql(r, "start", true, &p, start, sizeof(start), o) ||
		!time_sql(r, "stop", true, &p, stop, sizeof(stop), o))
		return;
	snprintf(sql, sizeof(sql), "SELECT t FROM public.parca_profile_types(%s, %s) t ORDER BY 1 LIMIT %d",
			 start, stop, LIST_LIMIT);
	answer_list(db, r, sql, &p, b, o);
}

static void
api_labels(Db *db, const RequestInfo *r, bool values, Buf *b, Outcome *o)
{
	Params		p = {0};
	const char *selector = request_arg(r, "selector");
	const char *label = NULL;
	char		start[96];
	char		stop[96];
	char		sql[SQL_MAX];
	int			label_param = 0;
	int			selector_param;

	if (values && !(label = required(r, "label", o)))
		return;
	if (label)
		label_param = param(&p, label);
	selector_param = param(&p, selector && *selector ? selector : "{}");
	if (!time_sql(r, "start", true, &p, start, sizeof(start), o) ||
		!time_sql(r, "stop", true, &p, stop, sizeof(stop), o))
		return;
	if (values)
		snprintf(sql, sizeof(sql), "SELECT v FROM public.parca_label_values($%d, $%d, %s, %s) v ORDER BY 1 LIMIT %d",
				 label_param, selector_param, start, stop, LIST_LIMIT);
	else
		snprintf(sql, sizeof(sql), "SELECT l FROM public.parca_labels($%d, %s, %s) l ORDER BY 1 LIMIT %d",
				 selector_param, start, stop, LIST_LIMIT);
	answer_list(db, r, sql, &p, b, o);
}

/* the metric graph: {"series": [{"series", "labels", "times", "values", "profiles"}]} */
static void
api_range(Db *db, const RequestInfo *r, Buf *b, Outcome *o)
{
	Params		p = {0};
	const char *selector;
	char		start[96];
	char		stop[96];
	char		sql[SQL_MAX];
	long		step;
	char		step_text[32];
	PGresult   *res;
	int			n;

	if (!(selector = required(r, "selector", o)) ||
		!time_sql(r, "start", false, &p, start, sizeof(start), o) ||
		!time_sql(r, "stop", false, &p, stop, sizeof(stop), o) ||
		!int_arg(r, "step", 60, 1, 366L * 86400, &step, o))
		return;
	snprintf(step_text, sizeof(step_text), "%ld", step);
	snprintf(sql, sizeof(sql),
			 "SELECT q.series, q.labels::text, "
			 "(pg_catalog.date_part('epoch', q.time) * 1000)::int8, q.value, q.profiles "
			 "FROM public.parca_query_range($%d, %s, %s, pg_catalog.make_interval(secs => $%d::pg_catalog.float8)) q "
			 "ORDER BY q.series, q.time LIMIT %d",
			 param(&p, selector), start, stop, param(&p, step_text), RANGE_POINTS_LIMIT + 1);
	if (!(res = run(db, r->role, sql, &p, false, o)))
		return;
	n = PQntuples(res);
	if (n > RANGE_POINTS_LIMIT)
	{
		outcome_fail(o, 413, "too_many_points", "more than %d points (series times steps): "
					 "choose fewer series or a larger step", RANGE_POINTS_LIMIT);
		PQclear(res);
		return;
	}
	buf_puts(b, "{\"series\":[");
	for (int i = 0; i < n;)
	{
		int			j = i;

		if (i)
			buf_puts(b, ",");
		buf_puts(b, "{\"series\":");
		put_text(b, res, i, 0);
		buf_printf(b, ",\"labels\":%s,\"points\":[", PQgetisnull(res, i, 1) ? "null" : PQgetvalue(res, i, 1));
		for (; j < n && strcmp(PQgetvalue(res, j, 0), PQgetvalue(res, i, 0)) == 0; j++)
		{
			buf_puts(b, j > i ? ",[" : "[");
			put_number(b, res, j, 2);
			buf_puts(b, ",");
			put_number(b, res, j, 3);
			buf_puts(b, ",");
			put_number(b, res, j, 4);
			buf_puts(b, "]");
		}
		buf_puts(b, "]}");
		i = j;
	}
	buf_puts(b, "]}");
	PQclear(res);
}

/* the single profiles of a selector in a range, to open the one a click names */
static void
api_profiles(Db *db, const RequestInfo *r, Buf *b, Outcome *o)
{
	Params		p = {0};
	const char *selector;
	char		start[96];
	char		stop[96];
	char		sql[SQL_MAX];
	PGresult   *res;

	if (!(selector = required(r, "selector", o)) ||
		!time_sql(r, "start", false, &p, start, sizeof(start), o) ||
		!time_sql(r, "stop", false, &p, stop, sizeof(stop), o))
		return;
	snprintf(sql, sizeof(sql),
			 "SELECT x.profile_id, (pg_catalog.date_part('epoch', x.time) * 1000)::int8, x.series, x.total "
			 "FROM public.parca_profiles($%d, %s, %s) x ORDER BY x.time, x.series_id LIMIT %d",
			 param(&p, selector), start, stop, LIST_LIMIT);
	if (!(res = run(db, r->role, sql, &p, false, o)))
		return;
	buf_puts(b, "{");
	put_columns(b, res, 0, (const char *const[]) {"ids", "times", "series", "totals", NULL});
	buf_puts(b, "}");
	PQclear(res);
}

/*
 * The icicle rows of a profile (or of the diff of base_* and *), at most
 * max_nodes of them: columns as arrays, as Grafana's data frame holds them.
 */
static void
api_icicle(Db *db, const RequestInfo *r, bool diff, Buf *b, Outcome *o)
{
	Params		p = {0};
	char		profile[512];
	char		base[512];
	char		sql[SQL_MAX];
	char		nodes_text[32];
	long		max_nodes;
	const char *absolute = request_arg(r, "absolute");
	PGresult   *res;
	int			n;
	bool		trimmed = false;

	if (diff && !profile_sql(r, "base_", &p, base, sizeof(base), o))
		return;
	if (!profile_sql(r, "", &p, profile, sizeof(profile), o) ||
		!int_arg(r, "max_nodes", DEFAULT_MAX_NODES, 1, MAX_MAX_NODES, &max_nodes, o))
		return;
	snprintf(nodes_text, sizeof(nodes_text), "%ld", max_nodes);
	/*
	 * The profile is made once (MATERIALIZED), its type and total read once
	 * beside it (a call a row would read the whole profile each time) and
	 * sent with every row: one statement, one round trip.
	 */
	if (diff)
		snprintf(sql, sizeof(sql),
				 "WITH x AS MATERIALIZED (SELECT y.p, public.parca_profile_type(y.p) AS t, "
				 "public.parca_profile_total(y.p) AS n FROM (SELECT public.parca_diff(%s, %s, %s) AS p OFFSET 0) y) "
				 "SELECT x.t, x.n, i.level, i.value, i.self, i.label, i.\"valueRight\", i.\"selfRight\" "
				 "FROM x, public.parca_icicle_diff(x.p, $%d::int4) i WHERE x.p IS NOT NULL",
				 base, profile, absolute && strcmp(absolute, "true") == 0 ? "true" : "false",
				 param(&p, nodes_text));
	else
		snprintf(sql, sizeof(sql),
				 "WITH x AS MATERIALIZED (SELECT y.p, public.parca_profile_type(y.p) AS t, "
				 "public.parca_profile_total(y.p) AS n FROM (SELECT %s AS p OFFSET 0) y) "
				 "SELECT x.t, x.n, i.level, i.value, i.self, i.label "
				 "FROM x, public.parca_icicle(x.p, $%d::int4) i WHERE x.p IS NOT NULL",
				 profile, param(&p, nodes_text));
	if (!(res = run(db, r->role, sql, &p, false, o)))
		return;
	n = PQntuples(res);
	for (int i = 0; i < n && !trimmed; i++)
		trimmed = strcmp(PQgetvalue(res, i, 5), "[trimmed]") == 0;
	buf_puts(b, "{\"type\":");
	if (n)
		put_text(b, res, 0, 0);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"total\":");
	if (n)
		put_number(b, res, 0, 1);
	else
		buf_puts(b, "0");
	buf_printf(b, ",\"max_nodes\":%ld,\"trimmed\":%s,", max_nodes, trimmed ? "true" : "false");
	put_columns(b, res, 2, diff ? (const char *const[]) {"level", "value", "self", "label", "valueRight", "selfRight", NULL} :
				(const char *const[]) {"level", "value", "self", "label", NULL});
	buf_puts(b, "}");
	PQclear(res);
}

static void
api_top(Db *db, const RequestInfo *r, Buf *b, Outcome *o)
{
	Params		p = {0};
	char		profile[512];
	char		sql[SQL_MAX];
	char		limit_text[32];
	long		limit;
	PGresult   *res;

	if (!profile_sql(r, "", &p, profile, sizeof(profile), o) ||
		!int_arg(r, "limit", 100, 1, LIST_LIMIT, &limit, o))
		return;
	snprintf(limit_text, sizeof(limit_text), "%ld", limit);
	snprintf(sql, sizeof(sql),
			 "SELECT t.function, t.file, t.flat, t.flat_percent, t.cum, t.cum_percent "
			 "FROM (SELECT %s AS p OFFSET 0) x, public.parca_top(x.p) t "
			 "ORDER BY t.flat DESC, t.cum DESC, t.function LIMIT $%d::int8",
			 profile, param(&p, limit_text));
	if (!(res = run(db, r->role, sql, &p, false, o)))
		return;
	buf_puts(b, "{");
	put_columns(b, res, 0, (const char *const[]) {"function", "file", "flat", "flat_percent", "cum", "cum_percent", NULL});
	buf_puts(b, "}");
	PQclear(res);
}

/* the gzipped pprof of a profile, as a download */
static void
api_pprof(Db *db, const RequestInfo *r, Buf *b, Response *out, Outcome *o)
{
	Params		p = {0};
	char		profile[512];
	char		sql[SQL_MAX];
	PGresult   *res;

	if (!profile_sql(r, "", &p, profile, sizeof(profile), o))
		return;
	snprintf(sql, sizeof(sql), "SELECT public.parca_pprof(x.p) FROM (SELECT %s AS p OFFSET 0) x", profile);
	if (!(res = run(db, r->role, sql, &p, true, o)))
		return;
	if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
		outcome_fail(o, 404, "empty_profile", "no samples in this selection: nothing to download");
	else
	{
		buf_append(b, PQgetvalue(res, 0, 0), (size_t) PQgetlength(res, 0, 0));
		out->content_type = "application/octet-stream";
		out->content_disposition = "attachment; filename=\"profile.pb.gz\"";
	}
	PQclear(res);
}

void
ui_api_answer(Db *db, const RequestInfo *r, size_t max_response, Response *out, Outcome *o)
{
	const char *what = r->path + strlen(UI_API_PREFIX);
	Buf			b;

	memset(o, 0, sizeof(*o));
	buf_init(&b, max_response);
	out->content_type = "application/json";
	out->content_disposition = NULL;
	if (strcmp(what, "profile-types") == 0)
		api_profile_types(db, r, &b, o);
	else if (strcmp(what, "labels") == 0)
		api_labels(db, r, false, &b, o);
	else if (strcmp(what, "label-values") == 0)
		api_labels(db, r, true, &b, o);
	else if (strcmp(what, "range") == 0)
		api_range(db, r, &b, o);
	else if (strcmp(what, "profiles") == 0)
		api_profiles(db, r, &b, o);
	else if (strcmp(what, "icicle") == 0)
		api_icicle(db, r, false, &b, o);
	else if (strcmp(what, "diff") == 0)
		api_icicle(db, r, true, &b, o);
	else if (strcmp(what, "top") == 0)
		api_top(db, r, &b, o);
	else if (strcmp(what, "pprof") == 0)
		api_pprof(db, r, &b, out, o);
	else
		outcome_fail(o, 404, "not_found", "no such API: %.200s (see docs/web.md)", r->path);
	if (!o->status && b.failed)
		outcome_fail(o, 413, "response_too_large", "the answer is larger than the server's limit (%zu bytes): "
					 "choose fewer series, a shorter range or fewer nodes", max_response);
	if (o->status)
	{
		buf_free(&b);
		return;
	}
	o->status = 200;
	out->status = 200;
	out->body = (char *) buf_release(&b, &out->len);
}
