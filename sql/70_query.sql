-- Querying profiles: selectors, merge, diff, icicle, top, flame graph SVG,
-- time series and discovery (src/query/; docs/query.md).

CREATE FUNCTION parca_series_ids(selector text) RETURNS bigint[]
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION parca_series_ids(text) IS
    'ids of the series a selector such as memory:alloc_space:bytes:space:bytes{job="api"} matches';

CREATE FUNCTION parca_series(selector text DEFAULT '{}')
    RETURNS TABLE(id bigint, profile_type text, labels jsonb)
    LANGUAGE sql STABLE STRICT AS $$
    SELECT s.id, s.profile_type, s.labels FROM parca.series s
    WHERE s.id = ANY (parca_series_ids(selector)) ORDER BY s.id
$$;
COMMENT ON FUNCTION parca_series(text) IS 'the series a selector matches';

CREATE FUNCTION parca_query(selector text, start timestamptz, stop timestamptz,
                            group_by text[] DEFAULT NULL,
                            keep_function text DEFAULT NULL, drop_function text DEFAULT NULL,
                            keep_binary text DEFAULT NULL, drop_binary text DEFAULT NULL)
    RETURNS profile
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE
    -- its scan feeds C code row by row: compiling the WHERE clause costs more than it saves
    SET jit = off;
COMMENT ON FUNCTION parca_query(text, timestamptz, timestamptz, text[], text, text, text, text) IS
    'merge the samples of the selected series in [start, stop] into one profile';

CREATE FUNCTION parca_diff(base profile, compared profile, absolute boolean DEFAULT false)
    RETURNS profile
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION parca_diff(profile, profile, boolean) IS
    'both profiles side by side (base scaled to the compared total unless absolute)';

CREATE FUNCTION parca_icicle(profile profile, max_nodes integer DEFAULT 0)
    RETURNS TABLE(level integer, value bigint, self bigint,
                  "valueRight" bigint, "selfRight" bigint, label text)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;
COMMENT ON FUNCTION parca_icicle(profile, integer) IS
    'the call tree in depth-first pre-order, the data frame of Grafana''s flame graph panel';

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
-- stored series counts; with one, only series with samples in it.
CREATE FUNCTION parca_profile_types(start timestamptz DEFAULT NULL, stop timestamptz DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE sql STABLE AS $$
    SELECT DISTINCT s.profile_type FROM parca.series s
    WHERE start IS NULL OR stop IS NULL
       OR s.id IN (SELECT x.series_id FROM parca.samples x WHERE x.time BETWEEN start AND stop)
    ORDER BY 1
$$;
COMMENT ON FUNCTION parca_profile_types(timestamptz, timestamptz) IS
    'the stored profile types (with samples in [start, stop] if given)';

CREATE FUNCTION parca_labels(selector text DEFAULT '{}', start timestamptz DEFAULT NULL,
                             stop timestamptz DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE sql STABLE AS $$
    SELECT DISTINCT k FROM parca_series(coalesce(selector, '{}')) s, jsonb_object_keys(s.labels) k
    WHERE start IS NULL OR stop IS NULL
       OR s.id IN (SELECT x.series_id FROM parca.samples x WHERE x.time BETWEEN start AND stop)
    ORDER BY 1
$$;
COMMENT ON FUNCTION parca_labels(text, timestamptz, timestamptz) IS
    'label names of the series a selector matches';

CREATE FUNCTION parca_label_values(label text, selector text DEFAULT '{}',
                                   start timestamptz DEFAULT NULL, stop timestamptz DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE sql STABLE AS $$
    SELECT DISTINCT s.labels->>label FROM parca_series(coalesce(selector, '{}')) s
    WHERE s.labels ? label
      AND (start IS NULL OR stop IS NULL
           OR s.id IN (SELECT x.series_id FROM parca.samples x WHERE x.time BETWEEN start AND stop))
    ORDER BY 1
$$;
COMMENT ON FUNCTION parca_label_values(text, text, timestamptz, timestamptz) IS
    'values of one label among the series a selector matches';

-- The label set of a series as text: {a="x", b="y"}.
CREATE FUNCTION parca_labels_text(labels jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT '{' || coalesce(string_agg(format('%s=%s', key, to_jsonb(value)), ', ' ORDER BY key), '') || '}'
    FROM jsonb_each_text(labels)
$$;

-- Time series for Grafana: per step bucket (aligned to start, or to
-- 2000-01-01 when start is -infinity) and series,
-- the total value (samples:count in the period unit) and, for delta types,
-- the value per second of profiled time.  With sum_by, series are summed
-- by those labels.
CREATE FUNCTION parca_query_range(selector text, start timestamptz, stop timestamptz,
                                  step interval, sum_by text[] DEFAULT NULL)
    RETURNS TABLE("time" timestamptz, series text, labels jsonb, value double precision,
                  per_second double precision, profiles bigint)
    LANGUAGE sql STABLE AS $$
    WITH sel AS (
        SELECT s.id, s.profile_type,
               CASE WHEN sum_by IS NULL THEN s.labels
                    ELSE (SELECT coalesce(jsonb_object_agg(k, s.labels->k), '{}')
                          FROM unnest(sum_by) k WHERE s.labels ? k) END AS key
        FROM parca_series(selector) s
    ), per_profile AS (
        SELECT date_bin(step, x.time, CASE WHEN isfinite(start) THEN start ELSE '2000-01-01' END) AS bucket, sel.key, x.series_id, x.time,
               sum(CASE WHEN split_part(sel.profile_type, ':', 2) = 'samples'
                         AND split_part(sel.profile_type, ':', 3) = 'count'
                        THEN x.value * x.period ELSE x.value END) AS v,
               max(x.duration) AS d,
               bool_or(sel.profile_type LIKE '%:delta') AS is_delta
        FROM parca.samples x JOIN sel ON sel.id = x.series_id
        WHERE x.time BETWEEN start AND stop
        GROUP BY 1, 2, 3, 4
    ), per_series AS (
        SELECT p.bucket, p.key, sum(p.v) AS v, sum(p.d) AS d, bool_and(p.is_delta) AS is_delta,
               count(*) AS profiles
        FROM per_profile p
        GROUP BY p.bucket, p.key, p.series_id
    )
    SELECT p.bucket, parca_labels_text(p.key), p.key, sum(p.v)::double precision,
           CASE WHEN bool_and(p.is_delta AND p.d > 0)
                THEN sum(p.v::double precision / (p.d / 1e9)) END,
           sum(p.profiles)::bigint
    FROM per_series p
    GROUP BY p.bucket, p.key
    ORDER BY 1, 2
$$;
COMMENT ON FUNCTION parca_query_range(text, timestamptz, timestamptz, interval, text[]) IS
    'per step and series: total value and, for delta types, value per second';
