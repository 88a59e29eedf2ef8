-- Functions whose bodies are parsed when they run get a fixed search_path
-- (docs/security.md); those whose bodies changed too are replaced below.
ALTER FUNCTION parca_columnar_set_options(regclass, integer, integer, integer)
    SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION parca_location(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION parca_frames(stacktrace) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION parca.scrape_jobs_add_profiles() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION parca.scrape_profiles_upsert() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION parca.scrape_check_timeout() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION parca.scrape_check_file_sd() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION parca.scrape_file_sd_targets(text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION parca.scrape_endpoints(jsonb) SET search_path = pg_catalog, pg_temp;

REVOKE ALL ON FUNCTION parca_columnar_compact(regclass), parca_columnar_check(regclass),
    parca_columnar_chunks(regclass) FROM PUBLIC;
