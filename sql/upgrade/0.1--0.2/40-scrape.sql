-- The scrape worker runs as its own role, parca_scrape_worker; names qualified.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'parca_scrape') THEN
        CREATE ROLE parca_scrape NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'parca_scrape_worker') THEN
        CREATE ROLE parca_scrape_worker NOLOGIN;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION parca.scrape_labels_valid(labels jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT
AS $$
    SELECT pg_catalog.jsonb_typeof(labels) OPERATOR(pg_catalog.=) 'object'
       AND NOT EXISTS (
           SELECT FROM pg_catalog.jsonb_each(labels) AS l(key, value)
            WHERE l.key OPERATOR(pg_catalog.!~) '^[a-zA-Z_][a-zA-Z0-9_]*$'
               OR l.key OPERATOR(pg_catalog.~~) '\_\_%'
               OR pg_catalog.jsonb_typeof(l.value) OPERATOR(pg_catalog.<>) 'string')
$$;

CREATE OR REPLACE FUNCTION parca.scrape_params_valid(params jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT
AS $$
    SELECT pg_catalog.jsonb_typeof(params) OPERATOR(pg_catalog.=) 'object'
       AND NOT EXISTS (
           SELECT FROM pg_catalog.jsonb_each(params) AS p(key, value)
            WHERE p.key OPERATOR(pg_catalog.=) ''
               OR NOT (pg_catalog.jsonb_typeof(p.value) OPERATOR(pg_catalog.=) 'string'
                       OR (pg_catalog.jsonb_typeof(p.value) OPERATOR(pg_catalog.=) 'array'
                           AND NOT EXISTS (
                               SELECT FROM pg_catalog.jsonb_array_elements(p.value) AS v
                                WHERE pg_catalog.jsonb_typeof(v) OPERATOR(pg_catalog.<>) 'string'))))
$$;

-- now in C (src/scrape/)
CREATE OR REPLACE FUNCTION parca.scrape_url_encode(s text) RETURNS text
AS 'MODULE_PATHNAME', 'parca_scrape_url_encode' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

GRANT USAGE ON SCHEMA parca TO parca_scrape_worker;
GRANT SELECT ON parca.scrape_jobs, parca.scrape_targets, parca.scrape_profiles TO parca_scrape_worker;
GRANT EXECUTE ON FUNCTION parca.scrape_endpoints(jsonb) TO parca_scrape_worker;
GRANT INSERT ON parca.samples TO parca_scrape_worker;
GRANT SELECT, INSERT ON parca.series TO parca_scrape_worker;
GRANT INSERT, SELECT (id) ON parca.mappings, parca.functions TO parca_scrape_worker;
GRANT INSERT, SELECT (id, function_ids), UPDATE (function_ids, line_numbers) ON parca.locations
    TO parca_scrape_worker;
