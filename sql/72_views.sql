-- More of Parca's views: the profiles of a selector one by one, a
-- function over time, and the sandwich of a function (src/query/;
-- docs/query.md).

-- A profile is what one ingestion wrote for one series: rows of that
-- series carrying the profile's time, to the microsecond.  Its id,
-- SERIES_ID@MICROSECONDS_SINCE_1970, names it exactly.
CREATE FUNCTION parca_profiles(selector text, start timestamptz, stop timestamptz)
    RETURNS TABLE("time" timestamptz, profile_id text, series_id bigint, series text, labels jsonb,
                  total bigint, samples bigint, duration_ns bigint)
    -- jit = off: see JIT in sql/70_query.sql
    LANGUAGE sql STABLE STRICT SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT x.time,
           x.series_id || '@' || (extract(epoch FROM x.time) * 1000000)::bigint,
           x.series_id, @extschema@.parca_labels_text(s.labels), s.labels,
           -- as parca_query reports it: samples:count in the period unit when known
           sum(CASE WHEN split_part(s.profile_type, ':', 2) = 'samples'
                     AND split_part(s.profile_type, ':', 3) = 'count' AND x.period > 0
                    THEN x.value * x.period ELSE x.value END)::bigint,
           count(*), max(x.duration)
    FROM parca.samples x JOIN @extschema@.parca_series(selector) s ON s.id = x.series_id
    WHERE x.time >= start AND x.time <= stop
      AND x.series_id = ANY (@extschema@.parca_series_ids(selector))
    GROUP BY x.series_id, x.time, s.labels
    ORDER BY x.time, x.series_id
$$;
COMMENT ON FUNCTION parca_profiles(text, timestamptz, timestamptz) IS
    'the profiles a selector picks in [start, stop], one row each, with the id parca_profile opens';

-- (jit = off, as parca_query: see JIT in sql/70_query.sql)
CREATE FUNCTION parca_profile(profile_id text) RETURNS profile
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT SET jit = off;
COMMENT ON FUNCTION parca_profile(text) IS
    'one profile on its own, by the id parca_profiles lists (SERIES_ID@MICROSECONDS_SINCE_1970)';

-- The parca_top rows of the functions whose name matches, without naming
-- and ranking the others (src/query/top.c): what parca_function_range reads
-- of each bucket.
CREATE FUNCTION parca_function_values(profile profile, function_name text, match text DEFAULT 'equal')
    RETURNS TABLE(function text, flat bigint, cum bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION parca_function_values(profile, text, text) IS
    'flat and cum of the functions whose name matches (equal, contains, starts_with, or their negations), as parca_top gives them';

-- parca_function_range's rows (in no order), read in one pass over the
-- range's rows where the caller may read them directly
-- (src/query/function_range.c): per bucket that parca_query_range lists
-- (sum_hours: the hours it reads from parca.profiles_hourly,
-- listed_hours: those with sums of the selector's series) and matching
-- function found in any; one row of NULLs where the rows cannot be read
-- directly (row-level security, rights).
CREATE FUNCTION parca.function_range_scan(selector text, start timestamptz, stop timestamptz,
                                          step interval, origin timestamptz, function_name text,
                                          match text, sum_hours timestamptz[],
                                          listed_hours timestamptz[])
    RETURNS TABLE("time" timestamptz, function text, flat bigint, cum bigint, total bigint)
    AS 'MODULE_PATHNAME', 'parca_function_range_scan' LANGUAGE C STABLE STRICT SET jit = off;

-- A function over time: per step bucket (aligned as in parca_query_range)
-- the flat and cum of each function whose name matches, from the bucket's
-- merged profile (what parca_query gives over exactly the bucket's
-- samples, so from rollups where it can), and the bucket's total.  A
-- matching function absent from a bucket has 0 there.  The range's rows
-- are read once, each going to its bucket (parca.function_range_scan);
-- where they cannot be read directly, each bucket is merged on its own.
CREATE FUNCTION parca_function_range(selector text, start timestamptz, stop timestamptz, step interval,
                                     function_name text, match text DEFAULT 'equal')
    RETURNS TABLE("time" timestamptz, function text, flat bigint, cum bigint, total bigint)
    -- jit = off: see JIT in sql/70_query.sql
    LANGUAGE plpgsql STABLE STRICT SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
    ids bigint[];
    origin timestamptz := CASE WHEN isfinite(start) THEN start ELSE '2000-01-01' END;
    sum_hours timestamptz[];
    listed_hours timestamptz[];
    scanned boolean;
    times timestamptz[];
    functions text[];
    flats bigint[];
    cums bigint[];
    totals bigint[];
BEGIN
    IF match NOT IN ('equal', 'not_equal', 'contains', 'not_contains', 'starts_with', 'not_starts_with') THEN
        RAISE EXCEPTION 'unknown match %', parca.message_quote(match)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'One of equal, not_equal, contains, not_contains, starts_with, not_starts_with.';
    END IF;
    PERFORM parca.range_arguments(step, NULL);
    -- the hours parca_query_range reads from their sums, as it reads them
    SELECT array_agg(s.id) INTO ids FROM @extschema@.parca_series(selector) s;
    SELECT coalesce(array_agg(h.hour) FILTER (WHERE h.series_id IS NULL), '{}'),
           coalesce(array_agg(DISTINCT h.hour) FILTER (WHERE h.series_id IS NOT NULL), '{}')
        INTO sum_hours, listed_hours
        FROM parca.range_hours(ids, start, stop, step, origin) h;
    SELECT bool_and(s.time IS NOT NULL), array_agg(s.time), array_agg(s.function),
           array_agg(s.flat), array_agg(s.cum), array_agg(s.total)
        INTO scanned, times, functions, flats, cums, totals
        FROM parca.function_range_scan(selector, start, stop, step, origin, function_name, match,
                                       sum_hours, listed_hours) s;
    IF scanned IS NOT FALSE THEN
        RETURN QUERY SELECT * FROM unnest(times, functions, flats, cums, totals) ORDER BY 1, 2;
        RETURN;
    END IF;
    RETURN QUERY
    WITH buckets AS MATERIALIZED (
        -- the buckets with profiles, as parca_query_range finds them (from
        -- the sums of rolled-up hours where it can)
        SELECT r.time AS b FROM @extschema@.parca_query_range(selector, start, stop, step, '{}') r
    ), tops AS MATERIALIZED (
        -- each bucket's profile is merged once (OFFSET 0 keeps the planner
        -- from copying the call into each use) and never kept: only its
        -- total and the matching functions' rows are (f NULL: none)
        SELECT k.b, q.total, t.function AS f, t.flat, t.cum
        FROM buckets k
        CROSS JOIN LATERAL (
            SELECT x.p, @extschema@.parca_profile_total(x.p) AS total
            FROM (-- the bucket [b, b + step) within [start, stop], both ends inclusive
                  SELECT @extschema@.parca_query(selector, greatest(k.b, start),
                                                 least(k.b + step - interval '1 microsecond', stop)) AS p
                  OFFSET 0) x
            OFFSET 0) q
        LEFT JOIN LATERAL @extschema@.parca_function_values(q.p, function_name, match) t ON true
    ), totals AS (
        SELECT DISTINCT tops.b, tops.total FROM tops
    )
    SELECT k.b, n.f, coalesce(t.flat, 0), coalesce(t.cum, 0), k.total
    FROM totals k CROSS JOIN (SELECT DISTINCT tops.f FROM tops WHERE tops.f IS NOT NULL) n
         LEFT JOIN tops t ON t.b = k.b AND t.f = n.f
    ORDER BY 1, 2;
END
$$;
COMMENT ON FUNCTION parca_function_range(text, timestamptz, timestamptz, interval, text, text) IS
    'per step: flat and cum of the functions whose name matches (equal, contains, starts_with, or their negations)';

-- The sandwich view of one function: two flame graph data frames.
CREATE FUNCTION parca_sandwich_callers(profile profile, function text, max_nodes integer DEFAULT 0,
                                       node_trim_threshold double precision DEFAULT 0)
    RETURNS TABLE(level integer, value bigint, self bigint, label text)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;
COMMENT ON FUNCTION parca_sandwich_callers(profile, text, integer, double precision) IS
    'the stacks through a function, inverted and rooted at it: who calls it (each stack once)';
CREATE FUNCTION parca_sandwich_callees(profile profile, function text, max_nodes integer DEFAULT 0,
                                       node_trim_threshold double precision DEFAULT 0)
    RETURNS TABLE(level integer, value bigint, self bigint, label text)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;
COMMENT ON FUNCTION parca_sandwich_callees(profile, text, integer, double precision) IS
    'the stacks through a function, rooted at it: what it calls (each stack once)';

-- Stack filters as Parca's FilterCriteria: [{"field": ..., "match": ...,
-- "value": ...}, ...], all applying.
CREATE FUNCTION parca_filter(profile profile, filters jsonb) RETURNS profile
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION parca_filter(profile, jsonb) IS
    'the stacks whose frames pass every filter (field function, file, binary or address; match equal, contains, starts_with or not_...)';

