/*
 * series_index_write.c
 *		The statements of the series index, run as its tables' owner: what
 *		a transaction noted, written before it commits, and those of the
 *		trigger on parca.series and of parca.series_index_rebuild()
 *		(series_index.c says what is noted and when).
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "metastore/series_index.h"
#include "metastore/series_index_internal.h"

void
series_index_access_begin(SeriesIndexAccess *access)
{
	const IndexTables *tables = series_index_tables();

	if (!tables->present)
		elog(ERROR, "the series index tables are missing");
	GetUserIdAndSecContext(&access->saved_user, &access->saved_context);
	access->guc_level = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	SetUserIdAndSecContext(tables->owner, access->saved_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
}

void
series_index_access_end(SeriesIndexAccess *access)
{
	SetUserIdAndSecContext(access->saved_user, access->saved_context);
	AtEOXact_GUC(true, access->guc_level);
}

void
series_index_run_as_owner(const char *const *statements, int n, TriggerData *td,
						  const char *read_sql)
{
	SeriesIndexAccess access;
	int			nargs = 0;
	Oid		   *types = NULL;
	Datum	   *values = NULL;
	char	   *nulls = NULL;

	SPI_connect();
	if (td && SPI_register_trigger_data(td) != SPI_OK_TD_REGISTER)
		elog(ERROR, "SPI_register_trigger_data failed");
	series_index_access_begin(&access);
	if (read_sql)
	{
		int			rc = SPI_execute(read_sql, true, 0);

		if (rc != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "series index statement failed (%s): %s", SPI_result_code_string(rc),
				 read_sql);
		nargs = SPI_tuptable->tupdesc->natts;
		types = palloc(nargs * sizeof(Oid));
		values = palloc(nargs * sizeof(Datum));
		nulls = palloc(nargs * sizeof(char));
		for (int i = 0; i < nargs; i++)
		{
			bool		isnull;

			types[i] = SPI_gettypeid(SPI_tuptable->tupdesc, i + 1);
			values[i] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, i + 1, &isnull);
			nulls[i] = isnull ? 'n' : ' ';
		}
	}
	for (int i = 0; i < n; i++)
	{
		int			rc = SPI_execute_with_args(statements[i], nargs, types, values, nulls, false, 0);

		if (rc < 0)
			elog(ERROR, "series index statement failed (%s): %s", SPI_result_code_string(rc),
				 statements[i]);
	}
	series_index_access_end(&access);
	SPI_finish();
}

char *
series_index_label_hours_sql(const char *prefix, const char *hours)
{
	return psprintf(
					"WITH %s%shours AS (%s), "
					"per_series AS (SELECT s.profile_type, s.labels, h.hour "
					"  FROM hours h JOIN parca.series s ON s.id OPERATOR(pg_catalog.=) h.series_id), "
					"marks AS (INSERT INTO parca.label_hours (profile_type, name, hour, value) "
					"  SELECT DISTINCT m.profile_type, NULL, m.hour, NULL FROM per_series m "
					"  WHERE (SELECT true FROM parca.label_hours b "
					"    WHERE b.profile_type OPERATOR(pg_catalog.=) m.profile_type AND b.name IS NULL "
					"      AND b.hour OPERATOR(pg_catalog.=) m.hour LIMIT 1) IS NULL RETURNING 1), "
					"vals AS (SELECT DISTINCT p.profile_type, e.key AS name, p.hour, e.value "
					"  FROM per_series p CROSS JOIN LATERAL pg_catalog.jsonb_each_text("
					"    CASE WHEN pg_catalog.jsonb_typeof(p.labels) OPERATOR(pg_catalog.=) 'object' THEN p.labels END) e "
					"  WHERE e.value IS NOT NULL) "
					"INSERT INTO parca.label_hours (profile_type, name, hour, value) "
					"SELECT v.profile_type, v.name, v.hour, v.value FROM vals v "
					"WHERE (SELECT true FROM parca.label_hours b "
					"  WHERE b.profile_type OPERATOR(pg_catalog.=) v.profile_type "
					"    AND b.name OPERATOR(pg_catalog.=) v.name AND b.hour OPERATOR(pg_catalog.=) v.hour "
					"    AND b.value OPERATOR(pg_catalog.=) v.value LIMIT 1) IS NULL",
					prefix, *prefix ? ", " : "", hours);
}

static const char add_values_sql[] =
"INSERT INTO parca.label_values (profile_type, name, value) "
"SELECT u.t, u.n, u.v FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.text[]), "
"  pg_catalog.unnest($3::pg_catalog.text[])) AS u(t, n, v) "
"WHERE (SELECT true FROM parca.label_values d WHERE d.profile_type OPERATOR(pg_catalog.=) u.t "
"  AND d.name OPERATOR(pg_catalog.=) u.n AND d.value OPERATOR(pg_catalog.=) u.v LIMIT 1) IS NULL";

/* Arrays of a pending value table's entries, for the statements above. */
static void
value_arrays(HTAB *table, Datum *args)
{
	long		n = hash_get_num_entries(table);
	Datum	   *t = palloc(Max(n, 1) * sizeof(Datum));
	Datum	   *nm = palloc(Max(n, 1) * sizeof(Datum));
	Datum	   *v = palloc(Max(n, 1) * sizeof(Datum));
	HASH_SEQ_STATUS seq;
	PendingValue *pv;
	int			i = 0;

	hash_seq_init(&seq, table);
	while ((pv = hash_seq_search(&seq)) != NULL)
	{
		t[i] = CStringGetTextDatum(pv->profile_type);
		nm[i] = CStringGetTextDatum(pv->name);
		v[i] = CStringGetTextDatum(pv->value);
		i++;
	}
	args[0] = PointerGetDatum(construct_array(t, i, TEXTOID, -1, false, TYPALIGN_INT));
	args[1] = PointerGetDatum(construct_array(nm, i, TEXTOID, -1, false, TYPALIGN_INT));
	args[2] = PointerGetDatum(construct_array(v, i, TEXTOID, -1, false, TYPALIGN_INT));
}

