-- The query functions that read parca.samples or its rollups run with
-- jit = off (see JIT in sql/70_query.sql); those that were inlined for it
-- pin their search_path now.  parca_profiles, parca_profile and
-- parca_function_range are made so in 70-views.sql.
ALTER FUNCTION parca_profile_types(timestamptz, timestamptz)
    SET search_path = pg_catalog, pg_temp SET jit = off;
ALTER FUNCTION parca_labels(text, timestamptz, timestamptz)
    SET search_path = pg_catalog, pg_temp SET jit = off;
ALTER FUNCTION parca_label_values(text, text, timestamptz, timestamptz)
    SET search_path = pg_catalog, pg_temp SET jit = off;
ALTER FUNCTION parca_query_range(text, timestamptz, timestamptz, interval, text[])
    SET search_path = pg_catalog, pg_temp SET jit = off;
ALTER FUNCTION parca_query_unit(text, timestamptz, timestamptz) SET jit = off;
