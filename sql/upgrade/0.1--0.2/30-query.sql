-- Queries: names qualified, planner support, the Grafana diff flame graph.


CREATE FUNCTION parca_series_ids_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT;

ALTER FUNCTION parca_series_ids(text) PARALLEL SAFE SUPPORT parca_series_ids_support;

CREATE OR REPLACE FUNCTION parca_series(selector text DEFAULT '{}')
    RETURNS TABLE(id bigint, profile_type text, labels jsonb)
    LANGUAGE sql STABLE STRICT AS $$
    SELECT s.id, s.profile_type, s.labels FROM parca.series s
    WHERE s.id OPERATOR(pg_catalog.=) ANY (@extschema@.parca_series_ids(selector)) ORDER BY s.id
$$;

-- parca_icicle loses the diff columns: a new result type.
DROP FUNCTION parca_icicle(profile, integer);

CREATE FUNCTION parca_icicle(profile profile, max_nodes integer DEFAULT 0,
                             node_trim_threshold double precision DEFAULT 0)
    RETURNS TABLE(level integer, value bigint, self bigint, label text)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;

COMMENT ON FUNCTION parca_icicle(profile, integer, double precision) IS
    'the call tree in depth-first pre-order, the data frame of Grafana''s flame graph panel';

CREATE FUNCTION parca_icicle_diff(profile profile, max_nodes integer DEFAULT 0,
                                  node_trim_threshold double precision DEFAULT 0)
    RETURNS TABLE(level integer, value bigint, self bigint,
                  "valueRight" bigint, "selfRight" bigint, label text)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;

COMMENT ON FUNCTION parca_icicle_diff(profile, integer, double precision) IS
    'the call tree of a diff, base side in value/self and compared side in valueRight/selfRight (Grafana''s diff flame graph)';

CREATE OR REPLACE FUNCTION parca_profile_types(start timestamptz DEFAULT NULL, stop timestamptz DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE sql STABLE AS $$
    SELECT DISTINCT s.profile_type FROM parca.series s
    WHERE start IS NULL OR stop IS NULL
       OR s.id OPERATOR(pg_catalog.=) ANY (SELECT x.series_id FROM parca.samples x
                                          WHERE x.time OPERATOR(pg_catalog.>=) start
                                            AND x.time OPERATOR(pg_catalog.<=) stop)
    ORDER BY 1
$$;

CREATE OR REPLACE FUNCTION parca_labels(selector text DEFAULT '{}', start timestamptz DEFAULT NULL,
                             stop timestamptz DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE sql STABLE AS $$
    SELECT DISTINCT k FROM @extschema@.parca_series(coalesce(selector, '{}')) s,
                           pg_catalog.jsonb_object_keys(s.labels) k
    WHERE start IS NULL OR stop IS NULL
       OR s.id OPERATOR(pg_catalog.=) ANY (SELECT x.series_id FROM parca.samples x
                                          WHERE x.time OPERATOR(pg_catalog.>=) start
                                            AND x.time OPERATOR(pg_catalog.<=) stop)
    ORDER BY 1
$$;

CREATE OR REPLACE FUNCTION parca_label_values(label text, selector text DEFAULT '{}',
                                   start timestamptz DEFAULT NULL, stop timestamptz DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE sql STABLE AS $$
    SELECT DISTINCT s.labels OPERATOR(pg_catalog.->>) label
    FROM @extschema@.parca_series(coalesce(selector, '{}')) s
    WHERE s.labels OPERATOR(pg_catalog.?) label
      AND (start IS NULL OR stop IS NULL
           OR s.id OPERATOR(pg_catalog.=) ANY (SELECT x.series_id FROM parca.samples x
                                              WHERE x.time OPERATOR(pg_catalog.>=) start
                                                AND x.time OPERATOR(pg_catalog.<=) stop))
    ORDER BY 1
$$;

CREATE OR REPLACE FUNCTION parca_labels_text(labels jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT '{' OPERATOR(pg_catalog.||)
           coalesce(pg_catalog.string_agg(pg_catalog.format('%s=%s', key, pg_catalog.to_jsonb(value)),
                                          ', ' ORDER BY key), '')
           OPERATOR(pg_catalog.||) '}'
    FROM pg_catalog.jsonb_each_text(labels)
$$;

CREATE FUNCTION parca_selector(profile_type text, label text DEFAULT NULL,
                               label_values text[] DEFAULT NULL, matchers text DEFAULT '')
    RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE
        WHEN coalesce(profile_type, '') = '' THEN NULL
        WHEN coalesce(label, '') <> '' AND cardinality(label_values) = 0 THEN NULL
        ELSE profile_type || '{' || concat_ws(', ',
            CASE WHEN coalesce(label, '') <> '' AND label_values IS NOT NULL
                      AND array_position(label_values, NULL) IS NULL
                 THEN label || CASE WHEN cardinality(label_values) = 1 THEN '="' ELSE '=~"' END
                      || replace(replace(
                             CASE WHEN cardinality(label_values) = 1 THEN label_values[1]
                                  ELSE (SELECT string_agg(regexp_replace(v, '([^[:alnum:]_])', E'\\\\\\1', 'g'), '|')
                                        FROM unnest(label_values) AS v) END,
                             E'\\', E'\\\\'), '"', E'\\"')
                      || '"'
            END,
            nullif(btrim(matchers, E' \t\n\r,'), '')) || '}'
    END
$$;

COMMENT ON FUNCTION parca_selector(text, text, text[], text) IS
    'a selector from a profile type, one label with a list of values and more matchers, each value quoted';
