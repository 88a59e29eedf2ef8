-- PostgreSQL backends profiled by statement (docs/postgres.md): the layout
-- parca-agent reads backends with (src/installation/postgres_layout.c), and the
-- profiles' statements joined to pg_stat_statements.

-- The offsets of this server's PgBackendStatus and PGPROC fields the agent
-- reads, as this library was compiled against the server's headers, with
-- the executable's build id (the agent uses the layout for every process
-- of that executable), the data directory (the agent names the databases
-- and roles of the backends whose working directory it is) and the names
-- of BackendType's values.  Only parca_agent's members may call it: the
-- data directory is not for everyone.
CREATE FUNCTION parca_postgres_layout(
    OUT server_version_num integer, OUT build_id text, OUT data_directory text,
    OUT postmaster_pid integer, OUT st_procpid integer, OUT st_backend_type integer,
    OUT st_databaseid integer, OUT st_userid integer, OUT st_state integer,
    OUT st_query_id integer, OUT backend_status_size integer,
    OUT proc_lock_group_leader integer, OUT backend_types text[])
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION parca_postgres_layout() IS
    'the layout of this server''s backend status that parca-agent reads at sample time';
REVOKE EXECUTE ON FUNCTION parca_postgres_layout() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION parca_postgres_layout() TO parca_agent;

-- The wait events this server knows, by wait_event_info, with the names
-- pg_stat_activity gives them: how parca-agent names the pg_wait_event
-- label of the backends it reads with this server's layout.
CREATE FUNCTION parca_postgres_wait_events()
    RETURNS TABLE(wait_event_info bigint, wait_event_type text, wait_event text)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION parca_postgres_wait_events() IS
    'the wait events this server knows, by wait_event_info, as pg_stat_activity names them';

-- The statements the selector's samples in [start, stop] ran (their
-- pg_query_id label), heaviest first, with pg_stat_statements' text,
-- calls and total execution time when this database has the extension
-- (else those columns are NULL and the query column says why).  A statement is
-- matched by query id, database and user; the labels hold names for the
-- cluster the agent writes to and oids for others, and both are matched.
-- pg_stat_statements counts since its last reset, the samples over the
-- range: compare shares, not totals.
CREATE FUNCTION parca_postgres_statements(start timestamptz, stop timestamptz,
        selector text DEFAULT 'parca_agent:samples:count:cpu:nanoseconds:delta{}')
    RETURNS TABLE(query_id bigint, database text, user_name text, samples bigint,
                  sample_share double precision, calls bigint, total_exec_time double precision,
                  exec_time_share double precision, query text)
    LANGUAGE plpgsql STABLE STRICT SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
    pgss_schema name;
BEGIN
    SELECT n.nspname INTO pgss_schema
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pg_stat_statements';
    RETURN QUERY EXECUTE format($q$
        WITH sampled AS (
            SELECT (s.labels ->> 'pg_query_id')::bigint AS query_id,
                   s.labels ->> 'pg_database' AS database,
                   s.labels ->> 'pg_user' AS user_name,
                   sum(x.value)::bigint AS samples
              FROM parca.samples x JOIN parca.series s ON s.id = x.series_id
             WHERE x.time >= $1 AND x.time <= $2
               AND x.series_id = ANY (@extschema@.parca_series_ids($3))
               AND s.labels ? 'pg_query_id'
             GROUP BY 1, 2, 3),
        joined AS (
            SELECT p.*, st.calls, st.total_exec_time, st.query
              FROM sampled p
              LEFT JOIN LATERAL (%s) st ON true)
        SELECT j.query_id, j.database, j.user_name, j.samples,
               j.samples / sum(j.samples) OVER ()::double precision,
               j.calls, j.total_exec_time,
               j.total_exec_time / nullif(sum(j.total_exec_time) OVER (), 0),
               j.query
          FROM joined j
         ORDER BY j.samples DESC, j.query_id$q$,
        CASE WHEN pgss_schema IS NULL THEN
            'SELECT NULL::bigint AS calls, NULL::double precision AS total_exec_time,
                    ''(pg_stat_statements is not installed in this database)''::text AS query'
        ELSE format(
            'SELECT sum(t.calls)::bigint AS calls, sum(t.total_exec_time) AS total_exec_time,
                    min(t.query) AS query
               FROM %I.pg_stat_statements t
               JOIN pg_database d ON d.oid = t.dbid
               JOIN pg_roles r ON r.oid = t.userid
              WHERE t.queryid = p.query_id
                AND p.database IN (d.datname, t.dbid::text)
                AND p.user_name IN (r.rolname, t.userid::text)
             HAVING count(*) > 0', pgss_schema)
        END)
        USING start, stop, selector;
END
$$;
COMMENT ON FUNCTION parca_postgres_statements(timestamptz, timestamptz, text) IS
    'the statements PostgreSQL backends ran in the samples, heaviest first, joined to pg_stat_statements';
