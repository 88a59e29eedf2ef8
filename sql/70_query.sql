-- Querying profiles: selectors, merge, diff, icicle, top, flame graph SVG,
-- time series and discovery (src/query/; docs/query.md).
--
-- JIT: the functions that read parca.samples or its rollups run with
-- jit = off (a function's SET holds for the functions it calls too).  Their
-- rows' work is decoding and merging in C (columnar scans, parca_merge),
-- not the expressions JIT compiles, and their plans' estimates are
-- pessimistic (1000 rows from a set-returning function, 100 parts of a
-- multirange, each scanning its partitions), so that with PostgreSQL's
-- default thresholds a dashboard's call over three profiles spent 1.2 s
-- compiling (inlining and optimizing past jit_optimize_above_cost) for
-- 55 ms of work, and over a million raw rows still lost more to compiling
-- than JIT saved (docs/query.md).  A SET keeps a SQL function from being
-- inlined (its statements are planned with its arguments as parameters),
-- so these pin their search_path too (docs/security.md).

-- Whether a table is distributed by Citus (src/installation/citus.c): read through SQL
-- that Citus plans, never directly (docs/scale-out.md).
CREATE FUNCTION parca.is_citus_table(tbl regclass) RETURNS boolean
    AS 'MODULE_PATHNAME', 'parca_is_citus_table' LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- Planner support: a call whose selector does not depend on the row is
-- evaluated once per query (an InitPlan), not once per row.
CREATE FUNCTION parca_series_ids_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
CREATE FUNCTION parca_series_ids(selector text) RETURNS bigint[]
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE SUPPORT parca_series_ids_support;
COMMENT ON FUNCTION parca_series_ids(text) IS
    'ids of the series a selector such as memory:alloc_space:bytes:space:bytes{job="api"} matches';

CREATE FUNCTION parca_series(selector text DEFAULT '{}')
    RETURNS TABLE(id bigint, profile_type text, labels jsonb)
    LANGUAGE sql STABLE STRICT AS $$
    SELECT s.id, s.profile_type, s.labels FROM parca.series s
    WHERE s.id OPERATOR(pg_catalog.=) ANY (@extschema@.parca_series_ids(selector)) ORDER BY s.id
$$;
COMMENT ON FUNCTION parca_series(text) IS 'the series a selector matches';

CREATE FUNCTION parca_query(selector text, start timestamptz, stop timestamptz,
                            group_by text[] DEFAULT NULL,
                            keep_function text DEFAULT NULL, drop_function text DEFAULT NULL,
                            keep_binary text DEFAULT NULL, drop_binary text DEFAULT NULL)
    RETURNS profile
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE
    -- its scan feeds C code row by row: compiling the WHERE clause costs more than it saves
    -- (and see JIT above)
    SET jit = off;
COMMENT ON FUNCTION parca_query(text, timestamptz, timestamptz, text[], text, text, text, text) IS
    'merge the samples of the selected series in [start, stop] into one profile';

CREATE FUNCTION parca_diff(base profile, compared profile, absolute boolean DEFAULT false)
    RETURNS profile
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION parca_diff(profile, profile, boolean) IS
    'both profiles side by side (base scaled to the compared total unless absolute)';

CREATE FUNCTION parca_icicle(profile profile, max_nodes integer DEFAULT 0,
                             node_trim_threshold double precision DEFAULT 0)
    RETURNS TABLE(level integer, value bigint, self bigint, label text)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;
COMMENT ON FUNCTION parca_icicle(profile, integer, double precision) IS
    'the call tree in depth-first pre-order, the data frame of Grafana''s flame graph panel';

-- Grafana's panel draws a diff when the right columns exist, so only the
-- diff function has them; value and self are the base side.
CREATE FUNCTION parca_icicle_diff(profile profile, max_nodes integer DEFAULT 0,
                                  node_trim_threshold double precision DEFAULT 0)
    RETURNS TABLE(level integer, value bigint, self bigint,
                  "valueRight" bigint, "selfRight" bigint, label text)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;
COMMENT ON FUNCTION parca_icicle_diff(profile, integer, double precision) IS
    'the call tree of a diff, base side in value/self and compared side in valueRight/selfRight (Grafana''s diff flame graph)';

CREATE FUNCTION parca_top(profile profile)
    RETURNS TABLE(function text, file text, flat bigint, flat_percent double precision,
                  cum bigint, cum_percent double precision)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;
COMMENT ON FUNCTION parca_top(profile) IS 'the heaviest functions, as go tool pprof -top';

CREATE FUNCTION parca_flamegraph_svg(profile profile, title text DEFAULT NULL)
    RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;
COMMENT ON FUNCTION parca_flamegraph_svg(profile, text) IS
    'a self-contained interactive flame graph (click to zoom, search, tooltips)';

-- Discovery, for Grafana's variable queries.  Without a time range every
-- stored series counts; with one, only series with sample rows in the
-- hours (UTC) it meets.  They read the series index (sql/31_series_index.sql)
-- for callers who may read parca.series (and parca.samples) without
-- row-level security; others get what their own reads find, series with
-- sample rows within the range itself (src/query/discovery.c).  In C,
-- they still run with jit = off (see JIT above): the statements they run
-- read parca.samples where the index may not be read.
CREATE FUNCTION parca_profile_types(start timestamptz DEFAULT NULL, stop timestamptz DEFAULT NULL)
    RETURNS SETOF text
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE SET jit = off;
COMMENT ON FUNCTION parca_profile_types(timestamptz, timestamptz) IS
    'the stored profile types (with sample rows in the hours [start, stop] meets, if given)';

CREATE FUNCTION parca_labels(selector text DEFAULT '{}', start timestamptz DEFAULT NULL,
                             stop timestamptz DEFAULT NULL)
    RETURNS SETOF text
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE SET jit = off;
COMMENT ON FUNCTION parca_labels(text, timestamptz, timestamptz) IS
    'label names of the series a selector matches';

CREATE FUNCTION parca_label_values(label text, selector text DEFAULT '{}',
                                   start timestamptz DEFAULT NULL, stop timestamptz DEFAULT NULL)
    RETURNS SETOF text
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE SET jit = off;
COMMENT ON FUNCTION parca_label_values(text, text, timestamptz, timestamptz) IS
    'values of one label among the series a selector matches';

-- The label set of a series as text: {a="x", b="y"}.
CREATE FUNCTION parca_labels_text(labels jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT '{' OPERATOR(pg_catalog.||)
           coalesce(pg_catalog.string_agg(pg_catalog.format('%s=%s', key, pg_catalog.to_jsonb(value)),
                                          ', ' ORDER BY key), '')
           OPERATOR(pg_catalog.||) '}'
    FROM pg_catalog.jsonb_each_text(labels)
$$;

-- The checks of parca_query_range's and parca_function_range's step and
-- sum_by, made before anything runs: sum_by, or an error that names the
-- argument (src/query/range_arguments.c).
CREATE FUNCTION parca.range_arguments(step interval, sum_by text[]) RETURNS text[]
    AS 'MODULE_PATHNAME', 'parca_range_arguments' LANGUAGE C IMMUTABLE PARALLEL SAFE;

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

-- Time series for Grafana: per step bucket (aligned to start, or to
-- 2000-01-01 when start is -infinity) and series,
-- the total value (samples:count in the period unit when it is known) and, for delta types,
-- the value per second of profiled time.  With sum_by, series are summed
-- by those labels.  The rolled-up hours wholly within the range and
-- within one step are read from parca.profiles_hourly (the same sums, per
-- hour: parca.range_hours), the rest from raw rows, part by part.
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
CREATE FUNCTION parca_query_range(selector text, start timestamptz, stop timestamptz,
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
COMMENT ON FUNCTION parca_query_range(text, timestamptz, timestamptz, interval, text[]) IS
    'per step and series: total value and, for delta types, value per second';

-- A selector from parts, for dashboards (src/query/selector_build.c):
-- template variables are pasted into SQL string literals (which Grafana's
-- SQL datasource quotes), never into selector syntax.  The label matcher
-- matches exactly one of label_values (each escaped for the regex and
-- quoted for the selector); a NULL array, or a NULL element (Grafana's
-- "All", sent as NULL), means any value.  matchers is more selector text:
-- `job="api", pod!~"x-.*"`.  The profile type, the label name and the
-- matchers must be what their grammar allows, or it is an error.  An empty
-- profile type, or an empty list of values, selects nothing: the result is
-- NULL, and the query functions return nothing for it.
CREATE FUNCTION parca_selector(profile_type text, label text DEFAULT NULL,
                               label_values text[] DEFAULT NULL, matchers text DEFAULT '')
    RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION parca_selector(text, text, text[], text) IS
    'a selector from a profile type, one label with a list of values and more matchers, each value quoted';

-- The unit of the values parca_query returns for these arguments (the
-- third field of its profile type): for samples:count the period unit
-- when the samples in the range have a period (raw rows, or the rollups
-- parca_query reads: after parca.retention only they are left), else
-- count.  Cheap: it stops at the first sample with a period.  For
-- Grafana's unit.
CREATE FUNCTION parca_query_unit(selector text, start timestamptz, stop timestamptz)
    RETURNS text
    LANGUAGE sql STABLE STRICT SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT CASE
        WHEN count(DISTINCT s.profile_type) <> 1 THEN NULL
        WHEN split_part(min(s.profile_type), ':', 2) = 'samples'
             AND split_part(min(s.profile_type), ':', 3) = 'count'
        THEN CASE WHEN EXISTS (SELECT FROM parca.samples x
                               WHERE x.series_id = ANY (array_agg(s.id))
                                 AND x.time BETWEEN start AND stop AND x.period > 0)
                       OR parca.rollups_have_period(array_agg(s.id), start, stop)
                  THEN split_part(min(s.profile_type), ':', 5) ELSE 'count' END
        ELSE split_part(min(s.profile_type), ':', 3)
    END
    FROM @extschema@.parca_series(selector) s
$$;
COMMENT ON FUNCTION parca_query_unit(text, timestamptz, timestamptz) IS
    'the unit of the values parca_query returns for these arguments (nanoseconds, bytes, count, ...)';