-- What a filter left and what it took: total, kept and filtered-out totals.
CREATE FUNCTION parca_filter_totals(profile profile, filters jsonb)
    RETURNS TABLE(total bigint, kept bigint, filtered_out bigint)
    LANGUAGE sql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
    SELECT t, k, t - k
    FROM (SELECT @extschema@.parca_profile_total(profile) AS t,
                 @extschema@.parca_profile_total(@extschema@.parca_filter(profile, filters)) AS k) s
$$;
COMMENT ON FUNCTION parca_filter_totals(profile, jsonb) IS
    'the total of a profile, of what the filters keep, and of what they filter out';

-- The call graph, trimmed like go tool pprof -nodefraction/-edgefraction
-- (its defaults): the nodes and edges frames of Grafana's Node graph
-- panel, and DOT text for Graphviz.
CREATE FUNCTION parca_callgraph_nodes(profile profile, node_fraction double precision DEFAULT 0.005,
                                      edge_fraction double precision DEFAULT 0.001)
    RETURNS TABLE(id text, title text, mainstat bigint, secondarystat bigint,
                  "detail__flat_percent" double precision, "detail__cum_percent" double precision)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;
COMMENT ON FUNCTION parca_callgraph_nodes(profile, double precision, double precision) IS
    'the call graph''s functions: flat (mainstat) and cum (secondarystat), as go tool pprof -dot trims them';
CREATE FUNCTION parca_callgraph_edges(profile profile, node_fraction double precision DEFAULT 0.005,
                                      edge_fraction double precision DEFAULT 0.001)
    RETURNS TABLE(id text, source text, target text, mainstat bigint, residual boolean)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;
COMMENT ON FUNCTION parca_callgraph_edges(profile, double precision, double precision) IS
    'the call graph''s calls: caller (source), callee (target) and weight (mainstat); residual when trimmed frames were between';
CREATE FUNCTION parca_callgraph_dot(profile profile, node_fraction double precision DEFAULT 0.005,
                                    edge_fraction double precision DEFAULT 0.001)
    RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;
COMMENT ON FUNCTION parca_callgraph_dot(profile, double precision, double precision) IS
    'the call graph in Graphviz''s DOT language';
