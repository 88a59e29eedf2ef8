-- The metastore's garbage collection on Citus (docs/scale-out.md): the
-- references of the raw rows found on the workers' shards by SQL that
-- Citus distributes, and the ids nothing refers to deleted by id (Citus
-- does not join the reference tables with a table of this node).  And
-- parca_query_range's two paths (one server, Citus) select their series
-- and make their points with the same functions.

CREATE OR REPLACE FUNCTION parca_metastore_gc(
    OUT series bigint, OUT locations bigint, OUT functions bigint, OUT mappings bigint)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    -- writers wait while it holds parca.samples: it does not wait long for it
    SET lock_timeout = '10s'
AS $$
DECLARE
    p record;
    kept_from timestamptz;
    hours bigint;
    ids bigint[];
    -- on Citus the raw rows are in shards on the workers: their references
    -- are found there, by SQL that Citus distributes (docs/scale-out.md)
    on_citus boolean := parca.is_citus_table('parca.samples');
BEGIN
    -- no writer in flight from here on: a content version read now
    -- stays true until this transaction ends (Citus takes the lock on
    -- every node with its metadata too)
    LOCK TABLE parca.samples IN SHARE MODE;
    -- the rollups' stacks and series too (sql/46_rollups.sql): they
    -- outlive the raw rows
    CREATE TEMP TABLE parca_gc_parts ON COMMIT DROP AS
        SELECT r.partition, r.raw, a.amname FROM (
            SELECT partition, true AS raw FROM parca.partition_ranges()
            UNION ALL
            SELECT partition, false FROM parca.partition_ranges('parca.samples_hourly')
            UNION ALL
            SELECT partition, false FROM parca.partition_ranges('parca.samples_daily')
            UNION ALL
            SELECT partition, false FROM parca.partition_ranges('parca.samples_weekly')) r
        JOIN pg_class c ON c.oid = r.partition JOIN pg_am a ON a.oid = c.relam
        WHERE NOT (r.raw AND on_citus);
    DELETE FROM parca.partition_references_cache c
    WHERE NOT EXISTS (SELECT FROM parca_gc_parts g WHERE g.raw AND g.partition = c.partition);
    FOR p IN SELECT g.partition, parca.partition_content_version(g.partition) AS version
             FROM parca_gc_parts g WHERE g.raw AND g.amname = 'parca_columnar'
    LOOP
        IF NOT EXISTS (SELECT FROM parca.partition_references_cache c
                       WHERE c.partition = p.partition AND c.version = p.version) THEN
            DELETE FROM parca.partition_references_cache c WHERE c.partition = p.partition;
            INSERT INTO parca.partition_references_cache
            SELECT p.partition, p.version,
                   coalesce(array_agg(r.id) FILTER (WHERE r.kind = 's'), '{}'),
                   coalesce(array_agg(r.id) FILTER (WHERE r.kind = 'l'), '{}')
            FROM parca.partition_references(ARRAY[p.partition]) r;
        END IF;
    END LOOP;
    CREATE TEMP TABLE parca_gc_refs (kind "char", id bigint) ON COMMIT DROP;
    INSERT INTO parca_gc_refs
    SELECT DISTINCT 's'::"char", unnest(c.series) FROM parca.partition_references_cache c
    UNION ALL
    SELECT DISTINCT 'l'::"char", unnest(c.locations) FROM parca.partition_references_cache c;
    IF on_citus THEN
        -- each shard's series, and the locations of its distinct stacks
        -- (a group that holds series_id: each shard makes its own)
        INSERT INTO parca_gc_refs SELECT 's', x.series_id FROM parca.samples x GROUP BY x.series_id;
        INSERT INTO parca_gc_refs
        SELECT DISTINCT 'l'::"char", l
        FROM (SELECT x.stack FROM parca.samples x GROUP BY x.series_id, x.stack) x,
             unnest(@extschema@.parca_stack_location_ids(x.stack)) l;
    END IF;
    -- the rollups are read whole, not through the cache: their writer (the
    -- maintenance worker, parca_rollup_hours) is not held off by the lock
    -- above, so a content version read here could count rows this
    -- snapshot does not see (their stacks are those of raw rows that
    -- this snapshot sees: the writer holds the raw partitions it reads
    -- until it commits)
    INSERT INTO parca_gc_refs
    SELECT * FROM parca.partition_references(ARRAY(
        SELECT g.partition FROM parca_gc_parts g WHERE NOT g.raw AND g.amname = 'parca_columnar'));
    FOR p IN SELECT g.partition FROM parca_gc_parts g WHERE g.amname <> 'parca_columnar'
    LOOP
        -- a partition someone rewrote as heap: read its rows
        EXECUTE format('INSERT INTO parca_gc_refs SELECT DISTINCT ''s'', series_id FROM %s', p.partition);
        EXECUTE format('INSERT INTO parca_gc_refs SELECT DISTINCT ''l'', l
                        FROM %s, unnest(@extschema@.parca_stack_location_ids(stack)) l', p.partition);
    END LOOP;
    CREATE INDEX ON parca_gc_refs (kind, id);
    ANALYZE parca_gc_refs;

    -- The ids nothing refers to are found in statements of their own, and
    -- then deleted by id: on Citus the metastore's tables are reference
    -- tables, and Citus does not join them with parca_gc_refs, a table of
    -- this node.  (A writer that could name a new id waits for the lock.)
    -- (the series index's trigger drops their label values and hours)
    ids := ARRAY(SELECT s.id FROM parca.series s);
    ids := ARRAY(SELECT u.id FROM unnest(ids) u(id)
                 WHERE NOT EXISTS (SELECT FROM parca_gc_refs r WHERE r.kind = 's' AND r.id = u.id));
    DELETE FROM parca.series s USING unnest(ids) u(id) WHERE s.id = u.id;
    GET DIAGNOSTICS series = ROW_COUNT;
    -- the series index's hours before the oldest raw row kept: the
    -- partitions of their rows were dropped (sql/30_metastore.sql)
    kept_from := least((SELECT min(r.range_start) FROM parca.partition_ranges() r WHERE NOT r.is_default),
                       (SELECT parca.series_hour(min(x.time)) FROM parca.samples_default x));
    DELETE FROM parca.series_hours WHERE hour < kept_from;
    GET DIAGNOSTICS hours = ROW_COUNT;
    DELETE FROM parca.label_hours WHERE hour < kept_from;
    ids := ARRAY(SELECT l.id FROM parca.locations l);
    ids := ARRAY(SELECT u.id FROM unnest(ids) u(id)
                 WHERE NOT EXISTS (SELECT FROM parca_gc_refs r WHERE r.kind = 'l' AND r.id = u.id));
    DELETE FROM parca.locations l USING unnest(ids) u(id) WHERE l.id = u.id;
    GET DIAGNOSTICS locations = ROW_COUNT;
    DELETE FROM parca.functions f
    WHERE NOT EXISTS (SELECT FROM parca.locations l, unnest(l.function_ids) u(fid) WHERE u.fid = f.id);
    GET DIAGNOSTICS functions = ROW_COUNT;
    DELETE FROM parca.mappings m
    WHERE NOT EXISTS (SELECT FROM parca.locations l WHERE l.mapping_id = m.id);
    GET DIAGNOSTICS mappings = ROW_COUNT;

    -- (the caches of the series index's hours too)
    IF series + locations + functions + mappings + hours > 0 THEN
        PERFORM parca.metastore_invalidate();
    END IF;
    IF series + locations + functions + mappings > 0 THEN
        PERFORM nextval('parca.metastore_generation');
        RAISE LOG 'parca: metastore garbage collection removed % series, % locations, % functions, % mappings',
            series, locations, functions, mappings;
    END IF;
    DROP TABLE parca_gc_refs, parca_gc_parts;
END
$$;

DROP FUNCTION parca.range_points(parca.range_series[]);
DROP TYPE parca.range_series;

-- parca_query_range's series (both of its paths, below, start here): those
-- the selector matches, whether each is of a delta type, whether its
-- samples:count values are reported in the period unit (scaled), and the
-- labels its points are summed by (key: all of them, or those of sum_by).
CREATE TYPE parca.range_selected AS (id bigint, is_delta boolean, scaled boolean, key jsonb);
CREATE FUNCTION parca.range_select(selector text, sum_by text[]) RETURNS SETOF parca.range_selected
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH args AS MATERIALIZED (
        -- sum_by checked here too (at most 64 label names): the function
        -- is callable by itself (the step checked with it is not its own)
        SELECT parca.range_arguments(interval '1 hour', sum_by) AS sum_by
    )
    SELECT s.id, s.profile_type OPERATOR(pg_catalog.~~) '%:delta',
           pg_catalog.split_part(s.profile_type, ':', 2) OPERATOR(pg_catalog.=) 'samples'
           AND pg_catalog.split_part(s.profile_type, ':', 3) OPERATOR(pg_catalog.=) 'count',
           CASE WHEN a.sum_by IS NULL THEN s.labels
                ELSE (SELECT coalesce(pg_catalog.jsonb_object_agg(k, s.labels OPERATOR(pg_catalog.->) k), '{}')
                      FROM pg_catalog.unnest(a.sum_by) k WHERE s.labels OPERATOR(pg_catalog.?) k) END
    FROM args a, @extschema@.parca_series(selector) s
$$;

-- parca_query_range's points (both of its paths end here), from the sums
-- per step and series of the parts of its range (raw rows, rolled-up
-- hours) of the series selected: per step and label set (key), the sum of
-- the values, the rate where every series is a delta profile type with
-- durations, and the profiles.
CREATE TYPE parca.range_part AS (bucket timestamptz, series_id bigint, value numeric, duration numeric,
                                 profiles bigint);
CREATE FUNCTION parca.range_points(selected parca.range_selected[], parts parca.range_part[])
    RETURNS TABLE("time" timestamptz, series text, labels jsonb, value double precision,
                  per_second double precision, profiles bigint)
    LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH per_series AS (
        SELECT p.bucket, s.key, pg_catalog.sum(p.value) AS value, pg_catalog.sum(p.duration) AS duration,
               pg_catalog.bool_and(s.is_delta) AS is_delta, pg_catalog.sum(p.profiles) AS profiles
        FROM pg_catalog.unnest(parts) p JOIN pg_catalog.unnest(selected) s ON s.id OPERATOR(pg_catalog.=) p.series_id
        GROUP BY p.bucket, s.key, p.series_id
    )
    SELECT p.bucket, @extschema@.parca_labels_text(p.key), p.key, pg_catalog.sum(p.value)::double precision,
           -- the aggregate runs whatever CASE decides: it must not divide by 0
           CASE WHEN pg_catalog.bool_and(p.is_delta AND p.duration OPERATOR(pg_catalog.>) 0)
                THEN pg_catalog.sum(p.value::double precision OPERATOR(pg_catalog./) (p.duration OPERATOR(pg_catalog./) 1e9))
                         FILTER (WHERE p.duration OPERATOR(pg_catalog.>) 0) END,
           pg_catalog.sum(p.profiles)::bigint
    FROM per_series p
    GROUP BY p.bucket, p.key
    ORDER BY 1, 2
$$;

CREATE OR REPLACE FUNCTION parca.query_range_local(selector text, start timestamptz, stop timestamptz,
                                        step interval, sum_by text[])
    RETURNS TABLE("time" timestamptz, series text, labels jsonb, value double precision,
                  per_second double precision, profiles bigint)
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    WITH args AS (
        -- the arguments checked first: the hours below are read with them
        -- (sum_by read once, checked)
        SELECT parca.range_arguments(step, sum_by) AS sum_by
    ), sel AS (
        SELECT s.* FROM args a, parca.range_select(selector, a.sum_by) s
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
    )
    SELECT r.* FROM parca.range_points(ARRAY(SELECT s::parca.range_selected FROM sel s),
                                       ARRAY(SELECT p::parca.range_part FROM per_part p)) r
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
    DECLARE
        selected parca.range_selected[];
        origin timestamptz;
        rolled timestamptz[];
        raw tstzmultirange;
        h_bucket timestamptz[];
        h_series bigint[];
        h_value numeric[];
        h_duration numeric[];
        h_profiles bigint[];
    BEGIN
        -- On Citus: the hours kept in the rollups (coordinator-local
        -- tables) read from there, as on one server; the raw rows of the
        -- rest of the range summed per profile on the workers (the group
        -- holds series_id, the distribution column), the rest here.
        selected := ARRAY(SELECT s FROM parca.range_select(selector, sb) s);
        SELECT pg_catalog.array_agg(s.id), pg_catalog.array_agg(s.id) FILTER (WHERE s.scaled)
        INTO ids, scaled_ids
        FROM pg_catalog.unnest(selected) s;
        origin := CASE WHEN pg_catalog.isfinite(start) THEN start ELSE '2000-01-01' END;
        SELECT pg_catalog.array_agg(h.hour) FILTER (WHERE h.series_id IS NULL),
               pg_catalog.array_agg(pg_catalog.date_bin(step, h.hour, origin)) FILTER (WHERE h.series_id IS NOT NULL),
               pg_catalog.array_agg(h.series_id) FILTER (WHERE h.series_id IS NOT NULL),
               pg_catalog.array_agg(h.value) FILTER (WHERE h.series_id IS NOT NULL),
               pg_catalog.array_agg(h.duration) FILTER (WHERE h.series_id IS NOT NULL),
               pg_catalog.array_agg(h.profiles) FILTER (WHERE h.series_id IS NOT NULL)
        INTO rolled, h_bucket, h_series, h_value, h_duration, h_profiles
        FROM parca.range_hours(ids, start, stop, step, origin) h;
        raw := pg_catalog.tstzmultirange(pg_catalog.tstzrange(start, stop, '[]'))
               OPERATOR(pg_catalog.-) (SELECT coalesce(pg_catalog.range_agg(pg_catalog.tstzrange(h, h OPERATOR(pg_catalog.+) interval '1 hour')), '{}')
                                       FROM pg_catalog.unnest(rolled) h);
        RETURN QUERY
        WITH per_profile AS (
            SELECT pg_catalog.date_bin(step, x.time, origin) AS bucket, x.series_id,
                   pg_catalog.sum(CASE WHEN x.series_id OPERATOR(pg_catalog.=) ANY (scaled_ids)
                                            AND x.period OPERATOR(pg_catalog.>) 0
                                       THEN x.value OPERATOR(pg_catalog.*) x.period ELSE x.value END) AS v,
                   pg_catalog.max(x.duration) AS d
            FROM parca.samples x
            WHERE x.series_id OPERATOR(pg_catalog.=) ANY (ids)
              AND x.time OPERATOR(pg_catalog.>=) start AND x.time OPERATOR(pg_catalog.<=) stop
              AND raw OPERATOR(pg_catalog.@>) x.time
            GROUP BY 1, 2, x.time
        ), per_part AS (
            SELECT p.bucket, p.series_id, pg_catalog.sum(p.v) AS v, pg_catalog.sum(p.d) AS d,
                   pg_catalog.count(*) AS profiles
            FROM per_profile p
            GROUP BY p.bucket, p.series_id
            UNION ALL
            SELECT * FROM ROWS FROM (pg_catalog.unnest(h_bucket), pg_catalog.unnest(h_series),
                                     pg_catalog.unnest(h_value), pg_catalog.unnest(h_duration),
                                     pg_catalog.unnest(h_profiles))
        )
        SELECT r.* FROM parca.range_points(selected, ARRAY(SELECT p::parca.range_part FROM per_part p)) r;
        RETURN;
    END;
    END IF;
    RETURN QUERY SELECT * FROM parca.query_range_local(selector, start, stop, step, sum_by);
END
$$;
