-- Pull mode: what the scrape worker (src/scrape/) scrapes.
--
-- Configuration lives in three tables, in the spirit of Parca's
-- scrape_configs: jobs, their static targets, and per-job profile
-- endpoints.  A commit that changes any of them wakes the worker, which
-- reloads without a restart.  Only superusers and members of the role
-- parca_scrape may change them: every row makes the server open HTTP
-- connections (docs/scrape.md).

-- The worker itself stores profiles as parca_scrape_worker (NOLOGIN),
-- which has just the rights it needs: read the configuration, write
-- profiles (grants at the end).
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

-- A target's address: host:port (or host), nothing that changes the URL.
CREATE DOMAIN parca.scrape_address AS text
    CHECK (VALUE ~ '^[^/?#@[:space:][:cntrl:]]+$');

-- Prometheus label names; names starting with "__" are reserved.  (This
-- and the next run for every row of the configuration tables and of a
-- file_sd file: their names are qualified rather than SET, which costs a
-- seventh of the call.)
CREATE FUNCTION parca.scrape_labels_valid(labels jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT
AS $$
    SELECT pg_catalog.jsonb_typeof(labels) OPERATOR(pg_catalog.=) 'object'
       AND NOT EXISTS (
           SELECT FROM pg_catalog.jsonb_each(labels) AS l(key, value)
            WHERE l.key OPERATOR(pg_catalog.!~) '^[a-zA-Z_][a-zA-Z0-9_]*$'
               OR l.key OPERATOR(pg_catalog.~~) '\_\_%'
               OR pg_catalog.jsonb_typeof(l.value) OPERATOR(pg_catalog.<>) 'string')
$$;

-- Extra URL parameters: {"name": "value"} or {"name": ["v1", "v2"]}.
CREATE FUNCTION parca.scrape_params_valid(params jsonb) RETURNS boolean
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

CREATE TABLE parca.scrape_jobs (
    job_name        text PRIMARY KEY CHECK (job_name ~ '^[^[:space:][:cntrl:]]+$'),
    enabled         boolean NOT NULL DEFAULT true,
    scrape_interval interval NOT NULL DEFAULT '10 s'
                    CHECK (scrape_interval >= '1 s' AND scrape_interval <= '1 day'),
    scrape_timeout  interval             -- NULL: scrape_interval + 3 s
                    CHECK (scrape_timeout > '0' AND scrape_timeout <= '1 day'),
    scheme          text NOT NULL DEFAULT 'http' CHECK (scheme IN ('http', 'https')),
    path_prefix     text NOT NULL DEFAULT ''
                    CHECK (path_prefix ~ '^(/[^?#[:space:][:cntrl:]]*)?$'),
    params          jsonb NOT NULL DEFAULT '{}' CHECK (parca.scrape_params_valid(params)),
    file_sd_files   text[] NOT NULL DEFAULT '{}'   -- Prometheus file_sd JSON files (globs allowed)
);
COMMENT ON TABLE parca.scrape_jobs IS 'scrape jobs of the parca scrape worker, one per Parca scrape_configs entry';

CREATE TABLE parca.scrape_targets (
    job_name text NOT NULL REFERENCES parca.scrape_jobs ON UPDATE CASCADE ON DELETE CASCADE,
    address  parca.scrape_address NOT NULL,    -- host:port
    labels   jsonb NOT NULL DEFAULT '{}' CHECK (parca.scrape_labels_valid(labels)),
    PRIMARY KEY (job_name, address)
);
COMMENT ON TABLE parca.scrape_targets IS 'static targets of the scrape jobs (static_configs)';

CREATE TABLE parca.scrape_profiles (
    job_name text NOT NULL REFERENCES parca.scrape_jobs ON UPDATE CASCADE ON DELETE CASCADE,
    name     text NOT NULL CHECK (name ~ '^[a-zA-Z_][a-zA-Z0-9_]*$'),
    enabled  boolean NOT NULL DEFAULT true,
    path     text NOT NULL CHECK (path ~ '^/[^?#[:space:][:cntrl:]]*$'),
    delta    boolean NOT NULL DEFAULT false,  -- add seconds=<interval>: the endpoint samples for one interval
    PRIMARY KEY (job_name, name)
);
COMMENT ON TABLE parca.scrape_profiles IS 'profile endpoints of the scrape jobs (profiling_config.pprof_config)';

-- Parca's five default profiles, given to every new job.
CREATE FUNCTION parca.scrape_default_profiles()
RETURNS TABLE (name text, path text, delta boolean)
LANGUAGE sql IMMUTABLE
AS $$
    VALUES ('memory',      '/debug/pprof/allocs',    false),
           ('block',       '/debug/pprof/block',     false),
           ('goroutine',   '/debug/pprof/goroutine', false),
           ('mutex',       '/debug/pprof/mutex',     false),
           ('process_cpu', '/debug/pprof/profile',   true)
$$;

CREATE FUNCTION parca.scrape_jobs_add_profiles() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO parca.scrape_profiles (job_name, name, path, delta)
    SELECT NEW.job_name, d.name, d.path, d.delta FROM parca.scrape_default_profiles() d
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
CREATE TRIGGER scrape_jobs_add_profiles AFTER INSERT ON parca.scrape_jobs
    FOR EACH ROW EXECUTE FUNCTION parca.scrape_jobs_add_profiles();

-- Inserting a profile that the job has (one of the defaults, say) sets it
-- instead: INSERT configures a profile whether it exists or not, and a
-- restored dump's rows replace the defaults its jobs were given.
CREATE FUNCTION parca.scrape_profiles_upsert() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE parca.scrape_profiles
       SET enabled = NEW.enabled, path = NEW.path, delta = NEW.delta
     WHERE job_name = NEW.job_name AND name = NEW.name;
    IF FOUND THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER scrape_profiles_upsert BEFORE INSERT ON parca.scrape_profiles
    FOR EACH ROW EXECUTE FUNCTION parca.scrape_profiles_upsert();

-- A delta profile samples for one interval, so its scrape needs longer.
CREATE FUNCTION parca.scrape_check_timeout() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    bad record;
BEGIN
    SELECT j.job_name, p.name, j.scrape_interval,
           coalesce(j.scrape_timeout, j.scrape_interval + interval '3 s') AS timeout
      INTO bad
      FROM parca.scrape_jobs j JOIN parca.scrape_profiles p USING (job_name)
     WHERE p.enabled AND p.delta
       AND coalesce(j.scrape_timeout, j.scrape_interval + interval '3 s') <= j.scrape_interval
       AND j.job_name = NEW.job_name
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'scrape_timeout % of job % must exceed its scrape_interval % for delta profile %',
            bad.timeout, parca.message_quote(bad.job_name), bad.scrape_interval, parca.message_quote(bad.name)
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER scrape_jobs_check_timeout AFTER INSERT OR UPDATE ON parca.scrape_jobs
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION parca.scrape_check_timeout();
CREATE CONSTRAINT TRIGGER scrape_profiles_check_timeout AFTER INSERT OR UPDATE ON parca.scrape_profiles
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION parca.scrape_check_timeout();

-- file_sd makes the server read files: as for COPY FROM a file, only
-- superusers and members of pg_read_server_files may name them.
CREATE FUNCTION parca.scrape_check_file_sd() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.file_sd_files <> '{}'
       AND (TG_OP = 'INSERT' OR NEW.file_sd_files IS DISTINCT FROM OLD.file_sd_files)
       AND NOT pg_has_role(current_user, 'pg_read_server_files', 'USAGE') THEN
        RAISE EXCEPTION 'permission denied to set file_sd_files of scrape job %', parca.message_quote(NEW.job_name)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Only superusers and members of pg_read_server_files may make the server read files.';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER scrape_jobs_check_file_sd BEFORE INSERT OR UPDATE ON parca.scrape_jobs
    FOR EACH ROW EXECUTE FUNCTION parca.scrape_check_file_sd();

-- Percent-encoding of a URL query component (RFC 3986 unreserved kept),
-- of the text's UTF-8 bytes.
CREATE FUNCTION parca.scrape_url_encode(s text) RETURNS text
AS 'MODULE_PATHNAME', 'parca_scrape_url_encode' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- The targets of a Prometheus file_sd document: a JSON array of
-- {"targets": ["host:port", ...], "labels": {...}}.  Labels starting with
-- "__" (Prometheus meta labels, meant for relabeling) are dropped.
CREATE FUNCTION parca.scrape_file_sd_targets(content text, OUT address text, OUT labels jsonb)
RETURNS SETOF record
LANGUAGE plpgsql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    doc jsonb;
    grp jsonb;
    target jsonb;
    detail text;
BEGIN
    BEGIN
        doc := content::jsonb;
    EXCEPTION WHEN invalid_text_representation THEN
        -- the parser's detail quotes the bad token, which may be the whole file
        GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
        RAISE EXCEPTION 'file_sd: not JSON: %', parca.message_quote(detail)
            USING ERRCODE = 'invalid_parameter_value';
    END;
    IF jsonb_typeof(doc) <> 'array' THEN
        RAISE EXCEPTION 'file_sd: expected a JSON array of {"targets": [...], "labels": {...}}'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR grp IN SELECT value FROM jsonb_array_elements(doc) LOOP
        IF jsonb_typeof(grp) <> 'object' OR jsonb_typeof(grp->'targets') IS DISTINCT FROM 'array' THEN
            RAISE EXCEPTION 'file_sd: each group needs a "targets" array'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF grp ? 'labels' AND jsonb_typeof(grp->'labels') <> 'object' THEN
            RAISE EXCEPTION 'file_sd: "labels" must be an object'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        SELECT coalesce(jsonb_object_agg(key, value), '{}') INTO labels
          FROM jsonb_each(coalesce(grp->'labels', '{}')) WHERE key NOT LIKE '\_\_%';
        IF NOT parca.scrape_labels_valid(labels) THEN
            RAISE EXCEPTION 'file_sd: invalid labels %', parca.message_quote(labels::text)
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        FOR target IN SELECT value FROM jsonb_array_elements(grp->'targets') LOOP
            IF jsonb_typeof(target) <> 'string' THEN
                RAISE EXCEPTION 'file_sd: target % is not a string', parca.message_quote(target::text)
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            address := (target #>> '{}')::parca.scrape_address;
            RETURN NEXT;
        END LOOP;
    END LOOP;
END
$$;

-- Every enabled profile endpoint of every enabled job: its URL, the labels
-- of its series and its timing.  file_sd holds the targets the worker read
-- from file_sd files: {"job": [{"address": ..., "labels": {...}}, ...]}.
CREATE FUNCTION parca.scrape_endpoints(file_sd jsonb DEFAULT '{}')
RETURNS TABLE (job_name text, url text, labels jsonb, profile text,
               interval_ms bigint, timeout_ms bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH targets AS (
        SELECT t.job_name, t.address::text AS address, t.labels FROM parca.scrape_targets t
        UNION ALL
        SELECT f.key, e->>'address', e->'labels'
          FROM jsonb_each(file_sd) f, jsonb_array_elements(f.value) e
    )
    SELECT j.job_name,
           j.scheme || '://' || t.address || j.path_prefix || p.path || coalesce('?' || q.query, ''),
           jsonb_build_object('job', j.job_name, 'instance', t.address)
               || t.labels || jsonb_build_object('__name__', p.name),
           p.name,
           (extract(epoch FROM j.scrape_interval) * 1000)::bigint,
           (extract(epoch FROM coalesce(j.scrape_timeout, j.scrape_interval + interval '3 s')) * 1000)::bigint
      FROM parca.scrape_jobs j
      JOIN targets t USING (job_name)
      JOIN parca.scrape_profiles p USING (job_name)
      CROSS JOIN LATERAL (
          SELECT string_agg(parca.scrape_url_encode(k) || '=' || parca.scrape_url_encode(v), '&'
                            ORDER BY k, n) AS query
            FROM (SELECT e.key, x.value, x.n
                    FROM jsonb_each(j.params) e,
                         jsonb_array_elements_text(CASE jsonb_typeof(e.value)
                                                        WHEN 'array' THEN e.value
                                                        ELSE jsonb_build_array(e.value) END)
                             WITH ORDINALITY AS x(value, n)
                  UNION ALL
                  SELECT 'seconds', floor(extract(epoch FROM j.scrape_interval))::bigint::text, 1
                   WHERE p.delta AND NOT j.params ? 'seconds') AS kv(k, v, n)
      ) q
     WHERE j.enabled AND p.enabled
     ORDER BY 1, 2, 3
$$;

-- Any committed change wakes the worker (src/scrape/state.c).
CREATE FUNCTION parca.scrape_config_changed() RETURNS trigger
AS 'MODULE_PATHNAME', 'parca_scrape_config_changed' LANGUAGE C;
CREATE TRIGGER scrape_jobs_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON parca.scrape_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION parca.scrape_config_changed();
CREATE TRIGGER scrape_targets_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON parca.scrape_targets
    FOR EACH STATEMENT EXECUTE FUNCTION parca.scrape_config_changed();
CREATE TRIGGER scrape_profiles_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON parca.scrape_profiles
    FOR EACH STATEMENT EXECUTE FUNCTION parca.scrape_config_changed();

-- Import the scrape_configs of a Parca configuration file (YAML text).
-- Returns the names of the jobs it created; with replace, jobs of the same
-- name are replaced, otherwise they are an error.
CREATE FUNCTION parca_scrape_import_yaml(config text, replace boolean DEFAULT false)
RETURNS SETOF text
AS 'MODULE_PATHNAME', 'parca_scrape_import_yaml' LANGUAGE C STRICT;

-- What the worker scrapes now, and how the last scrape went.
CREATE FUNCTION parca.scrape_target_states(
    OUT job text, OUT url text, OUT labels jsonb, OUT health text,
    OUT last_scrape timestamptz, OUT last_duration interval, OUT last_error text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'parca_scrape_target_states' LANGUAGE C STRICT;

CREATE VIEW parca.targets AS
    SELECT job, url, labels, health, last_scrape, last_duration, last_error
      FROM parca.scrape_target_states();
COMMENT ON VIEW parca.targets IS 'scrape targets of the parca worker and their health, like Parca''s Targets page';

-- pg_dump keeps the configuration.
SELECT pg_catalog.pg_extension_config_dump('parca.scrape_jobs', '');
SELECT pg_catalog.pg_extension_config_dump('parca.scrape_targets', '');
SELECT pg_catalog.pg_extension_config_dump('parca.scrape_profiles', '');

REVOKE ALL ON parca.scrape_jobs, parca.scrape_targets, parca.scrape_profiles, parca.targets FROM PUBLIC;
REVOKE ALL ON FUNCTION parca.scrape_target_states() FROM PUBLIC;
REVOKE ALL ON FUNCTION parca.scrape_endpoints(jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION parca_scrape_import_yaml(text, boolean) FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON parca.scrape_jobs, parca.scrape_targets, parca.scrape_profiles
    TO parca_scrape;
GRANT SELECT ON parca.targets TO parca_scrape;
GRANT EXECUTE ON FUNCTION parca.scrape_target_states() TO parca_scrape;
GRANT EXECUTE ON FUNCTION parca.scrape_endpoints(jsonb) TO parca_scrape;
GRANT EXECUTE ON FUNCTION parca_scrape_import_yaml(text, boolean) TO parca_scrape;
GRANT USAGE ON SCHEMA parca TO parca_scrape;

-- What the worker does as parca_scrape_worker: load the configuration and
-- parca_ingest_pprof (the metastore's INSERT ... ON CONFLICT (id) reads
-- the ids; a location that gains lines is updated).
GRANT USAGE ON SCHEMA parca TO parca_scrape_worker;
GRANT SELECT ON parca.scrape_jobs, parca.scrape_targets, parca.scrape_profiles TO parca_scrape_worker;
GRANT EXECUTE ON FUNCTION parca.scrape_endpoints(jsonb) TO parca_scrape_worker;
GRANT INSERT ON parca.samples TO parca_scrape_worker;
GRANT SELECT, INSERT ON parca.series TO parca_scrape_worker;
GRANT INSERT, SELECT (id) ON parca.mappings, parca.functions TO parca_scrape_worker;
GRANT INSERT, SELECT (id, function_ids), UPDATE (function_ids, line_numbers) ON parca.locations
    TO parca_scrape_worker;
