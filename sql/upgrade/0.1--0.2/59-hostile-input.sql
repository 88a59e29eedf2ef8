-- Hostile arguments (issue 25, items 7, 8, 9 and 11): messages quote at
-- most 64 characters of an argument (parca.message_quote), argument checks
-- of parca_query_range and parca_function_range (parca.range_arguments),
-- parca_selector in C.  (parca.rollup_level and parca_function_range come
-- with 54-rollups.sql and 70-views.sql, the row-level security with
-- 59-row-security.sql: links to their parts.)

CREATE FUNCTION parca.message_quote(text) RETURNS text
    AS 'MODULE_PATHNAME', 'parca_message_quote' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION parca_columnar_set_options(
    tbl regclass,
    compression_level integer DEFAULT NULL,
    stripe_rows integer DEFAULT NULL,
    chunk_group_rows integer DEFAULT NULL,
    sort_by text[] DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    bad text;
BEGIN
    SELECT coalesce(parca.message_quote(n), 'NULL') INTO bad
    FROM unnest(parca_columnar_set_options.sort_by) AS u(n)
    WHERE NOT EXISTS (SELECT FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
                      WHERE a.attrelid = tbl AND a.attname = u.n AND a.attnum > 0
                        AND NOT a.attisdropped AND t.typbyval)
    LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'sort_by names %, which is no column of % of a pass-by-value type', bad, tbl
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Order stripes by columns such as bigint or timestamptz ones.';
    END IF;
    INSERT INTO parca.columnar_options AS o
        SELECT t.relid, parca_columnar_set_options.stripe_rows,
               parca_columnar_set_options.chunk_group_rows,
               parca_columnar_set_options.compression_level, parca_columnar_set_options.sort_by
        FROM (SELECT tbl UNION SELECT relid FROM pg_partition_tree(tbl)) AS t(relid)
    ON CONFLICT (relid) DO UPDATE SET
        stripe_rows = coalesce(EXCLUDED.stripe_rows, o.stripe_rows),
        chunk_group_rows = coalesce(EXCLUDED.chunk_group_rows, o.chunk_group_rows),
        compression_level = coalesce(EXCLUDED.compression_level, o.compression_level),
        sort_by = coalesce(EXCLUDED.sort_by, o.sort_by);
END
$$;

CREATE FUNCTION parca.range_arguments(step interval, sum_by text[]) RETURNS text[]
    AS 'MODULE_PATHNAME', 'parca_range_arguments' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE OR REPLACE FUNCTION parca_query_range(selector text, start timestamptz, stop timestamptz,
                                  step interval, sum_by text[] DEFAULT NULL)
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

CREATE OR REPLACE FUNCTION parca_selector(profile_type text, label text DEFAULT NULL,
                               label_values text[] DEFAULT NULL, matchers text DEFAULT '')
    RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE OR REPLACE FUNCTION parca.scrape_check_timeout() RETURNS trigger
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

CREATE OR REPLACE FUNCTION parca.scrape_check_file_sd() RETURNS trigger
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

CREATE OR REPLACE FUNCTION parca.scrape_file_sd_targets(content text, OUT address text, OUT labels jsonb)
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
