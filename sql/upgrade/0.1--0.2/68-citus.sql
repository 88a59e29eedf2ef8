-- Scale-out on Citus (docs/scale-out.md): the coordinator's half of a
-- distributed merge, as in sql/60_merge.sql.
CREATE FUNCTION parca.merge_profiles_transfn(internal, profile) RETURNS internal
    AS 'MODULE_PATHNAME', 'parca_merge_profiles_transfn' LANGUAGE C PARALLEL SAFE;
CREATE AGGREGATE parca.merge_profiles(profile profile) (
    SFUNC = parca.merge_profiles_transfn,
    STYPE = internal,
    FINALFUNC = parca_merge_finalfn,
    FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = parca_merge_combinefn,
    SERIALFUNC = parca_merge_serialfn,
    DESERIALFUNC = parca_merge_deserialfn,
    PARALLEL = SAFE
);


-- Whether a table is distributed by Citus (src/installation/citus.c): read through SQL
-- that Citus plans, never directly (docs/scale-out.md).
CREATE FUNCTION parca.is_citus_table(tbl regclass) RETURNS boolean
    AS 'MODULE_PATHNAME', 'parca_is_citus_table' LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- parca_query_range as in sql/70_query.sql: its statement on one server
-- moved into parca.query_range_local, and a branch for Citus.
CREATE FUNCTION parca.query_range_local(selector text, start timestamptz, stop timestamptz,
                                        step interval, sum_by text[])
    RETURNS TABLE("time" timestamptz, series text, labels jsonb, value double precision,
                  per_second double precision, profiles bigint)
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    WITH args AS (
        -- the arguments checked first: the hours below are read with them
        -- (sum_by read once, checked)
        SELECT parca.range_arguments(step, sum_by) AS sum_by
    ), sel AS (
        SELECT s.id, s.profile_type OPERATOR(pg_catalog.~~) '%:delta' AS is_delta,
               pg_catalog.split_part(s.profile_type, ':', 2) OPERATOR(pg_catalog.=) 'samples'
               AND pg_catalog.split_part(s.profile_type, ':', 3) OPERATOR(pg_catalog.=) 'count' AS scaled,
               CASE WHEN a.sum_by IS NULL THEN s.labels
                    ELSE (SELECT coalesce(pg_catalog.jsonb_object_agg(k, s.labels OPERATOR(pg_catalog.->) k), '{}')
                          FROM pg_catalog.unnest(a.sum_by) k WHERE s.labels OPERATOR(pg_catalog.?) k) END AS key
        FROM @extschema@.parca_series(selector) s, args a
    ), ids AS (
        -- (as arrays: the planner sees a few series, not a table of them)
        SELECT pg_catalog.array_agg(sel.id) AS id, pg_catalog.array_agg(sel.scaled) AS scaled FROM sel
    ), origin AS (
        SELECT CASE WHEN pg_catalog.isfinite(start) THEN start ELSE '2000-01-01' END AS o FROM args
    ), hours AS MATERIALIZED (
        SELECT h.* FROM origin, parca.range_hours((SELECT ids.id FROM ids), start, stop, step, origin.o) h
    ), raw_parts AS (
        -- [start, stop] less the hours read from their sums, each part as
        -- [lo, hi] (to the microsecond, as timestamps go)
        SELECT CASE WHEN pg_catalog.lower_inc(r) THEN pg_catalog.lower(r)
                    ELSE pg_catalog.lower(r) OPERATOR(pg_catalog.+) interval '1 microsecond' END AS lo,
               CASE WHEN pg_catalog.upper_inc(r) THEN pg_catalog.upper(r)
                    ELSE pg_catalog.upper(r) OPERATOR(pg_catalog.-) interval '1 microsecond' END AS hi
        FROM pg_catalog.unnest(
            pg_catalog.tstzmultirange(pg_catalog.tstzrange(start, stop, '[]'))
            OPERATOR(pg_catalog.-) (SELECT coalesce(pg_catalog.range_agg(pg_catalog.tstzrange(h.hour, h.hour OPERATOR(pg_catalog.+) interval '1 hour')),
                                                    '{}')
                                    FROM hours h WHERE h.series_id IS NULL)) r
        WHERE start OPERATOR(pg_catalog.<=) stop
    ), per_profile AS (
        -- (a part at a time: its bounds reach the scan of its partitions)
        SELECT x.* FROM raw_parts p CROSS JOIN LATERAL (
            SELECT pg_catalog.date_bin(step, x.time, (SELECT o FROM origin)) AS bucket,
                   x.series_id, x.time,
                   pg_catalog.sum(CASE WHEN s.scaled AND x.period OPERATOR(pg_catalog.>) 0  -- 0: unknown, the count stays
                                       THEN x.value OPERATOR(pg_catalog.*) x.period ELSE x.value END) AS v,
                   pg_catalog.max(x.duration) AS d
            FROM parca.samples x
            JOIN ROWS FROM (pg_catalog.unnest((SELECT ids.id FROM ids)),
                            pg_catalog.unnest((SELECT ids.scaled FROM ids))) AS s(id, scaled)
                ON s.id OPERATOR(pg_catalog.=) x.series_id
            WHERE x.time OPERATOR(pg_catalog.>=) p.lo AND x.time OPERATOR(pg_catalog.<=) p.hi
            GROUP BY 1, 2, 3) x
    ), per_part AS (
        SELECT p.bucket, p.series_id, pg_catalog.sum(p.v) AS v, pg_catalog.sum(p.d) AS d,
               pg_catalog.count(*) AS profiles
        FROM per_profile p
        GROUP BY p.bucket, p.series_id
        UNION ALL
        SELECT pg_catalog.date_bin(step, h.hour, (SELECT o FROM origin)), h.series_id, h.value, h.duration, h.profiles
        FROM hours h WHERE h.series_id IS NOT NULL
    ), per_series AS (
        SELECT p.bucket, sel.key, pg_catalog.sum(p.v) AS v, pg_catalog.sum(p.d) AS d,
               pg_catalog.bool_and(sel.is_delta) AS is_delta, pg_catalog.sum(p.profiles) AS profiles
        FROM per_part p JOIN sel ON sel.id OPERATOR(pg_catalog.=) p.series_id
        GROUP BY p.bucket, sel.key, p.series_id
    )
    SELECT p.bucket, @extschema@.parca_labels_text(p.key), p.key, pg_catalog.sum(p.v)::double precision,
           -- the aggregate runs whatever CASE decides: it must not divide by 0
           CASE WHEN pg_catalog.bool_and(p.is_delta AND p.d OPERATOR(pg_catalog.>) 0)
                THEN pg_catalog.sum(p.v::double precision OPERATOR(pg_catalog./) (p.d OPERATOR(pg_catalog./) 1e9))
                         FILTER (WHERE p.d OPERATOR(pg_catalog.>) 0) END,
           pg_catalog.sum(p.profiles)::bigint
    FROM per_series p
    GROUP BY p.bucket, p.key
    ORDER BY 1, 2
