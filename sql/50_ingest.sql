-- Ingestion.
CREATE FUNCTION parca_ingest_pprof(data bytea, name text, labels jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE
    -- its statements are short: compiling them costs more than it saves
    SET jit = off;
COMMENT ON FUNCTION parca_ingest_pprof(bytea, text, jsonb) IS
    'store one pprof profile (gzipped or not); returns the number of sample rows written';

CREATE FUNCTION parca_series_id(profile_type text, labels jsonb) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION parca_series_id(text, jsonb) IS
    'the id of the series of this profile type and label set, created if new';
