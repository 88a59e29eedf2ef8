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

-- The write protocol: how a writer that builds its own stacks (parca-agent)
-- stores metastore rows, with ids computed by src/common/ids.c, before it
-- COPYs samples naming them.  Each takes a batch as parallel arrays, stores
-- what is missing, in id order (concurrent writers then queue rather than
-- deadlock), through the code parca_ingest_pprof uses (src/metastore/metastore.c).
-- They run as their caller, who needs the rights parca_agent has.
CREATE FUNCTION parca_write_protocol() RETURNS integer
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION parca_write_protocol() IS
    'the version of the write protocol (parca_store_* and the ids) this server speaks';

CREATE FUNCTION parca_store_mappings(ids bigint[], build_ids text[], files text[])
    RETURNS void
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION parca_store_mappings(bigint[], text[], text[]) IS
    'store the mappings the metastore lacks, one per array position';

CREATE FUNCTION parca_store_functions(ids bigint[], names text[], system_names text[],
                                      filenames text[], start_lines bigint[])
    RETURNS void
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION parca_store_functions(bigint[], text[], text[], text[], bigint[]) IS
    'store the functions the metastore lacks, one per array position';

-- Location i has line_counts[i] lines, the next ones of function_ids and
-- line_numbers (innermost first); a NULL mapping id: none.
CREATE FUNCTION parca_store_locations(ids bigint[], mapping_ids bigint[], addresses bigint[],
                                      line_counts integer[], function_ids bigint[],
                                      line_numbers bigint[], is_folded boolean[] DEFAULT NULL)
    RETURNS void
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION parca_store_locations(bigint[], bigint[], bigint[], integer[], bigint[], bigint[], boolean[]) IS
    'store the locations the metastore lacks and add lines to stored ones that have none';