$$;

-- parca_query_range: that statement on one server; on Citus, the raw rows
-- summed per profile on the workers.
CREATE OR REPLACE FUNCTION parca_query_range(selector text, start timestamptz, stop timestamptz,
                                  step interval, sum_by text[] DEFAULT NULL)
    RETURNS TABLE("time" timestamptz, series text, labels jsonb, value double precision,
                  per_second double precision, profiles bigint)
    -- PL/pgSQL: Citus plans the statements of a SQL function with their
    -- parameters unbound, which it cannot distribute (docs/scale-out.md)
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
    sb text[];
    ids bigint[];
    scaled_ids bigint[];
BEGIN
    -- the arguments checked first, whatever reads the rows
    sb := parca.range_arguments(step, sum_by);
    IF parca.is_citus_table('parca.samples') THEN
        -- On Citus: the raw rows of the whole range (the rollups are not
        -- distributed yet), summed per profile on the workers (the group
        -- holds series_id, the distribution column), the rest here.
        SELECT pg_catalog.array_agg(s.id),
               pg_catalog.array_agg(s.id) FILTER (WHERE pg_catalog.split_part(s.profile_type, ':', 2) = 'samples'
                                                  AND pg_catalog.split_part(s.profile_type, ':', 3) = 'count')
        INTO ids, scaled_ids
        FROM @extschema@.parca_series(selector) s;
        RETURN QUERY
        WITH sel AS (
            SELECT s.id, s.profile_type OPERATOR(pg_catalog.~~) '%:delta' AS is_delta,
                   CASE WHEN sb IS NULL THEN s.labels
                        ELSE (SELECT coalesce(pg_catalog.jsonb_object_agg(k, s.labels OPERATOR(pg_catalog.->) k), '{}')
                              FROM pg_catalog.unnest(sb) k WHERE s.labels OPERATOR(pg_catalog.?) k) END AS key
            FROM @extschema@.parca_series(selector) s
        ), per_profile AS (
            SELECT pg_catalog.date_bin(step, x.time,
                                       CASE WHEN pg_catalog.isfinite(start) THEN start ELSE '2000-01-01' END) AS bucket,
                   x.series_id,
                   pg_catalog.sum(CASE WHEN x.series_id OPERATOR(pg_catalog.=) ANY (scaled_ids)
                                            AND x.period OPERATOR(pg_catalog.>) 0
                                       THEN x.value OPERATOR(pg_catalog.*) x.period ELSE x.value END) AS v,
                   pg_catalog.max(x.duration) AS d
            FROM parca.samples x
            WHERE x.series_id OPERATOR(pg_catalog.=) ANY (ids)
              AND x.time OPERATOR(pg_catalog.>=) start AND x.time OPERATOR(pg_catalog.<=) stop
            GROUP BY 1, 2, x.time
        ), per_series AS (
            SELECT p.bucket, sel.key, pg_catalog.sum(p.v) AS v, pg_catalog.sum(p.d) AS d,
                   pg_catalog.bool_and(sel.is_delta) AS is_delta, pg_catalog.count(*) AS profiles
            FROM per_profile p JOIN sel ON sel.id OPERATOR(pg_catalog.=) p.series_id
            GROUP BY p.bucket, sel.key, p.series_id
        )
        SELECT p.bucket, @extschema@.parca_labels_text(p.key), p.key, pg_catalog.sum(p.v)::double precision,
               CASE WHEN pg_catalog.bool_and(p.is_delta AND p.d OPERATOR(pg_catalog.>) 0)
                    THEN pg_catalog.sum(p.v::double precision OPERATOR(pg_catalog./) (p.d OPERATOR(pg_catalog./) 1e9))
                             FILTER (WHERE p.d OPERATOR(pg_catalog.>) 0) END,
               pg_catalog.sum(p.profiles)::bigint
        FROM per_series p
        GROUP BY p.bucket, p.key
        ORDER BY 1, 2;
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM parca.query_range_local(selector, start, stop, step, sum_by);
END
$$;