static Datum
id_array(HTAB *table)
{
	long		n = hash_get_num_entries(table);
	Datum	   *d = palloc(Max(n, 1) * sizeof(Datum));
	HASH_SEQ_STATUS seq;
	PendingSeries *ps;
	int			i = 0;

	hash_seq_init(&seq, table);
	while ((ps = hash_seq_search(&seq)) != NULL)
		d[i++] = Int64GetDatum(ps->id);
	return PointerGetDatum(construct_array(d, i, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/*
 * The (series, hour) pairs $1, $2 into parca.series_hours where missing;
 * the label values of those added, and of the hours of the series $3
 * added in this transaction, into parca.label_hours.
 */
static const char add_pairs_ctes[] =
"pairs AS (SELECT u.s, u.h FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.int8[]), "
"  pg_catalog.unnest($2::pg_catalog.timestamptz[])) AS u(s, h) "
"  WHERE (SELECT true FROM parca.series_hours a "
"    WHERE a.series_id OPERATOR(pg_catalog.=) u.s AND a.hour OPERATOR(pg_catalog.=) u.h LIMIT 1) IS NULL), "
"added AS (INSERT INTO parca.series_hours (series_id, hour) SELECT s, h FROM pairs RETURNING series_id, hour)";
static const char added_hours[] =
"SELECT series_id, hour FROM added UNION "
"SELECT a.series_id, a.hour FROM parca.series_hours a "
"WHERE a.series_id OPERATOR(pg_catalog.=) ANY ($3::pg_catalog.int8[])";

/*
 * The two statements of every commit that adds to the index, planned once
 * per backend (the planner's time was a fifth of a new series' cost).
 */
typedef struct WritePlan
{
	SPIPlanPtr	plan;
	const char *sql;			/* made at the first use */
	int			nargs;
	Oid			types[3];
} WritePlan;

static WritePlan add_values_plan = {NULL, add_values_sql, 3, {TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID}};
static WritePlan add_hours_plan = {NULL, NULL, 3, {INT8ARRAYOID, TIMESTAMPTZARRAYOID, INT8ARRAYOID}};

static void
run_write_plan(WritePlan *wp, Datum *args)
{
	int			rc;

	if (wp->plan == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(wp->sql, wp->nargs, wp->types);

		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "series index statement could not be prepared (%s): %s",
				 SPI_result_code_string(SPI_result), wp->sql);
		wp->plan = plan;
	}
	rc = SPI_execute_plan(wp->plan, args, NULL, false, 0);
	if (rc < 0)
		elog(ERROR, "series index statement failed (%s): %s", SPI_result_code_string(rc), wp->sql);
}

void
series_index_write_pending(Pending *p)
{
	SeriesIndexAccess access;

	/* the statements see what the transaction's last command wrote */
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	SPI_connect();
	series_index_access_begin(&access);
	/* the statements probe indexes row by row, whatever the tables' statistics say */
	(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (hash_get_num_entries(p->values) > 0)
	{
		Datum		args[3];

		value_arrays(p->values, args);
		run_write_plan(&add_values_plan, args);
	}
	if (hash_get_num_entries(p->pairs) > 0 || hash_get_num_entries(p->series) > 0)
	{
		long		n = hash_get_num_entries(p->pairs);
		Datum	   *ids = palloc(Max(n, 1) * sizeof(Datum));
		Datum	   *hours = palloc(Max(n, 1) * sizeof(Datum));
		HASH_SEQ_STATUS seq;
		PendingPair *pp;
		int			i = 0;
		Datum		args[3];

		hash_seq_init(&seq, p->pairs);
		while ((pp = hash_seq_search(&seq)) != NULL)
		{
			ids[i] = Int64GetDatum(pp->pair.series_id);
			hours[i] = TimestampTzGetDatum(pp->pair.hour);
			i++;
		}
		args[0] = PointerGetDatum(construct_array(ids, i, INT8OID, 8, FLOAT8PASSBYVAL,
												  TYPALIGN_DOUBLE));
		args[1] = PointerGetDatum(construct_array(hours, i, TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL,
												  TYPALIGN_DOUBLE));
		args[2] = id_array(p->series);
		if (add_hours_plan.sql == NULL)
			add_hours_plan.sql = MemoryContextStrdup(TopMemoryContext,
													 series_index_label_hours_sql(add_pairs_ctes, added_hours));
		run_write_plan(&add_hours_plan, args);
	}
	series_index_access_end(&access);
	SPI_finish();
	PopActiveSnapshot();
}
